"""``verify length sweep`` as a hunt on the one pipeline: a group of probe families per shard.

Each shard grows its family's text, bisects the first divergent length per candidate
and probes the cut (``search.FamilySearch``); the reference encodes each text once for
all candidates. A shard commits its findings (``ids`` or failure findings with a
``length`` block) and, in its extra, what the family showed per candidate. ``finish``
writes ``OUT/length.json``: per candidate and family the first divergent length (None:
agrees up to ``--max-chars``), and the **thresholds** found -- each distinct first
divergent length with the families that show it -- and the manifest's ``length``
section. Findings go through the usual records, triage and reports.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify import atomic
from verify.corpora.shards import HuntShard
from verify.errors import UsageError
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.layout import LENGTH_FILE, RunFolder
from verify.rundir.result import ShardResult

DEFAULT_MAX_CHARS = 1_000_000
MAX_CHARS = 100_000_000  # --max-chars' ceiling: a family grown to it takes minutes; far beyond, memory runs out
LENGTH_SCHEMA = "verify.length/1"
KINDS = ("run", "block", "separator", "token", "special")


GROUP_SIZE = 12  # families per shard: a threshold is probed once per shard


@dataclass(frozen=True, kw_only=True)
class LengthShard(HuntShard):
    """A group of probe families (``Family.as_dict()`` each); label ``length:FIRST..LAST``."""

    kind = "length"
    families: tuple[dict[str, Any], ...] = field(hash=False)

    def __post_init__(self) -> None:
        self._tuples("families")


def length_shard(index: int, shard: LengthShard, executors: list, context) -> ShardResult:
    from verify.adversarial.length.families import Family
    from verify.adversarial.length.search import search_group
    from verify.counts import Counts
    from verify.fresh_check import FreshCheck

    started = time.monotonic()
    families = [Family.from_dict(doc) for doc in shard.families]
    fresh = FreshCheck(executors, sampled=False)  # few findings, each a probe of its own
    found = search_group(families, executors, max_chars=context.params["max_chars"], fresh=fresh)
    result = ShardResult(index, shard.id, Counts(), worker=context.worker)
    for family_result in found:
        result.counts.add(family_result.counts)
        for finding in family_result.findings:
            result.add_record(*finding.to_record())
    result.counts.findings = len(result.records)
    result.extra = {"fresh": fresh.as_dict(), "families": [{"family": r.family.name, "kind": r.family.kind,
                                  "candidates": {spec: st.as_dict() for spec, st in r.candidates.items()}}
                                 for r in found]}
    result.seconds = time.monotonic() - started
    return result


class LengthHunt(Hunt):
    name = "length"
    label = "verify length sweep"
    task = staticmethod(length_shard)

    def __init__(self, reference: str | None, requested: list[str] | None, job: JobOptions, *,
                 max_chars: int | None = None, kinds: list[str] | None = None, families: list[str] | None = None):
        self.reference, self.requested, self.job = reference, list(requested or []), job
        self.max_chars, self.kinds, self.only = max_chars, kinds, families

    def fill_from(self, saved) -> None:
        self.reference = self.reference or saved.reference
        self.requested = self.requested or saved.requested
        o = saved.options
        self.max_chars = self.max_chars or o["max_chars"]
        self.kinds = self.kinds or o.get("kinds")
        self.only = self.only or o.get("families")

    def plan(self) -> HuntPlan:
        from verify.adversarial.length.families import families_for
        from verify.engines.catalogue import expand_candidates, run_engines

        self.reference, self.requested = run_engines(self.reference, self.requested)
        self.max_chars = self.max_chars or DEFAULT_MAX_CHARS
        if not 2 <= self.max_chars <= MAX_CHARS:
            raise UsageError(f"--max-chars must be from 2 to {MAX_CHARS:,}, got {self.max_chars:,}")
        candidates, swept_in = expand_candidates(self.reference, self.requested)
        if self.reference in candidates:
            raise UsageError(f"'{self.reference}' is both the reference and a candidate")
        chosen = families_for(self.reference, tuple(self.kinds) if self.kinds else None)
        if self.only:
            unknown = sorted(set(self.only) - {f.name for f in chosen})
            if unknown:
                raise UsageError(f"--family: no family {', '.join(unknown)} (e.g. {', '.join(f.name for f in chosen[:5])})")
            chosen = [f for f in chosen if f.name in self.only]
        groups = [chosen[i:i + GROUP_SIZE] for i in range(0, len(chosen), GROUP_SIZE)]
        shards = [LengthShard("length", label=f"length:{g[0].name}..{g[-1].name}", families=[f.as_dict() for f in g])
                  for g in groups]
        options = {"max_chars": self.max_chars, "kinds": self.kinds, "families": self.only,
                   "timeout_s": self.job.engine.timeout_s, "memory_limit_mb": self.job.engine.memory_limit_mb}
        source = {"name": "length families", "kind": "length", "families": len(chosen), "max_chars": self.max_chars,
                  "by_kind": {k: sum(f.kind == k for f in chosen) for k in KINDS}}
        return HuntPlan(self.reference, self.requested, candidates, [source], shards, options,
                        optional=sorted(swept_in))

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        report = length_report(plan, store, markers)
        atomic.write_json(RunFolder(out).length, report)
        return {"length": {spec: {"families_differing": c["families_differing"],
                                  "thresholds": [t["length"] for t in c["thresholds"]]}
                           for spec, c in report["candidates"].items()},
                "reports": {"Length sweep": LENGTH_FILE}}


def length_report(plan, store, markers) -> dict[str, Any]:
    """``length.json``: per candidate, every family's first divergent length and the thresholds."""
    per: dict[str, dict[str, Any]] = {spec: {"families": {}} for spec in plan.candidates}
    swept = 0
    for _, extra in store.extras(markers):
        for fam in extra["families"]:
            swept += 1
            for spec, st in fam["candidates"].items():
                if spec in per:
                    per[spec]["families"][fam["family"]] = {"kind": fam["kind"], **st}
    for spec, doc in per.items():
        thresholds: dict[int, list[str]] = {}
        for name, st in doc["families"].items():
            if st["first_divergent"] is not None:
                thresholds.setdefault(st["first_divergent"], []).append(name)
        doc["families_differing"] = sum(len(v) for v in thresholds.values())
        doc["families_agreeing"] = len(doc["families"]) - doc["families_differing"]
        fams = doc["families"]
        doc["thresholds"] = [{"length": n, "cut": n - 1, "families": sorted(names),
                              # how the lengths from n fare (a dense divergence is "on and off from n")
                              "on_and_off": sorted(f for f in names if fams[f].get("pattern") == "on and off"),
                              # families whose scan below the boundary ran out: n is an upper bound
                              "not_exact": sorted(f for f in names if fams[f].get("first_exact") is False)}
                             for n, names in sorted(thresholds.items())]
    return {"schema": LENGTH_SCHEMA, "reference": plan.reference, "max_chars": plan.options["max_chars"],
            "families_swept": swept, "families_planned": sum(len(s.families) for s in plan.shards),
            "candidates": per}
