"""``verify check`` as a hunt on the one pipeline: the metamorphic checks of one engine.

The shards are the corpus shards of ``--corpus`` (``--limit`` applied per corpus) and the
stress check's two phases, each a shard of its own with its own budget (``stress:batches``:
the big batches; ``stress:thresholds``: the chunking-threshold inputs). The hunt has
``twins``: every worker starts the engine twice, and the task is handed ``[fresh, warm]``,
each its own engine. The warm engine sees ``WARMUP_TEXTS`` once per worker
(``context.cache``), then every batch it checks: an engine whose hidden state depends on
more than the warm-up may show ``history`` findings that depend on which shards a worker
ran before (as they depended on corpus order before the pipeline); every other property,
and any state the warm-up sets, gives the same findings for any split over workers.

Entry points (docs/entry-points.md). The plan reads which production entry points the
engine's adapter declares (``verify.engines.vocab_loading.entry_specs``) and adds, as optional
candidates, ``SPEC?entry=NAME`` for every one the spec does not already drive on its own: the
``api`` check compares each with the baseline on every corpus batch, and the ``batches``
stress phase sends its big batches through ``SPEC?entry=batch`` when there is one, so they
reach the library's own batch call. Each is started like the engine itself (isolated by
default, with its twin), so the manifest lists them with their identities and run notes
(``entry_point``, ``entry_points_ran``); ``plan.options["entry_points"]`` and the manifest's
``check`` section say which spec drives which entry point.

A shard commits its findings (``ShardResult`` records, large inputs stored beside them), its
``verify.counts`` tally (one state per sample, bad records) and, in its extra, the
``CheckCounts`` of every property, the stress phase's report and what the warm engine
noted. ``finish`` merges them into ``OUT/check.json`` (``verify.check/1``) and the
manifest's ``check`` section. A corpus that gave no sample is a ``CorpusError``
(``empty``); a stress phase its budget left empty says so in both (``notes``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.corpora.shards import HuntShard, Shard, apply_limit
from verify.counts import Counts
from verify.engines.catalogue import engine_values
from verify.errors import UsageError
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.layout import CHECK_FILE, RunFolder
from verify.rundir.result import ShardResult
from verify.rundir.status import shard_records

DEFAULT_CORPUS = "smoke"
STRESS_KIND = "stress"
REPORT_SCHEMA = "verify.check/1"
# options a resume takes from the saved plan when the caller leaves them unsaid (None)
SAVED_OPTIONS = ("text_field", "id_field", "limit", "batch_size", "checks", "roundtrip", "stress_budget_s",
                 "reference", "stress_phases")


@dataclass(frozen=True, kw_only=True)
class StressShard(HuntShard):
    """One phase of the stress check (``batches``, ``thresholds``, ...); label ``stress:PHASE``."""

    kind = STRESS_KIND
    phase: str


class ResultWriter:
    """``FindingWriter``'s two methods into a ``ShardResult``: a task writes no file."""

    def __init__(self, result: ShardResult):
        self.result = result

    @property
    def count(self) -> int:
        return len(self.result.records)

    def write(self, finding) -> dict:
        record, stored = finding.to_record()
        self.result.add_record(record, stored)
        return record

    def write_record(self, record: dict) -> dict:
        self.result.add_record(record)
        return record


def check_shard(index: int, shard: Shard, executors: list, context) -> ShardResult:
    """The task: one corpus shard, or one stress phase, through the engine and its twin (and the
    engine driven through its other entry points: ``executors`` is the engines of the plan, the
    engine first, then the twins, the engine's own first)."""
    from verify.adversarial.checks.metamorphic import MetamorphicChecker
    from verify.adversarial.checks.stress import StressCheck

    started = time.monotonic()
    params = context.params
    fresh = executors[0]
    twin = next(i for i, ex in enumerate(executors) if i and ex.spec == fresh.spec)
    warm = executors[twin]
    started_specs = {ex.spec: ex for ex in executors[1:twin]}  # an entry point's engine may not have loaded
    reference = started_specs.get(params.get("reference") or "")
    plan = params.get("entry_points") or {}
    entries = {name: started_specs[spec] for name, spec in (plan.get("api") or {}).items() if spec in started_specs}
    result = ShardResult(index, shard.id, Counts(), worker=context.worker)
    warmed_key = ("check-warmed", fresh.spec)
    restarts = warm.restarts
    phase = shard.phase if isinstance(shard, StressShard) else None
    batches = started_specs.get(plan.get("stress_batch") or "") if phase in ("batches", "families") else None
    checker = MetamorphicChecker(batches or fresh, warm, ResultWriter(result), source=shard.source,
                                 checks=params["checks"], threads=params["threads"], roundtrip=params["roundtrip"],
                                 warmed=bool(context.cache.get(warmed_key)), entries=entries,
                                 default_entry=plan.get("default"), reference=reference)
    extra: dict[str, Any] = {}
    if phase is not None:
        extra["stress"] = StressCheck(checker, budget_s=params["stress_budget_s"],
                                      state_limit=params.get("state_limit")).run((phase,))
        if phase in ("batches", "families"):  # where the big batches went: the library's batch call when it has one
            extra["stress"]["batches_engine"] = checker.spec
    else:
        checker.run(shard_records(shard), context.setup.batch_size)  # the plan's, larger for a device engine
    if checker.warmed:
        context.cache[warmed_key] = True
    result.counts = checker.tally
    result.counts.findings = len(result.records)
    extra["fresh"] = checker.fresh_check.as_dict()
    if checker.notes:
        extra["notes"] = list(checker.notes)
    notes = warm.run_notes()
    extra.update(check=checker.counts.as_dict(), roundtrip=bool(checker.roundtrip),
                 warm={"isolated": bool(context.setup.engine_options.isolate),
                       "worker_restarts": warm.restarts - restarts, "warnings": list(notes.get("warnings") or [])})
    result.extra = extra
    result.seconds = time.monotonic() - started
    return result


