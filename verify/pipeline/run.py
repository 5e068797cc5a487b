"""The shard loop of the one driver (``verify.driver``): plan (or resume) a hunt, run its
pending shards on the shard runner, commit each as it comes back, merge, let the hunt write
its reports.

    run_plan(hunt, JobOptions) -> RunResult

Engines and sources are resolved before any work starts, so a bad spec or a missing file
fails fast with one clear error. While shards run, the manifest (marked incomplete) and
``OUT/status`` say how far the run got; a kill at any point leaves every committed shard
in place for ``--resume``. Triage and the rendered reports come after, in
``verify.driver`` (they read what this committed, never the live workers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from verify.counts import Counts
from verify.errors import UsageError
from verify.executors.setup import RayOptions, RunnerCannotStart, WorkerSetup
from verify.executors.threads import threads_per_worker
from verify.executors.workers import make_shard_runner
from verify.pipeline.hunt import Hunt, JobOptions
from verify.rundir.attempts import append_attempt, read_attempts
from verify.rundir.manifest import committed_manifest, run_manifest, write_hunt, write_manifest
from verify.rundir.paths import folder_to_write
from verify.rundir.layout import RunFolder
from verify.rundir.plan import RunPlan, check_same_engines, check_same_run, load_plan
from verify.rundir.result import ShardResult
from verify.rundir.status import ProgressScope, RunStatus, executor_label
from verify.rundir.store import ShardStore

RAY_LOG = "ray.log"  # Ray's own messages (--executor ray), kept off the terminal
MANIFEST_EVERY_S = 1.0


@dataclass
class RunResult:
    counts: Counts
    out: Path
    manifest: dict
    complete: bool
    interrupted: bool = False
    empty: str | None = None  # why a run that looked at nothing is a mistake (the hunt's words)
    interruption: BaseException | None = None  # the KeyboardInterrupt (or SIGTERM's Terminated) that stopped it


def prepare_out(out: Path, resume: bool) -> RunPlan | None:
    """The saved plan on ``--resume``; refuses a file (or a path under one), or a folder that already
    holds a run."""
    out = folder_to_write(out, "--out")
    if resume:
        return load_plan(out)
    folder = RunFolder(out)
    if out.is_dir() and any(path.exists() for path in (folder.plan, folder.manifest, folder.findings)):
        raise UsageError(f"--out {out} already holds a run: continue it with --resume {out}, or choose another --out")
    return None


def make_plan(hunt: Hunt) -> RunPlan:
    hp = hunt.plan()
    return RunPlan(hunt.name, hp.reference, list(hp.requested), list(hp.candidates), sorted(hp.optional),
                   list(hp.corpora), hp.sources, hp.shards, hp.options, traces=list(hp.traces))


def run_plan(hunt: Hunt, job: JobOptions) -> RunResult:
    saved = prepare_out(job.out, job.resume)
    if saved is not None:
        if saved.hunt != hunt.name:
            raise UsageError(f"--resume {job.out}: that folder holds a 'verify {saved.hunt}' run, not "
                             f"'{hunt.label}'")
        hunt.fill_from(saved)
    plan = make_plan(hunt)
    if saved is not None:
        check_same_run(saved, plan, job.out)
    engine = job.engine
    if engine.threads is None and job.workers > 1:
        engine = engine.with_(threads=threads_per_worker(job.workers))
    setup = WorkerSetup(tuple(plan.specs), tuple(plan.optional), engine, hunt.task,
                        plan.options.get("batch_size", hunt.batch_size), bool(plan.options.get("strict", hunt.strict)),
                        job.ledger, params=dict(plan.options), twins=hunt.twins,
                        reference_required=hunt.reference_required)
    ray = replace(job.ray or RayOptions(), log_file=str(job.out / RAY_LOG)) if job.executor == "ray" else job.ray
    runner = make_shard_runner(setup, job.workers, job.executor, ray)
    # OUT/status from now on; workers started from here inherit the heartbeat folder
    progress = ProgressScope(job.out, len(plan.shards), f"{hunt.label} [{executor_label(job.executor, job.workers)}]")
    try:
        started = runner.start()
    except RunnerCannotStart as exc:  # workers died starting, again and again: exit 1 and a manifest
        progress.end()
        return _not_started(hunt, job, plan, runner, str(exc), resumed=saved is not None)
    except BaseException:  # an engine that does not load: leave no half-made OUT
        progress.end(failed=saved is None)
        raise
    try:
        if saved is not None:
            check_same_engines(saved.identities, started.identities, job.out)
            if started.specs != saved.specs:
                raise UsageError(f"--resume {job.out}: other engines loaded than when the run started "
                                 f"({', '.join(started.specs)} vs {', '.join(saved.specs)})")
        plan.candidates = started.specs[1:] if plan.reference else list(started.specs)
        plan.identities = started.identities
        plan.not_loaded = started.not_loaded
        job.out.mkdir(parents=True, exist_ok=True)
        plan.save(job.out)
        ledger = None
        if job.ledger:
            from verify.ledger import Ledger

            ledger = Ledger.open(job.ledger, plan.identities[plan.reference])
        return _run_shards(hunt, job, plan, runner, resumed=saved is not None, ledger=ledger)
    finally:
        runner.close()
        progress.end()


def _begin_attempt(job: JobOptions, resumed: bool, markers: dict) -> int:
    attempt = len(read_attempts(job.out)) + 1
    append_attempt(job.out, {"attempt": attempt, "started": time.time(), "argv": job.argv, "resumed": resumed,
                             "workers": job.workers, "shards_committed_before": len(markers)})
    return attempt


def _not_started(hunt: Hunt, job: JobOptions, plan: RunPlan, runner, why: str, resumed: bool) -> RunResult:
    """No worker could start: the plan (with no identities, so a resume is not refused for
    them), one attempt whose every uncommitted shard failed with ``why``, and the manifest."""
    out = job.out
    out.mkdir(parents=True, exist_ok=True)
    if not resumed:
        plan.save(out)
    store = ShardStore(out)
    markers = store.committed([s.id for s in plan.shards])
    attempt = _begin_attempt(job, resumed, markers)
    failed = [{"index": i, "shard": s.id, "reason": why} for i, s in enumerate(plan.shards) if i not in markers]
    append_attempt(out, {"attempt": attempt, "finished": time.time(), "interrupted": False, "shards_run": 0,
                         "shards_redone": 0, "failed": failed, "events": [*runner.events, why], "engine_notes": {}})
    RunStatus(out, len(plan.shards), len(markers), label=hunt.label, terminal=False).write("incomplete")
    manifest = finalise(out, hunt, plan)
    return RunResult(store.totals(markers), out, manifest, manifest["complete"])


def _run_shards(hunt: Hunt, job: JobOptions, plan: RunPlan, runner, resumed: bool, ledger=None) -> RunResult:
    out = job.out
    store = ShardStore(out)
    markers = store.committed([s.id for s in plan.shards])
    started_before = store.started()
    attempt = _begin_attempt(job, resumed, markers)
    pending = [(i, s) for i, s in enumerate(plan.shards) if i not in markers]
    redone = sum(1 for i, _ in pending if i in started_before)
    totals = store.totals(markers)
    committed = len(markers)
    interrupted = False
    interruption: BaseException | None = None
    ledger_stats: dict[str, int] = {}
    last_manifest = [0.0]

    def live_manifest(force: bool = False) -> None:
        now = time.monotonic()
        if force or now - last_manifest[0] >= MANIFEST_EVERY_S:
            last_manifest[0] = now
            write_manifest(out, run_manifest(plan=plan, counts=totals.as_dict(), committed=committed,
                                             attempts=read_attempts(out), live=True))

    where = executor_label(job.executor, job.workers)
    with RunStatus(out, len(plan.shards), committed, label=f"{hunt.label} [{where}]", terminal=job.progress) as status:
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
            status.shard_done(result.counts, totals.findings, result.shard_id)
            live_manifest()

        live_manifest(force=True)
        try:
            runner.run(pending, on_result, store.mark_started)
        except KeyboardInterrupt as exc:
            interrupted, interruption = True, exc
        notes = runner.notes() if not interrupted else {}
        status.write("interrupted" if interrupted else "complete" if committed == len(plan.shards) else "incomplete")
    failed = [{"index": f.index, "shard": f.shard_id, "reason": f.reason} for f in runner.failures]
    append_attempt(out, {"attempt": attempt, "finished": time.time(), "interrupted": interrupted,
                         "shards_run": committed - len(markers), "shards_redone": redone, "failed": failed,
                         "events": list(runner.events), "engine_notes": notes,
                         **({"ledger": {"root": job.ledger, **ledger_stats}} if ledger is not None else {})})
    manifest = finalise(out, hunt, plan)
    empty = hunt.empty(totals) if not interrupted and not failed else None
    return RunResult(totals, out, manifest, manifest["complete"], interrupted, empty, interruption)


def finalise(out: Path, hunt: Hunt | None = None, plan: RunPlan | None = None) -> dict[str, Any]:
    """Merge the committed findings into ``divergences.jsonl`` (through the hunt's filter), let the
    hunt write its reports from the committed shards, and write the manifest."""
    plan = plan or load_plan(out)
    store = ShardStore(out)
    markers = store.committed([s.id for s in plan.shards])
    store.merge(markers, RunFolder(out).findings, hunt.keep() if hunt is not None else None)
    if hunt is not None:
        write_hunt(out, hunt.finish(out, plan, store, markers))
    manifest = committed_manifest(out, plan, store, markers)
    write_manifest(out, manifest)
    return manifest
