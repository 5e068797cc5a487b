"""``verify check`` as a function: the metamorphic checks of one engine on the pipeline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.adversarial.checks.hunt import CheckHunt
from verify.adversarial.checks.metamorphic import CheckCounts
from verify.counts import Counts
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.layout import RunFolder


@dataclass
class CheckResult:
    out: Path
    counts: Counts  # one state per sample (corpus and stress), bad records, findings
    report: dict[str, Any]  # OUT/check.json
    complete: bool = True

    @property
    def check(self) -> CheckCounts:
        """Per property: how often it was checked and violated."""
        return CheckCounts.from_dict(self.report["counts"])

    @property
    def passed(self) -> bool:
        return self.complete and self.counts.all_verified


def check_job(engine: str, job: JobOptions, *, corpora: list[str], text_field: str | None = None,
              id_field: str | None = None, limit: int | None = None, batch_size: int | None = 32,
              checks: list[str] | None = None, roundtrip: bool | None = None,
              stress_budget_s: float | None = None, reference: str | None = None,
              stress_phases: list[str] | None = None) -> CheckResult:
    """Every check in ``checks`` (default all, ``stress`` included) of ``engine`` over ``corpora``
    into ``job.out``. ``roundtrip``: None checks it where the engine is a byte-level decoder,
    False never. ``stress_budget_s``: seconds for each stress phase (default 60). On
    ``job.resume``, what is None (or empty) here is taken from the saved plan. ``reference``: the
    engine whose ids are right (None: the one for ``engine``'s vocabulary when known; ``""``: none)."""
    hunt = CheckHunt(engine, job, corpora=corpora, text_field=text_field, id_field=id_field, limit=limit,
                     batch_size=batch_size, checks=checks, roundtrip=roundtrip, stress_budget_s=stress_budget_s,
                     reference=reference, stress_phases=stress_phases)
    result = run_hunt(hunt, job)
    report = json.loads(RunFolder(job.out).check.read_text(encoding="utf-8"))
    return CheckResult(job.out, result.counts, report, result.complete)
