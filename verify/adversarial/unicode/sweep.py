"""The Unicode-table sweep (``verify unicode``): every code point through the
reference and each candidate, the mismatching ones listed as inclusive ranges.

An engine whose character tables (the letter / number / mark / whitespace classes
of its pre-tokenizer regex, case folding, ...) come from a different Unicode
version than the reference's tokenizes some code points differently -- but only
in contexts where the class change moves a pre-token boundary that changes the
ids. The probes (``probes``) are derived from the reference vocabulary's
own patterns and entries so that every class question is asked where it shows.
``attribution`` then names the Unicode version whose table changes
explain the mismatches (whitespace-like code points apart).

Packing. Probes are encoded many to a sample. With every engine honouring special
tokens, probes are joined by a special token of the vocabulary and encoded with
specials allowed: engines split at special tokens before pre-tokenising, so each
probe is encoded exactly as if alone, and each output splits back into one array
per probe at the separator's id -- per-probe comparison with no re-encoding. An
engine without special tokens gets each pack as one sample of many segments (each
encoded on its own, outputs concatenated); when its concatenation differs from the
reference's, the pack's probes are encoded one per sample to find which differ.
A pack that differs while none of its probes does lists its code points under
``pack_only``. A failure (error, crash, timeout) on either side is never
agreement: such code points are mismatching *and* listed under ``errors``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from verify.unicode_tables import tables as ud
from verify.adversarial.unicode.attribution import declared_version, explain
from verify.adversarial.unicode.contexts import MAX_CP, code_points
from verify.adversarial.unicode.probes import ProbeSet, probe_set
from verify.executors.base import Executor
from verify.outcome import Failure, agree, is_ids
from verify.sweep_result import SweepResult
from verify.engine_spec import PLUGIN_ADAPTERS, EngineSpec
from verify.sample import Sample

PACK_PROBES = 192  # probes per packed sample


def vocab_target(spec: EngineSpec | str) -> str | None:
    """The vocabulary an engine spec names (a known name or a file); None for plugins, and for an
    engine object handed in through the Python API (its name is no spec)."""
    if not isinstance(spec, EngineSpec):
        return None
    return None if spec.adapter in PLUGIN_ADAPTERS else spec.target


def _separator_id(executor: Executor, separator: str | None) -> int | None:
    """The single id an engine gives the separator with specials allowed, else None (no exact packing)."""
    if separator is None or not executor.capabilities.special_tokens:
        return None
    (out,) = executor.encode([Sample.from_segments("separator", [(separator, True)])])
    return int(out[0]) if is_ids(out) and out.size == 1 else None


class _Exact:
    """Probes joined by a special token, encoded with specials allowed: each probe is encoded
    exactly as if alone, and the output splits back per probe at the separator's ids."""

    name = "special-token separator"

    def __init__(self, separator: str, sep_ids: dict[int, int]):
        self.separator, self.sep_ids = separator, sep_ids  # id(executor) -> its separator id

    def pack(self, texts: list[str], label: str) -> Sample:
        return Sample.from_segments(label, [(self.separator.join(texts), True)])

    def split(self, executor: Executor, ids: np.ndarray, n: int) -> list[np.ndarray] | None:
        """One array per probe, or None when the separators are not where they must be."""
        cuts = np.flatnonzero(ids == self.sep_ids[id(executor)])
        if cuts.size != n - 1:
            return None
        pieces = np.split(ids, cuts)
        return pieces[:1] + [piece[1:] for piece in pieces[1:]]

    def alone(self, text: str, label: str) -> Sample:
        return Sample.plain(label, text)


class _Joined:
    """For engines without special tokens: probes framed by blank lines in one plain text.
    Newlines end every pre-token of these patterns and never prefix one, so each probe sees
    the same framing as when it is re-encoded alone (``FRAME + probe + FRAME``) to localise."""

    name = "newline-joined"
    FRAME = "\n\n"

    def pack(self, texts: list[str], label: str) -> Sample:
        return Sample.plain(label, self.FRAME + self.FRAME.join(texts) + self.FRAME)

    def split(self, executor: Executor, ids: np.ndarray, n: int) -> None:
        return None

    def alone(self, text: str, label: str) -> Sample:
        return Sample.plain(label, self.FRAME + text + self.FRAME)