class CheckHunt(Hunt):
    name = "check"
    label = "verify check"
    task = staticmethod(check_shard)
    twins = True

    def __init__(self, engine: str | None, job: JobOptions, *, corpora: list[str] | None = None,
                 text_field: str | None = None, id_field: str | None = None, limit: int | None = None,
                 batch_size: int | None = None, checks: list[str] | None = None, roundtrip: bool | None = None,
                 stress_budget_s: float | None = None, reference: str | None = None,
                 stress_phases: list[str] | None = None):
        """``reference``: the engine whose ids are right (None: the one for the engine's vocabulary,
        ``verify.engines.references.default_reference``, when its spec names a known one; ``""``: none)."""
        self.engine, self.job, self.corpora = engine, job, list(corpora or [])
        self.reference = reference
        self.stress_phases = list(stress_phases) if stress_phases else None  # None: every phase
        self.text_field, self.id_field, self.limit, self.batch_size = text_field, id_field, limit, batch_size
        self.checks = list(checks) if checks is not None else None
        self.roundtrip, self.stress_budget_s = roundtrip, stress_budget_s
        self.corpus_samples: int | None = None  # set by finish: what ``empty`` judges

    def fill_from(self, saved) -> None:
        self.engine = self.engine or saved.reference
        self.corpora = self.corpora or list(saved.corpora)
        for name in SAVED_OPTIONS:
            if getattr(self, name) is None:
                setattr(self, name, saved.options.get(name))

    def _options(self) -> dict[str, Any]:
        from verify.adversarial.checks.metamorphic import CHECKS, THREADS
        from verify.adversarial.checks.stress import DEFAULT_BUDGET_S

        checks = list(self.checks) if self.checks is not None else list(CHECKS)
        unknown = [c for c in checks if c not in CHECKS]
        if unknown:
            raise UsageError(f"unknown check {', '.join(unknown)} (choose from {', '.join(CHECKS)})")
        if not checks:
            raise UsageError("no check to run (--no-stress leaves no check to run)")
        checks = [c for c in CHECKS if c in checks]
        budget = DEFAULT_BUDGET_S if self.stress_budget_s is None else float(self.stress_budget_s)
        if not budget > 0:
            raise UsageError("--stress-budget must be positive")
        batch_size = 32 if self.batch_size is None else self.batch_size
        if batch_size < 1:
            raise UsageError("--batch-size must be at least 1")
        if self.limit is not None and self.limit < 1:
            raise UsageError("--limit must be at least 1")
        reference = engine_values(self.reference, [])[0] if self.reference else self.reference  # "": none
        if reference is None:
            from verify.engines.references import default_reference

            reference = default_reference(self.engine)
        if reference and reference == self.engine:
            raise UsageError(f"--reference {reference} is the engine checked")
        from verify.adversarial.checks.stress import PHASES

        phases = [p for p in PHASES if p in (self.stress_phases or PHASES)]
        unknown = sorted(set(self.stress_phases or ()) - set(PHASES))
        if unknown:
            raise UsageError(f"unknown stress phase {', '.join(unknown)} (choose from {', '.join(PHASES)})")
        return {"checks": checks, "roundtrip": self.roundtrip, "batch_size": batch_size, "reference": reference or None,
                "stress_phases": phases,
                "limit": self.limit, "text_field": self.text_field, "id_field": self.id_field,
                "stress_budget_s": budget, "threads": THREADS, "timeout_s": self.job.engine.timeout_s,
                "memory_limit_mb": self.job.engine.memory_limit_mb,
                "entry_points": entry_point_plan(self.engine, checks)}

    def plan(self) -> HuntPlan:
        from verify.corpora import open_corpus

        if not self.engine:
            raise UsageError("verify check needs --engine SPEC")
        self.engine = engine_values(self.engine, [])[0]
        options = self._options()
        corpora = self.corpora or [DEFAULT_CORPUS]
        sources, shards = [], []
        for corpus in corpora:
            source = open_corpus(corpus, options["text_field"], options["id_field"])
            shards.extend(apply_limit(source.shards(), options["limit"]))
            sources.append(source.describe())
        if "stress" in options["checks"]:
            shards += [StressShard("stress", label=f"stress:{phase}", phase=phase)
                       for phase in options["stress_phases"]]
        specs = entry_point_specs(options["entry_points"])
        optional = list(specs)
        if options["reference"]:  # the trusted engine: it must load
            specs = specs + [options["reference"]]
        return HuntPlan(self.engine, [], specs, sources, shards, options, optional=optional, corpora=corpora)

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        merged = merge_shards(plan, store, markers)
        self.corpus_samples = merged.pop("corpus_samples")
        report = write_report(out, plan, merged, argv=self.job.argv)
        section = {k: report[k] for k in ("checks", "roundtrip_checked", "stress")}
        section["entry_points"] = plan.options.get("entry_points")
        section["counts"] = merged["counts"].as_dict()
        section["warm_engine_notes"] = merged["warm"]
        if report.get("notes"):
            section["notes"] = report["notes"]
        return {"check": section, "reports": {"Metamorphic checks": CHECK_FILE}}

    def empty(self, totals: Counts) -> str | None:
        if not self.corpus_samples:
            return f"the corpus produced no samples ({', '.join(self.corpora or [DEFAULT_CORPUS])})"
        return None


