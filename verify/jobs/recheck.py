"""``verify recheck`` as a function: the regression cases replayed on the pipeline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.adversarial.regressions.cases import RegressionCase
from verify.adversarial.regressions.hunt import RecheckHunt
from verify.counts import Counts
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.layout import RunFolder


@dataclass
class RecheckResult:
    out: Path
    counts: Counts  # every replayed case one sample (verified: as recorded)
    report: dict[str, Any]  # as written to OUT/recheck.json
    complete: bool = True

    @property
    def results(self) -> list[dict[str, Any]]:
        """One result per case, in case order (``ReplayResult.to_json`` with its ``verdict``)."""
        return self.report["results"]


def recheck_job(cases: list[RegressionCase], job: JobOptions, *, allow_unavailable: bool = False,
                cases_dir: Path | str | None = None) -> RecheckResult:
    """Replay every ``RegressionCase`` of ``cases`` into ``job.out`` (no triage: a case is no
    finding). ``allow_unavailable``: a case whose engine cannot start is reported, not counted."""
    hunt = RecheckHunt(cases, job, allow_unavailable=allow_unavailable, cases_dir=cases_dir)
    result = run_hunt(hunt, job, triage=None)
    report = json.loads(RunFolder(job.out).recheck.read_text(encoding="utf-8"))
    return RecheckResult(job.out, result.counts, report, result.complete)