def sweep(reference: Executor, candidate: Executor, **kw) -> SweepResult:
    """Sweep every code point in ``[start, stop)`` (surrogates excluded) through both executors."""
    return sweep_many(reference, [candidate], **kw)[0]


def sweep_many(reference: Executor, candidates: Sequence[Executor], *, probes: ProbeSet | None = None,
               start: int = 0, stop: int = MAX_CP + 1, cps: Sequence[int] | None = None, batch_size: int = 4096,
               pack: int = PACK_PROBES, packing: str = "auto",
               progress: Callable[[int, int], None] | None = None) -> list[SweepResult]:
    """Like ``sweep`` for several candidates; the reference encodes each pack once per packing.

    probes: the probe set (default: derived from the reference's vocabulary); cps: an
    explicit list of code points instead of ``[start, stop)``; batch_size: code points
    per engine call; pack: probes per packed sample; packing: ``auto`` (a special-token
    separator where the reference and a candidate both honour it, else newline-joined),
    ``special`` or ``joined``."""
    t0 = time.perf_counter()
    cands = list(candidates)
    if not cands:
        return []
    probes = probes or probe_set(vocab_target(reference.spec))
    all_cps = np.asarray(sorted(set(int(c) for c in cps)), dtype=np.int64) if cps is not None \
        else code_points(start, stop)
    scan = scan_range(reference, cands, all_cps, probes, batch_size=batch_size, pack=pack, packing=packing,
                      progress=progress)
    seconds = time.perf_counter() - t0
    scope = np.zeros(MAX_CP + 1, dtype=bool)
    scope[all_cps] = True
    return [build_result(reference.spec, cand.spec, st, probes, int(all_cps.size), scan.probes, seconds, scope,
                         scan.packing[i], declared_version(reference), declared_version(cand))
            for i, (cand, st) in enumerate(zip(cands, scan.states))]


@dataclass
class Scan:
    """What sweeping some code points gave, per candidate (``states``, in candidate order)."""

    states: list["CandidateState"]
    probes: int
    packing: list[str]  # per candidate: the packing name


def scan_range(reference: Executor, cands: Sequence[Executor], all_cps: np.ndarray, probes: ProbeSet, *,
               batch_size: int = 4096, pack: int = PACK_PROBES, packing: str = "auto",
               progress: Callable[[int, int], None] | None = None) -> Scan:
    """Every code point of ``all_cps`` in every probe context through the reference and each
    candidate: which (code point, context) pairs differ per candidate."""
    engines = [reference, *cands]
    modes = _modes(engines, probes.separator, packing)
    state = [CandidateState() for _ in cands]
    total, done, n_probes = int(all_cps.size), 0, 0
    starts = range(0, total, batch_size)
    # Pipelined: the next batch's probes are built while the engines encode this one.
    pending = _prepare(all_cps[:batch_size].tolist(), probes, modes, pack) if total else None
    if pending is not None:
        _submit(engines, pending, modes)
    for b0 in starts:
        current = pending
        nxt = all_cps[b0 + batch_size:b0 + 2 * batch_size].tolist()
        pending = _prepare(nxt, probes, modes, pack) if nxt else None
        got = _collect(engines, current, modes)
        _compare(current, got, engines, modes, state)
        if pending is not None:
            _submit(engines, pending, modes)
        n_probes += len(current.plan)
        done += len(current.cps)
        if progress:
            progress(done, total)
    return Scan(state, n_probes, [m.name for m in modes[1:]])


def _modes(engines: list[Executor], separator: str | None, packing: str) -> list:
    """The packing of each candidate (index 0, the reference, gets the first candidate's):
    exact where the reference and the candidate both encode the separator as one id."""
    sep_ref = _separator_id(engines[0], separator) if packing in ("auto", "special") else None
    if packing == "special" and sep_ref is None:
        raise ValueError("the reference cannot pack probes with a special-token separator")
    joined = _Joined()
    sep_ids = {id(engines[0]): sep_ref}
    modes = []
    for ex in engines[1:]:
        sep = _separator_id(ex, separator) if sep_ref is not None else None
        if sep is not None:
            sep_ids[id(ex)] = sep
        modes.append(None if sep is None else "exact")
    exact = _Exact(separator, sep_ids) if sep_ref is not None else None
    per_candidate = [exact if m == "exact" else joined for m in modes]
    return [per_candidate[0], *per_candidate]


