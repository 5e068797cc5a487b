"""``verify fuzz`` as a function: the hypothesis search and the stress shards of some candidates
against a reference, on the one pipeline (``verify.adversarial.fuzz.hunt.FuzzHunt``)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from verify.adversarial.fuzz.hunt import DEFAULT_DATABASE, DEFAULT_MAX_FINDINGS, FuzzHunt, FuzzResult, run_fuzz
from verify.allowlist import Allowlist
from verify.pipeline.hunt import JobOptions


def fuzz_job(reference: str, candidates: list[str], job: JobOptions, *, max_examples: int | None = None,
             budget_s: float | None = None, seed: int | None = None, database_dir: Path | None = DEFAULT_DATABASE,
             max_findings: int | None = DEFAULT_MAX_FINDINGS, allowlist: Allowlist | None = None,
             tags: list | None = None, stress: bool | None = True, stress_cuts: Sequence[int] | None = None,
             long_max: int | None = None) -> FuzzResult:
    """Fuzz ``candidates`` against ``reference`` into ``job.out``: findings (one per cluster),
    manifest (its ``fuzz`` section: rounds, clusters, stress), summary. ``database_dir=None`` keeps
    no example database; ``tags`` are the known-cluster rules (default ``adversarial/tags.toml``);
    ``stress_cuts`` the chunking thresholds of the stress shards. With ``job.resume``, options left
    ``None`` (``database_dir``: left at its default) are the run's saved ones."""
    hunt = FuzzHunt(reference, candidates, job, max_examples=max_examples, budget_s=budget_s, seed=seed,
                    database_dir=database_dir, max_findings=max_findings, allowlist=allowlist, tags=tags,
                    stress=stress, stress_cuts=stress_cuts, long_max=long_max)
    return run_fuzz(hunt, job)
