"""The Unicode-table sweep (``verify unicode``): every code point through the
reference and each candidate, the mismatching ones listed as inclusive ranges.

An engine whose character tables (letter / number / whitespace classes of its
pre-tokenizer regex, case folding, ...) come from a different Unicode version
than the reference's tokenizes some code points differently. The sweep encodes
probe texts (``unicode_contexts.CONTEXTS``) for every code point (all of
U+0000..U+10FFFF except the surrogates) with every engine, lists the code points
whose probes encode differently, and has ``unicode_attribution`` name the
Unicode version whose table changes best explain them (whitespace-like code
points apart). The engines are executors (``verify.executors.base``): an engine
that raises, crashes or hangs yields a ``Failure`` for the samples concerned,
and a failure on either side is never agreement -- such code points are listed
as mismatching *and* under ``errors``.

Speed: probes are packed, ``pack`` code points (all their contexts) per sample,
joined by ``SEP``; packs whose encodings agree are taken to agree probe by probe.
Packs that differ are re-encoded code point by code point (its probes joined by
``SEP``), and the code points that differ then probe by probe, to name the
contexts that differ (``joined`` when only the joined probes differ). A pack
that differs while none of its code points do lists its code points under
``pack_only`` rather than ``mismatched``.
``pack=1`` encodes every code point's probes separately (slower, same results
on the engines measured; see bench/bench_unicode_sweep.py). Every batch goes to
all engines at once (``submit`` then ``collect``), so isolated workers overlap.

Limits: a class difference is only visible where it changes the token ids. In a
byte-level BPE, splitting "a" + X into two pre-tokens only changes the output if
the vocabulary has a merge across that boundary, so for rare characters many
class differences are invisible -- and then they do not matter for that
vocabulary either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from verify.adversarial import unicode_data as ud
from verify.adversarial.unicode_attribution import declared_version, explain
from verify.adversarial.unicode_contexts import CONTEXTS, MAX_CP, SEP, Context, code_points
from verify.executors.base import Executor
from verify.outcome import Failure, Outcome, agree
from verify.sample import Sample


@dataclass
class SweepResult:
    reference: str
    candidate: str
    mismatched: list[list[int]]
    count: int
    unicode_version: str | None
    reference_unicode_version: str | None
    version_basis: str
    explained: float
    whitespace: list[list[int]]
    unexplained: list[list[int]]
    errors: list[list[int]]
    pack_only: list[list[int]]
    by_context: dict[str, int]
    contexts_of: dict[int, list[str]] = field(repr=False, default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    tied_versions: list[str] = field(default_factory=list)
    code_points: int = 0
    probes: int = 0
    seconds: float = 0.0
    scope: list[int] = field(default_factory=lambda: [0, MAX_CP])

    @property
    def ok(self) -> bool:
        return self.count == 0 and not self.pack_only

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "candidate": self.candidate,
            "count": self.count,
            "mismatched": self.mismatched,
            "unicode_version": self.unicode_version,
            "reference_unicode_version": self.reference_unicode_version,
            "version_basis": self.version_basis,
            "tied_versions": self.tied_versions,
            "explained": round(self.explained, 4),
            "whitespace": self.whitespace,
            "unexplained": self.unexplained,
            "errors": self.errors,
            "pack_only": self.pack_only,
            "by_context": self.by_context,
            "scores": self.scores,
            "code_points": self.code_points,
            "probes": self.probes,
            "seconds": round(self.seconds, 3),
            "scope": self.scope,
        }


def _failed(x: Outcome) -> bool:
    return isinstance(x, Failure)


def encode_all(executors: Sequence[Executor], texts: Sequence[str], label: str,
               parallel: bool = True) -> list[list[Outcome]]:
    """One outcome list per executor (in order) for ``texts``. ``parallel``: submit to
    every executor before collecting any, so engines in their own workers overlap.
    An executor listed twice (the reference as a candidate) encodes once."""
    samples = [Sample.plain(f"{label}#{i}", t) for i, t in enumerate(texts)]
    distinct = list({id(e): e for e in executors}.values())
    if parallel:
        for e in distinct:
            e.submit(samples)
        got = {id(e): e.collect() for e in distinct}
    else:
        got = {id(e): e.encode(samples) for e in distinct}
    return [got[id(e)] for e in executors]


def sweep(reference: Executor, candidate: Executor, *, batch_size: int = 4096, pack: int = 12, start: int = 0,
          stop: int = MAX_CP + 1, contexts: Sequence[Context] = CONTEXTS, parallel: bool = True,
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Sweep every code point in ``[start, stop)`` (surrogates excluded) through both executors."""
    return sweep_many(reference, [candidate], batch_size=batch_size, pack=pack, start=start, stop=stop,
                      contexts=contexts, parallel=parallel, progress=progress)[0]


