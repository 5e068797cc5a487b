"""``verify unicode`` as a hunt on the one pipeline: code-point ranges as shards.

Each shard is a range of ``SHARD_CODE_POINTS`` code points (surrogates excluded) swept in
every probe context (``sweep.scan_range``) through the reference and every candidate --
the reference encodes each pack once for all candidates. A shard commits, per candidate,
the contexts each mismatching code point differed in, the code points a failure touched
and those only a pack showed (``CandidateState.to_json``). ``finish`` merges the committed
shards (they are disjoint), attributes each candidate's mismatches to the Unicode version
whose tables explain them, and writes ``OUT/unicode.json`` and ``OUT/unicode.md``.

Every swept code point is one sample: ``error`` where an engine failed on it, ``diverged``
where it mismatched (or only its pack did), else ``verified``. Each mismatching code point is
also committed as a finding: its probe text that differs alone (``failing.failing_strings``),
so that triage minimises it and clusters it by cause like any hunt's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verify.adversarial.unicode.contexts import MAX_CP, code_points
from verify.adversarial.unicode.failing import failing_strings
from verify.corpora.shards import HuntShard
from verify.counts import Counts
from verify.errors import UsageError
from verify.fresh_check import FreshCheck
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.layout import UNICODE_SUMMARY_FILE
from verify.rundir.result import ShardResult

SHARD_CODE_POINTS = 1 << 15  # 34 shards over the whole range
MAX_SHARDS = 4096  # --shard-code-points may cut the range into at most this many shards
BATCH_CODE_POINTS = 4096  # code points per engine call


@dataclass(frozen=True, kw_only=True)
class UnicodeShard(HuntShard):
    """Code points ``start`` to ``stop - 1`` (label ``unicode:U+0000..U+7FFF``)."""

    kind = "unicode"


def _mask(ranges: list[list[int]]) -> np.ndarray:
    mask = np.zeros(MAX_CP + 1, dtype=bool)
    for a, b in ranges:
        mask[a:b + 1] = True
    return mask


def shard_counts(specs: list[str], states: list[dict[str, Any]], cps: np.ndarray) -> Counts:
    """Each swept code point is one sample (see the module docstring)."""
    counts = Counts()
    n = counts.samples = int(cps.size)
    failed_any, diverged_any = _mask([]), _mask([])
    for spec, st in zip(specs, states):
        failed = _mask(st["errors"])
        bad = _mask([[cp, cp] for cp, _ in st["bad"]])
        diverged = (bad | _mask(st["pack_only"])) & ~failed
        n_failed, n_diverged = int(failed.sum()), int(diverged.sum())
        counts.engine(spec).update(verified=n - n_failed - n_diverged, diverged=n_diverged, error=n_failed)
        failed_any |= failed
        diverged_any |= diverged
    counts.states["error"] = int(failed_any.sum())
    counts.states["diverged"] = int((diverged_any & ~failed_any).sum())
    counts.states["verified"] = n - counts.states["error"] - counts.states["diverged"]
    return counts


def _probes(context, reference_spec: str):
    from verify.adversarial.unicode.probes import probe_set
    from verify.adversarial.unicode.sweep import vocab_target

    cache = context.cache if context is not None else {}
    key = ("unicode-probes", reference_spec)
    if key not in cache:
        cache[key] = probe_set(vocab_target(reference_spec))
    return cache[key]


def unicode_shard(index: int, shard: UnicodeShard, executors: list, context) -> ShardResult:
    """The task: one code-point range through the reference (``executors[0]``) and every candidate."""
    from verify.adversarial.unicode.attribution import declared_version
    from verify.adversarial.unicode.sweep import scan_range

    started = time.monotonic()
    params = context.params
    reference, candidates = executors[0], list(executors[1:])
    cps = code_points(shard.start, shard.stop)
    probes = _probes(context, reference.spec)
    scan = scan_range(reference, candidates, cps, probes, batch_size=params.get("batch", BATCH_CODE_POINTS),
                      pack=params["pack"], packing=params["packing"])
    states = [st.to_json() for st in scan.states]
    specs = [ex.spec for ex in candidates]
    counts = shard_counts(specs, states, cps)
    if "normalization" not in context.cache:  # each engine's NFKC data, measured once per worker
        from verify.adversarial.unicode.normalization_probe import probe

        context.cache["normalization"] = probe(executors)
    extra = {"code_points": int(cps.size), "probes": scan.probes,
             "versions": {ex.spec: declared_version(ex) for ex in executors},
             "normalization": context.cache["normalization"],
             "candidates": {spec: {**st, "packing": packing}
                            for spec, st, packing in zip(specs, states, scan.packing)}}
    result = ShardResult(index, shard.id, counts, seconds=time.monotonic() - started, worker=context.worker,
                         extra=extra)
    # the failing strings: what triage minimises and clusters by cause after the shards
    fresh = FreshCheck(executors, sampled=False)  # few findings, each a probe of its own
    for finding in fresh.confirm(failing_strings(reference, candidates, probes, scan.states)):
        result.add_record(*finding.to_record())
    result.extra["fresh"] = fresh.as_dict()
    return result


class UnicodeHunt(Hunt):
    name = "unicode"
    label = "verify unicode"
    task = staticmethod(unicode_shard)

    def __init__(self, reference: str | None, requested: list[str] | None, job: JobOptions, *,
                 start: int | None = None, stop: int | None = None, shard_size: int | None = None,
                 pack: int | None = None, packing: str = "auto"):
        """``None`` means unsaid: a resume takes it from the saved plan, a new run its default."""
        self.reference, self.requested = reference, list(requested or [])
        self.start, self.stop, self.shard_size = start, stop, shard_size
        self.pack, self.packing = pack, packing
        self.job = job

    def fill_from(self, saved) -> None:
        self.reference = self.reference or saved.reference
        self.requested = self.requested or saved.requested
        o = saved.options
        self.start = o["start"] if self.start is None else self.start
        self.stop = o["stop"] if self.stop is None else self.stop
        self.shard_size = self.shard_size or o["shard_code_points"]
        self.pack = self.pack or o["pack"]

    def plan(self) -> HuntPlan:
        from verify.adversarial.unicode.sweep import PACK_PROBES
        from verify.engines.catalogue import expand_candidates, run_engines

        self.reference, self.requested = run_engines(self.reference, self.requested)
        self.start = 0 if self.start is None else self.start
        self.stop = MAX_CP + 1 if self.stop is None else self.stop
        self.shard_size, self.pack = self.shard_size or SHARD_CODE_POINTS, self.pack or PACK_PROBES
        if self.start >= self.stop:
            raise UsageError("--start must be below --stop")
        if -(-(self.stop - self.start) // self.shard_size) > MAX_SHARDS:
            raise UsageError(f"--shard-code-points {self.shard_size} cuts U+{self.start:04X}..U+{self.stop - 1:04X} "
                             f"into more than {MAX_SHARDS} shards: give a larger one")
        if not self.reference or not self.requested:
            raise UsageError("verify unicode needs --reference and at least one --candidate")
        candidates, swept_in = expand_candidates(self.reference, self.requested)
        if self.reference in candidates:
            raise UsageError(f"'{self.reference}' is both the reference and a candidate")
        shards = [UnicodeShard("unicode", label=f"unicode:U+{a:04X}..U+{min(a + self.shard_size, self.stop) - 1:04X}",
                               start=a, stop=min(a + self.shard_size, self.stop))
                  for a in range(self.start, self.stop, self.shard_size)]
        options = {"start": self.start, "stop": self.stop, "shard_code_points": self.shard_size, "pack": self.pack,
                   "packing": self.packing, "batch": BATCH_CODE_POINTS, "timeout_s": self.job.engine.timeout_s,
                   "memory_limit_mb": self.job.engine.memory_limit_mb}
        source = {"name": f"code points U+{self.start:04X}..U+{self.stop - 1:04X}", "kind": "unicode",
                  "start": self.start, "stop": self.stop}
        return HuntPlan(self.reference, self.requested, candidates, [source], shards, options,
                        optional=sorted(swept_in))

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        results = merged_results(plan, store, markers)
        from verify.reports.unicode import write_unicode_report

        write_unicode_report(results, out)
        return {"unicode": {r.candidate: summary(r) for r in results},
                "reports": {"Unicode sweep": UNICODE_SUMMARY_FILE}}


def merged_results(plan, store, markers) -> list:
    """One ``SweepResult`` per candidate from the committed shards (the swept scope is theirs)."""
    from verify.adversarial.unicode.probes import probe_set
    from verify.adversarial.unicode.sweep import CandidateState, build_result, vocab_target

    states = {spec: CandidateState() for spec in plan.candidates}
    packing: dict[str, str] = {}
    versions: dict[str, str | None] = {}
    normalization: dict[str, dict] = {}
    scope = np.zeros(MAX_CP + 1, dtype=bool)
    n_cp = n_probes = 0
    seconds = 0.0
    for index, extra in store.extras(markers):
        shard = plan.shards[index]
        scope[code_points(shard.start, shard.stop)] = True
        n_cp += extra["code_points"]
        n_probes += extra["probes"]
        seconds += float(markers[index].get("seconds") or 0.0)
        versions.update(extra.get("versions") or {})
        normalization.update(extra.get("normalization") or {})
        for spec, doc in extra["candidates"].items():
            if spec in states:
                states[spec].merge_json(doc)
                packing[spec] = doc.get("packing", "")
    if not plan.candidates or not markers:
        return []
    probes = probe_set(vocab_target(plan.reference))
    def nfkc(spec: str) -> str | None:
        measured = normalization.get(spec)
        return None if measured is None else (measured.get("nfkc") or "none")

    return [build_result(plan.reference, spec, states[spec], probes, n_cp, n_probes, seconds, scope,
                         packing.get(spec, ""), versions.get(plan.reference), versions.get(spec),
                         (nfkc(plan.reference), nfkc(spec)))
            for spec in plan.candidates]


def summary(r) -> dict:
    return {"ok": r.ok, "count": r.count, "ranges": len(r.mismatched), "unicode_version": r.unicode_version,
            "reference_unicode_version": r.reference_unicode_version, "version_basis": r.version_basis,
            "explained": round(r.explained, 4), "whitespace": r.whitespace, "errors": r.errors,
            "pack_only": len(r.pack_only), "normalization": r.normalization}