@dataclass
class CandidateState:
    """Per candidate: the contexts each mismatching code point differed in, the code points
    a failure touched, those only a pack showed. Sweeps of disjoint ranges merge by union."""

    bad: dict[int, set[str]] = field(default_factory=dict)
    errors: set[int] = field(default_factory=set)
    pack_only: set[int] = field(default_factory=set)

    def mark(self, cp: int, context: str, failed: bool) -> None:
        self.bad.setdefault(cp, set()).add(context)
        if failed:
            self.errors.add(cp)

    def to_json(self) -> dict[str, Any]:
        return {"bad": [[cp, sorted(ctxs)] for cp, ctxs in sorted(self.bad.items())],
                "errors": ud.to_ranges(sorted(self.errors)), "pack_only": ud.to_ranges(sorted(self.pack_only))}

    def merge_json(self, doc: dict[str, Any]) -> None:
        for cp, ctxs in doc["bad"]:
            self.bad.setdefault(int(cp), set()).update(ctxs)
        for a, b in doc["errors"]:
            self.errors.update(range(a, b + 1))
        for a, b in doc["pack_only"]:
            self.pack_only.update(range(a, b + 1))


class _Plan:
    """The probes of a batch as parallel lists; ``plan[j]`` is (code point, context, text)."""

    def __init__(self, cps: list[int], names: list[str], texts: list[str]):
        self.cps, self.names, self.texts = cps, names, texts

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, j: int) -> tuple[int, str, str]:
        return self.cps[j], self.names[j], self.texts[j]


@dataclass
class _Batch:
    cps: list[int]
    plan: _Plan
    groups: list[range | list[int]]  # plan indices packed into each sample
    alone: list[int]  # plan indices that may hold a special-token literal: never joined
    packed: dict[int, list[Sample]]  # id(mode) -> the packs in that mode


def _prepare(cps: list[int], probes: ProbeSet, modes: list, pack: int) -> _Batch:
    plan = _Plan(*probes.batch(cps))
    checked = {cp for cp in cps if probes.may_hold_special(cp)}
    # A probe is joined to others unless it holds a special-token literal; only a code point
    # that is one of their characters can make one (neighbour texts never hold one).
    alone = [j for j, cp in enumerate(plan.cps) if cp in checked and not probes.joinable(plan.texts[j])] \
        if checked else []
    if alone:
        skip = set(alone)
        joinable = [j for j in range(len(plan)) if j not in skip]
        groups: list = [joinable[i:i + pack] for i in range(0, len(joinable), pack)]
        texts_of = [[plan.texts[j] for j in g] for g in groups]
    else:
        groups = [range(i, min(i + pack, len(plan))) for i in range(0, len(plan), pack)]
        texts_of = [plan.texts[g.start:g.stop] for g in groups]
    label = f"U+{cps[0]:04X}"
    distinct = {id(m): m for m in modes}
    packed = {key: [m.pack(texts, f"{label}/{n}") for n, texts in enumerate(texts_of)]
              for key, m in distinct.items()}
    return _Batch(cps, plan, groups, alone, packed)


def _submissions(engines, modes) -> list[tuple[Executor, list[int]]]:
    """Each distinct executor once, with the modes it encodes: the reference every candidate's."""
    first: dict[int, tuple[Executor, list[int]]] = {}
    for i, (ex, mode) in enumerate(zip(engines, modes)):
        wanted = [id(m) for m in modes[1:]] if i == 0 else [id(mode)]
        entry = first.setdefault(id(ex), (ex, []))
        entry[1].extend(k for k in dict.fromkeys(wanted) if k not in entry[1])
    return list(first.values())


def _submit(engines, batch: _Batch, modes) -> None:
    for ex, keys in _submissions(engines, modes):
        ex.submit([s for k in keys for s in batch.packed[k]])


