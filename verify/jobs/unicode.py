"""``verify unicode`` as a function: the Unicode-table sweep of some candidates."""

from __future__ import annotations

from verify.adversarial.unicode.hunt import UnicodeHunt, merged_results
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.plan import load_plan
from verify.rundir.store import ShardStore


def unicode_job(reference: str | None, requested: list[str] | None, job: JobOptions, *, start: int | None = None,
                stop: int | None = None, shard_code_points: int | None = None) -> tuple[list, dict[str, str]]:
    """One Unicode sweep of every candidate against ``reference`` into ``job.out`` (None: the
    defaults, or on ``job.resume`` what the run was started with; ``all``
    expands to every installed engine on the reference's vocabulary; those that do not
    load are left out and returned with why), then triage of its failing strings
    (``job.minimize_budget_s``). Returns the ``SweepResult``s and the engines that did not load."""
    run_hunt(UnicodeHunt(reference, requested, job, start=start, stop=stop, shard_size=shard_code_points), job)
    plan = load_plan(job.out)
    store = ShardStore(job.out)
    return merged_results(plan, store, store.committed([s.id for s in plan.shards])), dict(plan.not_loaded)
