"""The Unicode-table sweep (``verify unicode``).

An engine whose character tables (letter / number / whitespace classes of its
pre-tokenizer regex, case folding, ...) come from a different Unicode version
than the reference's tokenizes some code points differently. The sweep encodes
probe texts for every code point (all of U+0000..U+10FFFF except the
surrogates) with both engines, lists the code points whose probes encode
differently as inclusive ranges, and names the Unicode version whose table
changes best explain them. Mismatches on whitespace-like code points (U+001C..
U+001F, U+0085, U+180E, U+200B, U+FEFF, U+2028/9, ...) are reported separately:
they are usually a different *definition* of whitespace, not a table version.

Speed: probes are packed, ``pack`` code points (all their contexts) per sample,
joined by ``SEP``; packs whose encodings agree are taken to agree probe by probe.
Packs that differ are re-encoded code point by code point (its probes joined by
``SEP``), and the code points that differ then probe by probe, to name the
contexts that differ (``joined`` when only the joined probes differ). A pack
that differs while none of its code points do lists its code points under
``pack_only`` rather than ``mismatched``.
``pack=1`` encodes every code point's probes separately (slower, same results
on the engines measured; see bench/bench_unicode_sweep.py).

Limits: a class difference is only visible where it changes the token ids. In a
byte-level BPE, splitting "a" + X into two pre-tokens only changes the output if
the vocabulary has a merge across that boundary, so for rare characters many
class differences are invisible -- and then they do not matter for that
vocabulary either.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from verify.adversarial import unicode_data as ud
from verify.sample import Sample

MAX_CP = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
SEP = "\n\n"


@dataclass(frozen=True)
class Context:
    name: str
    template: str  # "{c}" marks the code point
    why: str


# Each probe puts the code point where a GPT-style pre-tokenizer regex asks a
# different question about it (cl100k / o200k / llama3 / gpt2 patterns).
CONTEXTS: tuple[Context, ...] = (
    Context("alone", "{c}", "start and end of text: `\\s+(?!\\S)` at the end, the character's own merges"),
    Context("in-word", "a{c}b", "inside a lowercase letter run: is it in \\p{L} (or \\p{M} for o200k), Ll vs Lu runs"),
    Context("after-upper", "A{c}", "after an uppercase letter: o200k's [\\p{Lu}\\p{Lt}...]*[\\p{Ll}...]+ case runs"),
    Context("prefix", "{c}a", "as the optional one-character prefix of a letter run: [^\\r\\n\\p{L}\\p{N}]?\\p{L}+"),
    Context("in-number", "1{c}2", "inside a digit run: is it in \\p{N}; \\p{N}{1,3} chunking"),
    Context("spaced", " {c} ", "after the optional space ` ?` and before a space: the whitespace class, \\s+(?!\\S)"),
    Context("contraction", "'{c}a", "after an apostrophe: (?i:'s|'t|...) case folding (U+017F folds to s), apostrophe prefix"),
    Context("run", "{c}{c}{c}{c}", "a run of it: + quantifiers, \\p{N}{1,3} splitting four digits"),
    Context("after-newline", "\n{c}", "after a newline: the [\\r\\n] class, \\s*[\\r\\n]+, [^\\r\\n...] exclusions (U+0085, U+2028)"),
    Context("before-newline", "{c}\n\n", "before a newline: punctuation runs absorb trailing newlines "
            "([\\r\\n]* in cl100k, [\\r\\n/]* in o200k), letter runs do not"),
    Context("in-punct", ".{c}.", "between punctuation: membership of the ` ?[^\\s\\p{L}\\p{N}]+` run"),
    Context("space-before-letter", " {c}a", "space, then it, then a letter: whitespace-or-not decides whether "
            "the space joins it (` ?[^\\s...]`) or stays behind (`\\s+(?!\\S)`); U+180E lives here"),
    Context("spaces-before", "  {c}", "two spaces before it: the last-space-joins-the-next-word rule of `\\s+(?!\\S)`"),
)

# Code points that some engine or other counts as whitespace: Unicode
# White_Space, Python's str.isspace (adds U+001C..U+001F), characters that were
# Zs in older Unicode versions (U+180E until 6.3, U+200B in 3.x), U+FEFF
# (JavaScript \s), U+0085 (NEL; not \s in ASCII-minded engines).
WHITESPACE_LIKE: tuple[tuple[int, int], ...] = (
    (0x0009, 0x000D), (0x001C, 0x001F), (0x0020, 0x0020), (0x0085, 0x0085), (0x00A0, 0x00A0),
    (0x1680, 0x1680), (0x180E, 0x180E), (0x2000, 0x200B), (0x2028, 0x2029), (0x202F, 0x202F),
    (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)

_EPS_LOG = math.log(1e-6)  # log-likelihood cost of a mismatch no table change explains


def whitespace_like_mask() -> np.ndarray:
    mask = np.zeros(MAX_CP + 1, dtype=bool)
    for a, b in WHITESPACE_LIKE:
        mask[a:b + 1] = True
    return mask


def code_points(start: int = 0, stop: int = MAX_CP + 1) -> np.ndarray:
    """All code points in ``[start, stop)`` except the surrogates."""
    cps = np.arange(max(0, start), min(stop, MAX_CP + 1), dtype=np.int64)
    return cps[(cps < SURROGATES[0]) | (cps > SURROGATES[1])]


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


# --------------------------------------------------------------------------- encoding


class _Failed:
    """An engine raised on this text; two failures compare equal, a failure and ids differ."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = f"{type(error).__name__}: {error}"