def entry_point_plan(engine: str, checks: list[str]) -> dict[str, Any]:
    """Which spec drives which entry point of ``engine``: ``default`` (the one it drives),
    ``api`` (every other declared one, for the api check) and ``stress_batch`` (where the big
    batches go: ``SPEC?entry=batch`` when the spec does not already send a batch through the
    library's batch call in one call, else None: the engine itself, or no batch call at all)."""
    from verify.engines.vocab_loading import entry_specs

    default, others = entry_specs(engine) if {"api", "stress"} & set(checks) else (None, {})
    return {"default": default, "api": others if "api" in checks else {},
            "stress_batch": others.get("batch") if "stress" in checks else None}


def entry_point_specs(entry_points: dict[str, Any]) -> list[str]:
    """The engines an entry-point plan adds to the run, in a fixed order, each once."""
    specs = list((entry_points.get("api") or {}).values()) + [entry_points.get("stress_batch")]
    return list(dict.fromkeys(s for s in specs if s))


def merge_shards(plan, store, markers) -> dict[str, Any]:
    """The committed shards' extras merged: property counts, stress report, warm-engine notes."""
    from verify.adversarial.checks.metamorphic import CheckCounts

    counts, corpus_samples, roundtrip = CheckCounts(), 0, False
    stress_parts: list[dict[str, Any]] = []
    warm = {"isolated": False, "worker_restarts": 0, "warnings": []}
    for index, extra in store.extras(markers):
        shard_counts = CheckCounts.from_dict(extra["check"])
        counts.add(shard_counts)
        roundtrip = roundtrip or extra["roundtrip"]
        if "stress" in extra:
            stress_parts.append(extra["stress"])
        else:
            corpus_samples += shard_counts.samples
        w = extra["warm"]
        warm["isolated"] = warm["isolated"] or w["isolated"]
        warm["worker_restarts"] += w["worker_restarts"]
        warm["warnings"] += [x for x in w["warnings"] if x not in warm["warnings"]]
    stress = merge_stress(stress_parts) if "stress" in plan.options["checks"] else None
    return {"counts": counts, "corpus_samples": corpus_samples, "roundtrip": roundtrip, "stress": stress,
            "warm": warm, "bad_records": store.totals(markers).bad_records}


def merge_stress(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One stress report from its phases' reports (``StressCheck.run``): what they ran, summed."""
    merged: dict[str, Any] = {"batches": [], "threshold": None, "seconds": 0.0, "violations": {},
                              "findings_written": {}, "samples": 0}
    notes: list[str] = []
    for part in parts:
        merged["batches"] += part.get("batches", [])
        if "batches_engine" in part:
            merged["batches_engine"] = part["batches_engine"]
        for phase in ("threshold", "families", "state"):
            if phase in part:
                merged[phase] = part[phase]
        merged["seconds"] = round(merged["seconds"] + part["seconds"], 3)
        merged["samples"] += part["samples"]
        for name in ("violations", "findings_written"):
            for prop, n in part[name].items():
                merged[name][prop] = merged[name].get(prop, 0) + n
        notes += part.get("notes", [])
    if notes:
        merged["notes"] = notes
    return merged


def write_report(out: Path, plan, merged: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """``OUT/check.json``: what was checked, every count, the stress report."""
    from verify import atomic
    from verify.rundir.attempts import read_attempts

    attempts = read_attempts(out)
    checks = plan.options["checks"]
    stress = merged["stress"]
    notes = list(stress.get("notes", [])) if stress else []
    report = {
        "schema": REPORT_SCHEMA,
        "argv": list(argv),
        "engine": plan.identities.get(plan.reference),
        "checks": list(checks),
        "roundtrip_checked": bool(merged["roundtrip"]) and "roundtrip" in checks,
        "sources": plan.sources,
        "started": attempts[0].get("started") if attempts else None,
        "finished": time.time(),
        "counts": merged["counts"].as_dict() | {"bad_records": merged["bad_records"]},
        "stress": stress,
    }
    if notes:
        report["notes"] = notes
    atomic.write_json(RunFolder(out).check, report)
    return report
