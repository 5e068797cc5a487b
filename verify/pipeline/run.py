"""The run driver: plan (or resume) a run, run its pending shards, commit each as it
comes back, finalise, triage, report.

    run_job(RunOptions) -> RunResult

Engines and sources are resolved before any work starts, so a bad spec or a
missing file fails fast with one clear error. While shards run, the manifest
(marked incomplete) and ``OUT/status`` say how far the run got; a kill at any
point leaves every committed shard in place for ``--resume``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.corpora import open_corpus
from verify.corpora.shards import apply_limit
from verify.counts import Counts
from verify.errors import CorpusError, UsageError
from verify.executors.isolated import DEFAULT_TIMEOUT_S
from verify.executors.pool import EngineOptions
from verify.executors.threads import threads_per_worker
from verify.executors.workers import RayOptions, WorkerSetup, make_shard_executor
from verify.pipeline.plan import PLAN_FILE, RunPlan, check_same_engines, check_same_run, load_plan
from verify.pipeline.sessions import append_session, read_sessions
from verify.pipeline.shard_task import ShardResult
from verify.pipeline.status import RunStatus
from verify.pipeline.store import ShardStore
from verify.reports.manifest import run_manifest, write_manifest

FINDINGS_FILE = "divergences.jsonl"
MANIFEST_EVERY_S = 1.0


@dataclass
class RunOptions:
    reference: str | None
    candidates: list[str] | None
    corpora: list[str] | None
    out: Path
    text_field: str | None = None
    id_field: str | None = None
    limit: int | None = None
    batch_size: int | None = None
    sample_rate: float | None = None
    sample_seed: int | None = None
    strict: bool | None = None
    isolate: bool = True
    timeout_s: float | None = None
    memory_limit_mb: int | None = None
    workers: int = 1
    executor: str = "local"  # local | ray
    ray: RayOptions | None = None
    corpus_root: str | None = None  # where named corpora with a root (nemotron-cc) live
    where: dict[str, str] = field(default_factory=dict)  # partition filters (--where quality=high)
    ledger: str | None = None  # --ledger DIR or URL: the reference's ids by input key
    traces: list[str] | None = None  # agent traces to replay turn by turn (--traces PATH|agent:SEED)
    trace_format: str | None = None
    trace_template: str | None = None  # chat template name or .toml (default: the reference's family)
    progress: bool | None = None
    minimize_budget_s: float = 120.0  # seconds for triage (cluster + minimise findings); 0 disables
    resume: bool = False
    argv: list[str] = field(default_factory=list)

    def output_options(self) -> dict[str, Any]:
        return {"text_field": self.text_field, "id_field": self.id_field, "limit": self.limit,  # None: the source's
                "batch_size": self.batch_size or 64, "sample_rate": self.sample_rate,
                "sample_seed": self.sample_seed or 0, "strict": bool(self.strict),
                "timeout_s": self.timeout_s or DEFAULT_TIMEOUT_S, "memory_limit_mb": self.memory_limit_mb,
                "where": dict(sorted(self.where.items())), "trace_format": self.trace_format,
                "trace_template": self.trace_template}

    def engine_options(self) -> EngineOptions:
        return EngineOptions(isolate=self.isolate, timeout_s=self.timeout_s or DEFAULT_TIMEOUT_S,
                             memory_limit_mb=self.memory_limit_mb)


@dataclass
class RunResult:
    counts: Counts
    out: Path
    manifest: dict
    complete: bool


def expand_candidates(reference: str, candidates: list[str]) -> tuple[list[str], set[str]]:
    """Replace ``all`` by every named engine (engines/*.toml) on the reference's
    vocabulary whose package is installed. Returns the specs and which came from ``all``."""
    from verify.config import named_engines
    from verify.engines.registry import adapters, parse_spec

    if "all" not in candidates:
        return candidates, set()
    ref = parse_spec(reference)
    swept = [name for name, spec in sorted(named_engines().items())
             if spec.target == ref.target and name != ref.text and (spec.adapter, spec.options) != (ref.adapter, ref.options)
             and spec.adapter in adapters() and adapters()[spec.adapter].installed()]
    explicit = [c for c in candidates if c != "all"]
    return explicit + [s for s in swept if s not in explicit], set(swept) - set(explicit)


def _fill_from(saved: RunPlan, opts: RunOptions) -> None:
    """A resume takes what the command line left unsaid from the saved plan."""
    opts.reference = opts.reference or saved.reference
    opts.candidates = opts.candidates or saved.requested
    opts.corpora = opts.corpora or saved.corpora
    opts.traces = opts.traces or saved.traces
    o = saved.options
    for name in ("text_field", "id_field", "limit", "batch_size", "sample_rate", "sample_seed", "strict",
                 "timeout_s", "memory_limit_mb", "trace_format", "trace_template"):
        if getattr(opts, name) is None:
            setattr(opts, name, o.get(name))
    if not opts.where:
        opts.where = dict(o.get("where") or {})


def build_plan(opts: RunOptions) -> RunPlan:
    from verify.config import run_defaults

    defaults = run_defaults()
    opts.reference = opts.reference or defaults.get("reference")
    opts.candidates = opts.candidates or list(defaults.get("candidates", []))
    opts.corpora = opts.corpora if opts.corpora is not None else [] if opts.traces else \
        [defaults.get("corpus", "default")]
    if not opts.candidates:
        raise UsageError("no candidate engine: pass --candidate SPEC")
    if opts.reference in opts.candidates:
        raise UsageError(f"'{opts.reference}' is both the reference and a candidate")
    candidates, swept = expand_candidates(opts.reference, opts.candidates)
    if not candidates:
        raise UsageError(f"'all' found no installed engine on the vocabulary of {opts.reference}")
    options = opts.output_options()
    sources, shards = [], []
    for corpus in opts.corpora:
        source = open_corpus(corpus, options["text_field"], options["id_field"], root=opts.corpus_root,
                             where=opts.where)
        listed = source.shards()
        if opts.sample_rate is not None:
            from dataclasses import replace

            listed = [replace(s, sample_rate=opts.sample_rate, sample_seed=options["sample_seed"]) for s in listed]
        shards.extend(apply_limit(listed, opts.limit))
        sources.append(source.describe())
    for traces in opts.traces or []:
        from verify.corpora.traces import open_traces

        source = open_traces(traces, opts.trace_format, template=opts.trace_template, reference=opts.reference)
        shards.extend(apply_limit(source.shards(), opts.limit))
        sources.append(source.describe())
    return RunPlan(opts.reference, list(opts.candidates), candidates, sorted(swept), list(opts.corpora), sources,
                   shards, options, traces=list(opts.traces or []))


def _prepare_out(opts: RunOptions) -> RunPlan | None:
    out = opts.out
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a directory")
    if opts.resume:
        saved = load_plan(out)
        _fill_from(saved, opts)
        return saved
    if out.is_dir() and any((out / name).exists() for name in (PLAN_FILE, "manifest.json", FINDINGS_FILE)):
        raise UsageError(f"--out {out} already holds a run: continue it with --resume {out}, or choose another --out")
    return None


def run_job(opts: RunOptions) -> RunResult:
    saved = _prepare_out(opts)
    plan = build_plan(opts)
    if saved is not None:
        check_same_run(saved, plan, opts.out)
    if opts.minimize_budget_s > 0:
        from verify.classify import load_tags

        load_tags()  # a bad adversarial/tags.toml fails before any work
    engine = opts.engine_options()
    if engine.threads is None and opts.workers > 1:
        engine = engine.with_(threads=threads_per_worker(opts.workers))
    setup = WorkerSetup(tuple(plan.specs), tuple(plan.optional), engine, plan.options["batch_size"],
                        plan.options["strict"], opts.ledger)
    executor = make_shard_executor(setup, opts.workers, opts.executor, opts.ray)
    started_engines = executor.start()
    try:
        if saved is not None:
            check_same_engines(saved.identities, started_engines.identities, opts.out)
            if started_engines.specs != [saved.reference, *saved.candidates]:
                raise UsageError(f"--resume {opts.out}: other engines loaded than when the run started "
                                 f"({', '.join(started_engines.specs)} vs {', '.join([saved.reference, *saved.candidates])})")
        plan.candidates = started_engines.specs[1:]
        plan.identities = started_engines.identities
        plan.not_loaded = started_engines.not_loaded
        opts.out.mkdir(parents=True, exist_ok=True)
        plan.save(opts.out)
        ledger = None
        if opts.ledger:
            from verify.ledger import Ledger

            ledger = Ledger.open(opts.ledger, plan.identities[plan.reference])
        return _run_shards(opts, plan, executor, resumed=saved is not None, ledger=ledger)
    finally:
        executor.close()


def _run_shards(opts: RunOptions, plan: RunPlan, executor, resumed: bool, ledger=None) -> RunResult:
    out = opts.out
    store = ShardStore(out)
    shard_ids = [s.id for s in plan.shards]
    markers = store.committed(shard_ids)
    started_before = store.started()
    session = len(read_sessions(out)) + 1
    append_session(out, {"session": session, "started": time.time(), "argv": opts.argv, "resumed": resumed,
                         "workers": opts.workers, "shards_committed_before": len(markers)})
    pending = [(i, s) for i, s in enumerate(plan.shards) if i not in markers]
    redone = sum(1 for i, _ in pending if i in started_before)
    totals = store.totals(markers)
    committed = len(markers)
    interrupted = False
    ledger_stats: dict[str, int] = {}
    last_manifest = [0.0]

    def live_manifest(force: bool = False) -> None:
        now = time.monotonic()
        if force or now - last_manifest[0] >= MANIFEST_EVERY_S:
            last_manifest[0] = now
            write_manifest(out, run_manifest(plan=plan, counts=totals.as_dict(), committed=committed,
                                             sessions=read_sessions(out), live=True))

    where = "ray" if opts.executor == "ray" else f"local x{opts.workers}"
    with RunStatus(out, len(plan.shards), committed, label=f"verify run [{where}]", terminal=opts.progress) as status:
        def on_result(result: ShardResult) -> None:
            nonlocal committed
            if ledger is not None and result.ledger_entries:  # before the commit: a resume then finds them
                from verify.ledger import partition_of

                ledger.append(partition_of(result.shard_id), result.ledger_entries)
            for name, n in result.ledger_stats.items():
                ledger_stats[name] = ledger_stats.get(name, 0) + n
            store.commit(result)
            totals.add(result.counts)
            committed += 1
            status.shard_done(result.counts, totals.findings)
            live_manifest()

        live_manifest(force=True)
        try:
            executor.run(pending, on_result, store.mark_started)
        except KeyboardInterrupt:
            interrupted = True
        notes = executor.notes() if not interrupted else {}
        status.write("interrupted" if interrupted else "complete" if committed == len(plan.shards) else "incomplete")
    failed = [{"index": f.index, "shard": f.shard_id, "reason": f.reason} for f in executor.failures]
    append_session(out, {"session": session, "finished": time.time(), "interrupted": interrupted,
                         "shards_run": committed - len(markers), "shards_redone": redone, "failed": failed,
                         "events": list(executor.events), "engine_notes": notes,
                         **({"ledger": {"root": opts.ledger, **ledger_stats}} if ledger is not None else {})})
    manifest = finalise(out, plan)
    if interrupted:
        raise KeyboardInterrupt
    if totals.samples == 0 and totals.bad_records == 0 and not failed:
        raise CorpusError(f"the corpus produced no samples ({', '.join(plan.corpora + plan.traces)})")
    if opts.minimize_budget_s > 0:
        from verify.triage import run_triage

        run_triage(out, engine=opts.engine_options(), budget_s=opts.minimize_budget_s)
        manifest = render_reports(out)
    return RunResult(totals, out, manifest, manifest["complete"])


def finalise(out: Path, plan: RunPlan | None = None) -> dict[str, Any]:
    """Merge the committed findings into ``divergences.jsonl`` and render the reports."""
    plan = plan or load_plan(out)
    store = ShardStore(out)
    markers = store.committed([s.id for s in plan.shards])
    store.merge(markers, out / FINDINGS_FILE)
    return render_reports(out, plan)


def render_reports(out: Path, plan: RunPlan | None = None) -> dict[str, Any]:
    """manifest.json, summary.md, report.html and ci-summary.md, from the committed files alone."""
    from verify.reports.markdown import write_run_summary

    plan = plan or load_plan(out)
    store = ShardStore(out)
    markers = store.committed([s.id for s in plan.shards])
    manifest = run_manifest(plan=plan, counts=store.totals(markers).as_dict(), committed=len(markers),
                            sessions=read_sessions(out))
    from verify.triage import read_triage_info

    triage_info = read_triage_info(out)
    if triage_info is not None:
        manifest["triage"] = triage_info
    write_manifest(out, manifest)
    write_run_summary(out, manifest)
    from verify.reports.ci_markdown import write_ci_summary
    from verify.reports.html import write_html
    from verify.reports.report_data import load_report

    report = load_report(out)
    write_html(out, report)
    write_ci_summary(out, report)
    return manifest