def _encode(engine, texts: Sequence[str], label: str) -> list:
    samples = [Sample.plain(f"{label}#{i}", t) for i, t in enumerate(texts)]
    try:
        out = engine.encode_batch(samples)
        if len(out) != len(samples):
            raise ValueError(f"{len(out)} results for {len(samples)} samples")
        return list(out)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - localise the failure to single texts (pyo3 panics too)
        results: list = []
        for s in samples:
            try:
                results.append(engine.encode_batch([s])[0])
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001
                results.append(_Failed(exc))
        return results


def _same(a, b) -> bool:
    """Only two id arrays can agree: a failure on either side (both sides included)
    means nothing was compared, so the code point is reported, never passed."""
    if isinstance(a, _Failed) or isinstance(b, _Failed):
        return False
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _failed(x) -> bool:
    return isinstance(x, _Failed)


def _as_engine(e):
    if isinstance(e, str):
        from verify.engines.registry import build_engine

        return build_engine(e)
    return e


# --------------------------------------------------------------------------- sweep


def sweep(reference, candidate, *, batch_size: int = 4096, pack: int = 12, start: int = 0,
          stop: int = MAX_CP + 1, contexts: Sequence[Context] = CONTEXTS, parallel: bool = True,
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Sweep every code point in ``[start, stop)`` (surrogates excluded) through
    both engines. ``reference`` / ``candidate``: engine objects or spec strings."""
    return sweep_many(reference, [candidate], batch_size=batch_size, pack=pack, start=start, stop=stop,
                      contexts=contexts, parallel=parallel, progress=progress)[0]


def sweep_many(reference, candidates: Iterable, *, batch_size: int = 4096, pack: int = 12, start: int = 0,
               stop: int = MAX_CP + 1, contexts: Sequence[Context] = CONTEXTS, parallel: bool = True,
               progress: Callable[[int, int], None] | None = None) -> list[SweepResult]:
    """Like ``sweep`` for several candidates; the reference encodes each pack once.

    batch_size: code points per engine call; pack: code points per packed sample
    (1 = every code point's probes encoded on their own); parallel: encode the
    reference and the candidates in concurrent threads (engines that release the
    GIL, like tiktoken and tokenizers, then overlap)."""
    t0 = time.perf_counter()
    ref = _as_engine(reference)
    cands = [_as_engine(c) for c in candidates]
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
    pool = ThreadPoolExecutor(max_workers=1 + len(cands)) if parallel else None

    def encode_all(texts: list[str], label: str, which: Sequence[int] | None = None):
        engines = [ref] + [cands[i] for i in (which if which is not None else range(len(cands)))]
        if pool is None:
            return [_encode(e, texts, label) for e in engines]
        futures = [pool.submit(_encode, e, texts, label) for e in engines]
        return [f.result() for f in futures]

    try:
        done = 0
        for b0 in range(0, total, batch_size):
            batch = cps_all[b0:b0 + batch_size].tolist()
            chars = [chr(c) for c in batch]
            probes = [t.replace("{c}", ch) for ch in chars for t in templates]
            step = pack * n_ctx
            packs = [SEP.join(probes[i:i + step]) for i in range(0, len(probes), step)]
            outs = encode_all(packs, f"U+{batch[0]:04X}")
            ref_out = outs[0]
            for ci, cand_out in enumerate(outs[1:]):
                diff = [p for p in range(len(packs)) if not _same(ref_out[p], cand_out[p])]
                if diff:
                    _localise(ci, diff, batch, probes, pack, n_ctx, contexts, encode_all,
                              bad[ci], errors[ci], pack_only[ci])
            done += len(batch)
            if progress:
                progress(done, total)
    finally:
        if pool is not None:
            pool.shutdown(wait=True)

    seconds = time.perf_counter() - t0
    results = []
    for ci, cand in enumerate(cands):
        results.append(_result(ref, cand, bad[ci], errors[ci], pack_only[ci], contexts, total,
                               total * n_ctx, seconds, [int(start), int(min(stop, MAX_CP + 1)) - 1]))
    return results


def _localise(ci, diff, batch, probes, pack, n_ctx, contexts, encode_all, bad, errors, pack_only):
    """Narrow differing packs down: first each code point's joined probes, then,
    for the code points that differ, each probe alone (both engines)."""
    cps_idx = [j for p in diff for j in range(p * pack, min((p + 1) * pack, len(batch)))]
    texts = [SEP.join(probes[j * n_ctx:(j + 1) * n_ctx]) for j in cps_idx]
    ref_o, cand_o = encode_all(texts, f"U+{batch[cps_idx[0]]:04X}/cp", [ci])
    hit = [j for j, a, b in zip(cps_idx, ref_o, cand_o) if not _same(a, b)]
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
    ref_o, cand_o = encode_all([probes[i] for i in idx], f"U+{batch[hit[0]]:04X}/probe", [ci])
    for i, a, b in zip(idx, ref_o, cand_o):
        if not _same(a, b):
            bad.setdefault(batch[i // n_ctx], set()).add(contexts[i % n_ctx].name)
            if _failed(a) or _failed(b):
                errors.add(batch[i // n_ctx])
    for j in hit:  # differs only when its probes are joined
        if batch[j] not in bad:
            bad[batch[j]] = {"joined"}


# --------------------------------------------------------------------------- attribution


def _declared_version(engine) -> str | None:
    caps = getattr(engine, "capabilities", None)
    return getattr(caps, "unicode_version", None) if caps is not None else None


def _pair_score(m_mask: np.ndarray, m_count: int, v_cand: str, v_ref: str,
                scope: np.ndarray | None = None) -> tuple[float, int]:
    """(log-likelihood, explained count) of the mismatch set under "the engines'
    tables are v_cand and v_ref". Every (category-in-v_cand, category-in-v_ref)
    transition type gets its own visibility rate p (its maximum-likelihood
    estimate): a change type that never shows costs nothing, one that always
    shows costs nothing, a partly visible one costs its size times the binary
    entropy of p; a mismatch outside every changed set costs log(1e-6)."""
    a, b = ud.category_table(v_cand), ud.category_table(v_ref)
    diff = a != b
    if scope is not None:
        diff &= scope
    changed = np.flatnonzero(diff)
    if changed.size == 0:
        return m_count * _EPS_LOG, 0
    types = a[changed].astype(np.int64) * len(ud.CATEGORIES) + b[changed]
    hits = m_mask[changed]
    n_t = np.bincount(types, minlength=len(ud.CATEGORIES) ** 2)
    h_t = np.bincount(types, weights=hits, minlength=len(ud.CATEGORIES) ** 2)
    ll = 0.0
    for n, h in zip(n_t[n_t > 0], h_t[n_t > 0]):
        p = h / n
        if 0 < p < 1:
            ll += h * math.log(p) + (n - h) * math.log(1 - p)
    explained = int(hits.sum())
    ll += (m_count - explained) * _EPS_LOG
    return ll, explained


def attribute(mismatched_cps: np.ndarray, reference_version: str | None = None,
              candidate_version: str | None = None, *, start: int = 0,
              stop: int = MAX_CP + 1, exclude: np.ndarray | None = None) -> dict[str, Any]:
    """Name the Unicode version whose table changes best explain a mismatch set.

    Returns {"unicode_version", "reference_unicode_version", "basis", "explained_count",
    "scores"}. With the reference's version known (declared), every other known
    version is tried for the candidate; with only the candidate's known, the
    reference's is inferred; with neither, every pair is tried and the candidate
    is assumed to have the older tables (stated in ``basis``). Only code points
    in ``[start, stop)`` and not in the boolean mask ``exclude`` count."""
    vs = ud.versions()
    ref_v = ud.resolve_version(reference_version)
    cand_v = ud.resolve_version(candidate_version)
    m = np.unique(np.asarray(mismatched_cps, dtype=np.int64))
    out: dict[str, Any] = {"unicode_version": cand_v, "reference_unicode_version": ref_v,
                           "basis": "none", "explained_count": 0, "scores": [], "tied": []}
    if m.size == 0:
        out["basis"] = "no mismatches"
        return out
    mask = np.zeros(MAX_CP + 1, dtype=bool)
    mask[m] = True
    scope = np.zeros(MAX_CP + 1, dtype=bool)
    scope[max(0, start):min(stop, MAX_CP + 1)] = True
    if exclude is not None:
        scope &= ~exclude
    if ref_v and cand_v:
        pairs, basis = [(cand_v, ref_v)], "declared"
    elif ref_v:
        pairs, basis = [(v, ref_v) for v in vs if v != ref_v], "reference version declared"
    elif cand_v:
        pairs, basis = [(cand_v, v) for v in vs if v != cand_v], "candidate version declared"
    else:
        pairs = [(a, b) for i, a in enumerate(vs) for b in vs[i + 1:]]
        basis = "inferred; assumes the candidate has the older tables"
    scored = []
    for vc, vr in pairs:
        ll, expl = _pair_score(mask, int(m.size), vc, vr, scope)
        scored.append((ll, expl, vc, vr))
    # Ties (the same changes, e.g. 12.0 vs 12.1 for most code points) go to the newer candidate version.
    scored.sort(key=lambda s: (-s[0], tuple(-x for x in ud.version_key(s[2])), ud.version_key(s[3])))
    out["scores"] = [{"candidate": vc, "reference": vr, "log_likelihood": round(float(ll), 2), "explained": expl}
                     for ll, expl, vc, vr in scored[:5]]
    best_ll, best_expl, vc, vr = scored[0]
    if best_expl * 2 < m.size:  # a table change must explain most of it
        out["basis"] = f"{basis}; no version explains most of the mismatches"
        out["unicode_version"] = cand_v
        out["reference_unicode_version"] = ref_v
        return out
    out.update(unicode_version=vc, reference_unicode_version=vr, basis=basis, explained_count=best_expl)
    # Versions whose differences from the chosen one never show (e.g. 12.0 vs 12.1) tie;
    # the newest is reported, and the others listed.
    out["tied"] = sorted({c for ll, e, c, r in scored if abs(ll - best_ll) < 1e-6 and e == best_expl and r == vr},
                         key=ud.version_key)
    out["changed"] = np.flatnonzero((ud.category_table(vc) != ud.category_table(vr)) & scope)
    return out


def _result(ref, cand, bad, errors, pack_only, contexts, n_cp, n_probes, seconds, scope) -> SweepResult:
    m = np.asarray(sorted(bad), dtype=np.int64)
    ws_mask = whitespace_like_mask()
    ws = m[ws_mask[m]] if m.size else m
    non_ws = m[~ws_mask[m]] if m.size else m
    att = attribute(non_ws, _declared_version(ref), _declared_version(cand),
                    start=scope[0], stop=scope[1] + 1, exclude=ws_mask)
    explained_cps = np.intersect1d(non_ws, att.get("changed", np.zeros(0, dtype=np.int64)))
    unexplained = np.setdiff1d(non_ws, explained_cps)
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
        unicode_version=att["unicode_version"],
        reference_unicode_version=att["reference_unicode_version"],
        version_basis=("only whitespace-like code points differ" if ws.size and not non_ws.size
                       else att["basis"]),
        explained=(explained_cps.size / m.size) if m.size else 0.0,
        whitespace=ud.to_ranges(ws),
        unexplained=ud.to_ranges(unexplained),
        errors=ud.to_ranges(sorted(errors)),
        pack_only=ud.to_ranges(sorted(pack_only)),
        by_context=dict(sorted(by_context.items(), key=lambda kv: order.get(kv[0], 99))),
        contexts_of={cp: sorted(c, key=lambda x: order.get(x, 99)) for cp, c in bad.items()},
        scores=att["scores"],
        tied_versions=att["tied"],
        code_points=n_cp,
        probes=n_probes,
        seconds=seconds,
        scope=scope,
    )


# --------------------------------------------------------------------------- report

MD_ROWS = 50


def _fmt_cp(cp: int) -> str:
    return f"U+{cp:04X}"


def _range_row(a: int, b: int, result: SweepResult, ref_version: str | None) -> str:
    v = ref_version or ud.newest()
    cats = sorted({ud.category(cp, v) for cp in range(a, min(b, a + 4096) + 1)})
    span = _fmt_cp(a) if a == b else f"{_fmt_cp(a)}..{_fmt_cp(b)}"
    first = ud.label(a)
    names = first if a == b else f"{first} .. {ud.label(b)}"
    oldest = ud.versions()[0]
    assigned = sorted({ud.assigned_in(cp) for cp in (a, b)} - {None}, key=ud.version_key)
    assigned_s = ", ".join(f"<={v}" if v == oldest else v for v in assigned) or "-"
    order = {c.name: i for i, c in enumerate(CONTEXTS)}
    ctxs = sorted({c for cp in range(a, min(b, a + 256) + 1) for c in result.contexts_of.get(cp, [])},
                  key=lambda c: order.get(c, 99))
    ctx_s = "all" if len(ctxs) == len(CONTEXTS) and set(ctxs) == set(order) else ", ".join(ctxs)
    names = names.replace("|", "\\|")
    return f"| {span} | {b - a + 1} | {'/'.join(cats)} | {names} | {assigned_s} | {ctx_s} |"


def write_unicode_report(results: SweepResult | Sequence[SweepResult], out_dir) -> tuple[Any, Any]:
    """Write OUT/unicode.json and OUT/unicode.md; return their paths."""
    from pathlib import Path
    import json

    if isinstance(results, SweepResult):
        results = [results]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reference = results[0].reference if results else None
    doc = {
        "reference": reference,
        "unicode_data": {"versions": ud.versions(), "source": ud.source()},
        "contexts": [{"name": c.name, "template": c.template, "why": c.why} for c in CONTEXTS],
        "candidates": {r.candidate: {k: v for k, v in r.to_json().items() if k not in ("candidate", "reference")}
                       for r in results},
    }
    json_path = out / "unicode.json"
    json_path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")

    lines = ["# Unicode-table sweep", "", f"Reference: `{reference}`", ""]
    for r in results:
        lines += [f"## `{r.candidate}`", ""]
        lines.append(f"- code points swept: {r.code_points:,} ({_fmt_cp(r.scope[0])}..{_fmt_cp(r.scope[1])}, "
                     f"surrogates excluded), probes: {r.probes:,}, {r.seconds:.1f} s")
        lines.append(f"- mismatching code points: **{r.count:,}** in {len(r.mismatched):,} ranges")
        if r.count:
            if r.count == sum(b - a + 1 for a, b in r.whitespace):
                lines.append("- Unicode tables: not implicated (every mismatch is a whitespace-like code point)")
            elif r.unicode_version:
                others = [v for v in r.tied_versions if v != r.unicode_version]
                tie = f" (equally well: {', '.join(others)})" if others else ""
                lines.append(f"- Unicode tables: candidate **{r.unicode_version}**{tie} vs reference "
                             f"{r.reference_unicode_version} ({r.version_basis}); explains "
                             f"{r.explained:.1%} of the mismatches")
            else:
                lines.append(f"- Unicode tables: no version explains the mismatches ({r.version_basis})")
            ws = ", ".join(_fmt_cp(a) if a == b else f"{_fmt_cp(a)}..{_fmt_cp(b)}" for a, b in r.whitespace)
            lines.append(f"- whitespace-definition mismatches: {ws or 'none'}")
            if r.unexplained:
                lines.append(f"- unexplained: {sum(b - a + 1 for a, b in r.unexplained):,} code points "
                             f"in {len(r.unexplained)} ranges")
            if r.errors:
                lines.append(f"- an engine raised on: {len(r.errors)} ranges")
            lines.append("- differing probe contexts: "
                         + ", ".join(f"{k} ({v:,})" for k, v in r.by_context.items()))
        if r.pack_only:
            lines.append(f"- packs that differed with no single probe differing: {len(r.pack_only)} ranges "
                         f"(first {_fmt_cp(r.pack_only[0][0])})")
        if r.mismatched:
            lines += ["", "| range | n | category | name | assigned in | contexts |",
                      "|---|---|---|---|---|---|"]
            for a, b in r.mismatched[:MD_ROWS]:
                lines.append(_range_row(a, b, r, r.reference_unicode_version))
            if len(r.mismatched) > MD_ROWS:
                lines.append(f"| ... | {len(r.mismatched) - MD_ROWS} more ranges in unicode.json | | | | |")
        lines.append("")
    lines += ["Categories are the reference's Unicode version when known (else the newest known); "
              "\"assigned in\" is the first known version assigning the first/last code point "
              f"(known: {', '.join(ud.versions())}).", ""]
    md_path = out / "unicode.md"
    md_path.write_text("\n".join(lines), encoding="utf-8")
    return json_path, md_path
