"""``verify replay --edits N`` as a function: hypothesis edit scripts against stateful candidates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.adversarial.fuzz.edits_hunt import EditsHunt
from verify.counts import Counts
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.manifest import read_hunt


@dataclass
class EditsResult:
    out: Path
    counts: Counts  # one sample per edit script tried
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)  # per candidate: examples, findings, seconds
    complete: bool = True

    @property
    def found(self) -> int:
        return self.counts.findings


def edits_job(reference: str, engines: list[str], job: JobOptions, *, examples: int,
              seed: int = 0) -> EditsResult:
    """``examples`` edit scripts per candidate of ``engines`` (each stateful), searched from
    ``seed``, into ``job.out``; triage (``job.minimize_budget_s``) shrinks what they found."""
    hunt = EditsHunt(reference, engines, job, examples=examples, seed=seed)
    result = run_hunt(hunt, job)
    section = read_hunt(job.out).get("edits") or {}
    return EditsResult(job.out, result.counts, dict(section.get("engines") or {}), result.complete)
