"""The one driver of every command that sends inputs through engines: a hunt's shards
on the pipeline, then triage, then the reports -- each stage reading what the one before
committed.

    run_hunt(hunt, JobOptions(...)) -> RunResult
    run_job(RunOptions(...)) -> RunResult          # verify run / replay: the corpus hunt

Interrupted (Ctrl-C), the reports are rendered from what was committed and the
``KeyboardInterrupt`` goes on (exit 130; ``--resume`` continues). A run that looked at
nothing (an empty corpus) is a ``CorpusError`` after its reports are written.
"""

from __future__ import annotations

from typing import Callable

from verify.errors import CorpusError, storage_error
from verify.pipeline.corpus import CorpusHunt, RunOptions
from verify.pipeline.hunt import Hunt, JobOptions
from verify.pipeline.run import RunResult, run_plan
from verify.reports.render import render_reports

Triage = Callable[[Hunt, JobOptions], object]


def default_triage(hunt: Hunt, job: JobOptions) -> object:
    from verify.triage import run_triage

    return run_triage(job.out, engine=job.engine, budget_s=job.minimize_budget_s)


def run_hunt(hunt: Hunt, job: JobOptions, triage: Triage | None = default_triage) -> RunResult:
    """``triage``: the stage after the shards -- None: none; the default (cluster and minimise)
    only when ``job.minimize_budget_s`` is above 0; a hunt's own (shadow's, whose clusters are its
    verdict) always, with the budget its hunt was given. A full disk is a ``DiskFullError`` naming
    OUT, a read-only one or one without permission a ``NotWritableError``: the shards committed
    before it stay for ``--resume``. OUT is locked throughout (``verify.rundir.lock``)."""
    from verify.rundir.lock import out_lock
    from verify.rundir.paths import folder_to_write

    try:
        folder_to_write(job.out, "--out")
        with out_lock(job.out):  # one writer per OUT: a second --resume of it stops, naming this process
            return _run_hunt(hunt, job, triage)
    except OSError as exc:
        refused = storage_error(exc, job.out)
        if refused is None:
            raise
        raise refused from exc


def _run_hunt(hunt: Hunt, job: JobOptions, triage: Triage | None) -> RunResult:
    if triage is default_triage and job.minimize_budget_s <= 0:
        triage = None
    if triage is not None:
        from verify.classify import load_tags

        load_tags()  # a bad adversarial/tags.toml fails before any work
    result = run_plan(hunt, job)
    if result.interrupted:
        render_reports(job.out)
        raise result.interruption or KeyboardInterrupt()  # as it came: Ctrl-C, or SIGTERM's Terminated
    if result.empty:
        render_reports(job.out)
        raise CorpusError(result.empty)
    if triage is not None:
        triage(hunt, job)
    result.manifest = render_reports(job.out)
    result.complete = result.manifest["complete"]
    return result


def run_job(opts: RunOptions) -> RunResult:
    """``verify run`` (and ``verify replay`` with traces): the corpus hunt, triage, reports."""
    return run_hunt(CorpusHunt(opts), opts.job())


__all__ = ["JobOptions", "RunOptions", "RunResult", "run_hunt", "run_job", "render_reports"]
