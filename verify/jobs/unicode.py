"""``verify unicode`` as a function: the Unicode-table sweep of some candidates."""

from __future__ import annotations

from verify.adversarial.unicode.contexts import MAX_CP
from verify.adversarial.unicode.hunt import UnicodeHunt, merged_results
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.plan import load_plan
from verify.rundir.store import ShardStore


def unicode_job(reference: str, requested: list[str], job: JobOptions, *, start: int = 0,
                stop: int = MAX_CP + 1) -> tuple[list, dict[str, str]]:
    """One Unicode sweep of every candidate against ``reference`` into ``job.out`` (``all``
    expands to every installed engine on the reference's vocabulary; those that do not
    load are left out and returned with why). Returns the ``SweepResult``s and the
    engines that did not load."""
    run_hunt(UnicodeHunt(reference, requested, job, start=start, stop=stop), job, triage=None)
    plan = load_plan(job.out)
    store = ShardStore(job.out)
    return merged_results(plan, store, store.committed([s.id for s in plan.shards])), dict(plan.not_loaded)