def _collect(engines, batch: _Batch, modes) -> dict[tuple[int, int], list]:
    """(id(executor), id(mode)) -> outcomes of that mode's packs."""
    got: dict[tuple[int, int], list] = {}
    n = len(batch.groups)
    for ex, keys in _submissions(engines, modes):
        outs = ex.collect()
        for k_i, key in enumerate(keys):
            got[(id(ex), key)] = outs[k_i * n:(k_i + 1) * n]
    return got


def _compare(batch: _Batch, got, engines, modes, state) -> None:
    plan, groups, reference = batch.plan, batch.groups, engines[0]
    label = f"U+{batch.cps[0]:04X}"
    for ci, (cand, mode) in enumerate(zip(engines[1:], modes[1:])):
        ref_out, cand_out = got[(id(reference), id(mode))], got[(id(cand), id(mode))]
        suspects: list[list[int]] = []
        for g, a, b in zip(groups, ref_out, cand_out):
            if agree(a, b):
                continue
            if is_ids(a) and is_ids(b):
                pa, pb = mode.split(reference, a, len(g)), mode.split(cand, b, len(g))
                if pa is not None and pb is not None:
                    for j, x, y in zip(g, pa, pb):
                        if not agree(x, y):
                            state[ci].mark(plan[j][0], plan[j][1], False)
                    continue
            suspects.append(g)
        if batch.alone:
            suspects.append(batch.alone)
        if suspects:
            _one_by_one(plan, suspects, reference, cand, mode, state[ci], label)


def _one_by_one(plan, groups: list[list[int]], reference: Executor, candidate: Executor, mode,
                st: "CandidateState", label: str) -> None:
    """Each probe of the suspect groups as its own sample (in its mode's framing) on both
    engines: which differ. A packed group that differed while none of its probes does alone is
    ``pack_only``."""
    indices = [j for g in groups for j in g]
    samples = [mode.alone(plan[j][2], f"{label}/probe{j}") for j in indices]
    if candidate is reference:
        ref_o = cand_o = reference.encode(samples)
    else:
        reference.submit(samples)
        candidate.submit(samples)
        ref_o, cand_o = reference.collect(), candidate.collect()
    differing = set()
    for j, a, b in zip(indices, ref_o, cand_o):
        if not agree(a, b):
            st.mark(plan[j][0], plan[j][1], isinstance(a, Failure) or isinstance(b, Failure))
            differing.add(j)
    for g in groups:
        if not differing.intersection(g):
            st.pack_only.update(plan[j][0] for j in g)


def build_result(reference: str, candidate: str, st: CandidateState, probes: ProbeSet, n_cp: int, n_probes: int,
                 seconds: float, scope: np.ndarray, packing: str, reference_version: str | None,
                 candidate_version: str | None, normalization: tuple[str | None, str | None] = (None, None)
                 ) -> SweepResult:
    """The ``SweepResult`` of one candidate from its state over the swept ``scope`` (a mask):
    ranges, contexts, and the attribution of the mismatches to a Unicode version."""
    m = np.asarray(sorted(st.bad), dtype=np.int64)
    by_context: dict[str, int] = {}
    for ctxs in st.bad.values():
        for c in ctxs:
            by_context[c] = by_context.get(c, 0) + 1
    order = {c.name: i for i, c in enumerate(probes.context_list())}
    pack_only = sorted(st.pack_only - set(st.bad))
    swept = np.flatnonzero(scope)
    return SweepResult(
        reference=reference, candidate=candidate, mismatched=ud.to_ranges(m), count=int(m.size),
        errors=ud.to_ranges(sorted(st.errors)), pack_only=ud.to_ranges(pack_only),
        by_context=dict(sorted(by_context.items(), key=lambda kv: order.get(kv[0], 99))),
        contexts_of={cp: sorted(c, key=lambda x: order.get(x, 99)) for cp, c in st.bad.items()},
        code_points=n_cp, probes=n_probes, seconds=seconds,
        scope=[int(swept[0]), int(swept[-1])] if swept.size else [0, 0], packing=packing,
        probe_description=probes.describe(),
        **explain(m, reference_version, candidate_version, scope, normalization),
    )