def sweep_many(reference: Executor, candidates: Sequence[Executor], *, batch_size: int = 4096, pack: int = 12,
               start: int = 0, stop: int = MAX_CP + 1, contexts: Sequence[Context] = CONTEXTS,
               parallel: bool = True, progress: Callable[[int, int], None] | None = None) -> list[SweepResult]:
    """Like ``sweep`` for several candidates; the reference encodes each pack once.

    batch_size: code points per engine call; pack: code points per packed sample
    (1 = every code point's probes encoded on their own); parallel: hand each
    batch to every executor before collecting (isolated workers then overlap)."""
    t0 = time.perf_counter()
    cands = list(candidates)
    if not cands:
        return []
    pack = max(1, int(pack))
    batch_size = max(pack, int(batch_size) // pack * pack)
    templates = [c.template for c in contexts]
    n_ctx = len(templates)
    cps_all = code_points(start, stop)
    total = int(cps_all.size)

    bad: list[dict[int, set[str]]] = [{} for _ in cands]  # cp -> contexts that differ
    errors: list[set[int]] = [set() for _ in cands]
    pack_only: list[set[int]] = [set() for _ in cands]

    def encode(texts: list[str], label: str, which: Sequence[int] | None = None) -> list[list[Outcome]]:
        engines = [reference] + [cands[i] for i in (which if which is not None else range(len(cands)))]
        return encode_all(engines, texts, label, parallel)

    done = 0
    for b0 in range(0, total, batch_size):
        batch = cps_all[b0:b0 + batch_size].tolist()
        chars = [chr(c) for c in batch]
        probes = [t.replace("{c}", ch) for ch in chars for t in templates]
        step = pack * n_ctx
        packs = [SEP.join(probes[i:i + step]) for i in range(0, len(probes), step)]
        outs = encode(packs, f"U+{batch[0]:04X}")
        ref_out = outs[0]
        for ci, cand_out in enumerate(outs[1:]):
            diff = [p for p in range(len(packs)) if not agree(ref_out[p], cand_out[p])]
            if diff:
                _localise(ci, diff, batch, probes, pack, n_ctx, contexts, encode,
                          bad[ci], errors[ci], pack_only[ci])
        done += len(batch)
        if progress:
            progress(done, total)

    seconds = time.perf_counter() - t0
    scope = [int(start), int(min(stop, MAX_CP + 1)) - 1]
    return [_result(reference, cand, bad[ci], errors[ci], pack_only[ci], contexts, total, total * n_ctx,
                    seconds, scope) for ci, cand in enumerate(cands)]


def _localise(ci, diff, batch, probes, pack, n_ctx, contexts, encode, bad, errors, pack_only):
    """Narrow differing packs down: first each code point's joined probes, then,
    for the code points that differ, each probe alone (both engines)."""
    cps_idx = [j for p in diff for j in range(p * pack, min((p + 1) * pack, len(batch)))]
    texts = [SEP.join(probes[j * n_ctx:(j + 1) * n_ctx]) for j in cps_idx]
    ref_o, cand_o = encode(texts, f"U+{batch[cps_idx[0]]:04X}/cp", [ci])
    hit = [j for j, a, b in zip(cps_idx, ref_o, cand_o) if not agree(a, b)]
    for j, a, b in zip(cps_idx, ref_o, cand_o):
        if _failed(a) or _failed(b):
            errors.add(batch[j])
    hit_packs = {j // pack for j in hit}
    for p in diff:
        if p not in hit_packs:  # the pack differs, none of its code points' probes do
            pack_only.update(batch[p * pack:(p + 1) * pack])
    if not hit:
        return
    idx = [j * n_ctx + k for j in hit for k in range(n_ctx)]
    ref_o, cand_o = encode([probes[i] for i in idx], f"U+{batch[hit[0]]:04X}/probe", [ci])
    for i, a, b in zip(idx, ref_o, cand_o):
        if not agree(a, b):
            bad.setdefault(batch[i // n_ctx], set()).add(contexts[i % n_ctx].name)
            if _failed(a) or _failed(b):
                errors.add(batch[i // n_ctx])
    for j in hit:  # differs only when its probes are joined
        if batch[j] not in bad:
            bad[batch[j]] = {"joined"}


def _result(ref: Executor, cand: Executor, bad, errors, pack_only, contexts, n_cp, n_probes, seconds,
            scope) -> SweepResult:
    m = np.asarray(sorted(bad), dtype=np.int64)
    by_context: dict[str, int] = {}
    for ctxs in bad.values():
        for c in ctxs:
            by_context[c] = by_context.get(c, 0) + 1
    order = {c.name: i for i, c in enumerate(contexts)}
    return SweepResult(
        reference=ref.spec,
        candidate=cand.spec,
        mismatched=ud.to_ranges(m),
        count=int(m.size),
        errors=ud.to_ranges(sorted(errors)),
        pack_only=ud.to_ranges(sorted(pack_only)),
        by_context=dict(sorted(by_context.items(), key=lambda kv: order.get(kv[0], 99))),
        contexts_of={cp: sorted(c, key=lambda x: order.get(x, 99)) for cp, c in bad.items()},
        code_points=n_cp,
        probes=n_probes,
        seconds=seconds,
        scope=scope,
        **explain(m, declared_version(ref), declared_version(cand), scope),
    )
