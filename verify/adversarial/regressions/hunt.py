"""``verify recheck`` as a hunt on the one pipeline: the regression cases, replayed.

The shards are groups of ``CASES_PER_SHARD`` cases in case-file order; each shard carries
its cases' documents (``extra``), so it is re-created from ``plan.json`` on any machine and
a resume replays exactly what the run started with (``options["cases_sha256"]``). There is
no reference (``reference_required = False``): every engine a case names -- its reference
and its engine -- is optional, each started once per worker; a case whose engine did not
load is ``engine-unavailable``, as before.

Every replayed case is one sample of ``verify.counts`` (``case_state``): verified when it
behaves as recorded, ``skipped`` when an engine is unavailable (not counted at all when
unavailable engines are allowed), the failure kind of an ``error``, else diverged. A shard
commits those counts and each case's result (``ReplayResult.to_json`` with its
``verdict``) in its extra; ``finish`` writes them, in case order, to ``OUT/recheck.json``
(``verify.recheck/1``) and the manifest's ``recheck`` section. No case is a finding:
``divergences.jsonl`` stays empty, as before.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from verify.corpora.shards import HuntShard
from verify.counts import Counts
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.layout import RECHECK_FILE, RunFolder
from verify.rundir.result import ShardResult

CASES_PER_SHARD = 8
REPORT_SCHEMA = "verify.recheck/1"


@dataclass(frozen=True, kw_only=True)
class RecheckShard(HuntShard):
    """Cases ``start`` to ``stop - 1`` of the case folder, each ``{"path": ..., "doc": ...}`` (the
    case file's document as read when the run was planned); label ``recheck:cases[a:b]``."""

    kind = "recheck"
    cases: tuple[dict[str, Any], ...] = field(hash=False)

    def __post_init__(self) -> None:
        self._tuples("cases")


def verdict(result, allow_unavailable: bool) -> str:
    """ok | CHANGED | FIXED | UNAVAILABLE ...: what a case's line says beyond its status."""
    if result.as_recorded:
        return "ok"
    if result.status == "engine-unavailable":
        return "skipped" if allow_unavailable else "UNAVAILABLE"
    if result.status == "fixed":
        return "FIXED: set \"status\": \"fixed\" in the case"
    if result.status == "reference-changed":
        return "REFERENCE CHANGED: the case is suspect"
    if result.case.status == "fixed":
        return "REGRESSED: a fixed bug is back"
    return "CHANGED: new behaviour"


def case_state(result, verdict_: str) -> str | None:
    """The ``verify.counts`` state of a case: verified (as recorded), the failure kind of an
    ``error``, skipped (unavailable, not allowed), diverged (anything else that changed);
    None for a case allowed to be unavailable (not replayed, not counted)."""
    if verdict_ == "ok":
        return "verified"
    if verdict_ == "skipped":
        return None
    if result.status == "engine-unavailable":
        return "skipped"
    if result.status == "error":
        return (result.error or {}).get("kind", "error")
    return "diverged"


def label(doc: dict[str, Any]) -> str:
    """The status column of a case's line (``still-diverges*``: with other ids than recorded)."""
    if doc["status"] == "still-diverges":
        return "still-diverges" if doc["same_actual"] else "still-diverges*"
    return doc["status"]


def recheck_shard(index: int, shard: RecheckShard, executors: list, context) -> ShardResult:
    """The task: replay the shard's cases with the engines this worker started."""
    from verify.adversarial.regressions.cases import parse_case, replay
    from verify.comparison import sample_size

    started = time.monotonic()
    allow_unavailable = bool(context.params["allow_unavailable"])
    by_spec = {ex.spec: ex for ex in executors}
    counts = Counts()
    results = []
    for item in shard.cases:
        case = parse_case(Path(item["path"]), item["doc"])
        # an engine that did not load: why is in plan.not_loaded, which finish reads ("missing")
        reference, engine = by_spec.get(case.reference, ""), by_spec.get(case.engine, "")
        result = replay(case, reference, engine)
        said = verdict(result, allow_unavailable)
        state = case_state(result, said)
        if state is not None:
            chars, nbytes = sample_size(case.sample)
            counts.samples += 1
            counts.chars += chars
            counts.bytes += nbytes
            counts.states[state] += 1
            counts.engine(case.engine)[state] += 1
        missing = ["reference", case.reference] if isinstance(reference, str) else \
            ["engine", case.engine] if isinstance(engine, str) else None
        results.append(result.to_json() | {"verdict": said, "missing": missing})
    return ShardResult(index, shard.id, counts, seconds=time.monotonic() - started, worker=context.worker,
                       extra={"results": results})


def shared_reference(plan) -> str:
    """The cases' one reference, if they share it (the manifest's reference), else ""."""
    references = {item["doc"]["reference"] for shard in plan.shards for item in shard.cases}
    return references.pop() if len(references) == 1 else ""


class RecheckHunt(Hunt):
    name = "recheck"
    label = "verify recheck"
    task = staticmethod(recheck_shard)
    reference_required = False

    def __init__(self, cases: Sequence, job: JobOptions, *, allow_unavailable: bool = False,
                 cases_dir: Path | str | None = None, per_shard: int = CASES_PER_SHARD):
        self.cases, self.job = list(cases), job
        self.allow_unavailable, self.per_shard = allow_unavailable, per_shard
        self.cases_dir = str(cases_dir) if cases_dir is not None else (
            str(self.cases[0].path.parent) if self.cases else "")

    def plan(self) -> HuntPlan:
        from verify.errors import UsageError

        if not self.cases:
            raise UsageError(f"no regression cases to replay in {self.cases_dir or 'the case folder'}")
        every = list(dict.fromkeys(s for c in self.cases for s in (c.reference, c.engine)))
        items = [{"path": str(c.path), "doc": c.raw} for c in self.cases]
        digest = hashlib.sha256(json.dumps(items, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        shards = []
        for start in range(0, len(items), self.per_shard):
            group = items[start:start + self.per_shard]
            shards.append(RecheckShard("regression-cases", label=f"recheck:cases[{start}:{start + len(group)}]",
                                       start=start, stop=start + len(group), cases=group))
        options = {"allow_unavailable": self.allow_unavailable, "cases": len(items), "cases_sha256": digest,
                   "cases_per_shard": self.per_shard, "timeout_s": self.job.engine.timeout_s,
                   "memory_limit_mb": self.job.engine.memory_limit_mb}
        source = {"name": self.cases_dir, "kind": "regression-cases", "cases": len(items)}
        # no reference: every engine is a candidate, and optional (one that cannot load is a status)
        return HuntPlan("", list(every), list(every), [source], shards, options, optional=list(every))

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        report = write_report(out, plan, store, markers, self.cases_dir, self.job.argv)
        identities = plan.identities
        reference = shared_reference(plan)
        return {"recheck": {k: report[k] for k in ("counts", "as_recorded", "skipped", "changed", "newly_fixed")},
                "reports": {"Regression cases": RECHECK_FILE},
                # as the command always showed them: the cases' one reference (if shared), the other engines
                "reference": identities.get(reference) if reference else None,
                "candidates": [identities[s] for s in plan.candidates if s in identities and s != reference]}


def merged_results(plan, store, markers) -> list[dict[str, Any]]:
    """Every committed case result, in case order; an unavailable engine's detail says why
    (what the workers reported when it did not load: ``plan.not_loaded``)."""
    results = []
    for _, extra in store.extras(markers):
        for doc in extra["results"]:
            doc = dict(doc)
            missing = doc.pop("missing", None)
            if missing is not None and doc["status"] == "engine-unavailable":
                role, spec = missing
                why = plan.not_loaded.get(spec, "it did not start")
                doc["detail"] = f"reference {spec} unavailable: {why}" if role == "reference" else \
                    f"{spec} unavailable: {why}"
            results.append(doc)
    return results


def engine_versions(plan) -> dict[str, Any]:
    versions = {spec: {"package": ident.get("package"), "version": ident.get("package_version"),
                       **{k: ident[k] for k in ("name", "files_digest", "environment") if ident.get(k)}}
                if "identity_error" not in ident else {"identity_error": ident["identity_error"]}
                for spec, ident in plan.identities.items()}
    return versions | {spec: {"unavailable": why} for spec, why in plan.not_loaded.items()}


def write_report(out: Path, plan, store, markers, cases_dir: str, argv: list[str]) -> dict[str, Any]:
    """``OUT/recheck.json``: one result per case (with its ``input_key`` and verdict), what changed."""
    from verify import atomic
    from verify.rundir.attempts import read_attempts

    results = merged_results(plan, store, markers)
    failing = [r for r in results if r["verdict"] not in ("ok", "skipped")]
    skipped = sum(r["verdict"] == "skipped" for r in results)  # allowed to be unavailable: not replayed
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    attempts = read_attempts(out)
    report = {
        "schema": REPORT_SCHEMA,
        "argv": list(argv),
        "cases_dir": cases_dir,
        "started": attempts[0].get("started") if attempts else None,
        "finished": time.time(),
        "engines": engine_versions(plan),
        "counts": counts,
        "as_recorded": len(results) - len(failing) - skipped,
        "skipped": skipped,
        "changed": [r["id"] for r in failing],
        "newly_fixed": [r["id"] for r in results if r["status"] == "fixed" and r["recorded_status"] != "fixed"],
        "results": results,
    }
    atomic.write_json(RunFolder(out).recheck, report)
    return report
