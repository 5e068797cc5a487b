"""``verify length sweep`` as a function: every probe family grown to ``max_chars``, the first
divergent length bisected, the cut probed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.adversarial.length.hunt import LengthHunt
from verify.counts import Counts
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.layout import RunFolder


@dataclass
class LengthResult:
    out: Path
    counts: Counts
    report: dict[str, Any]  # length.json
    not_loaded: dict[str, str]
    complete: bool


def length_job(reference: str | None, requested: list[str] | None, job: JobOptions, *,
               max_chars: int | None = None, kinds: list[str] | None = None,
               families: list[str] | None = None) -> LengthResult:
    from verify.rundir.plan import load_plan

    result = run_hunt(LengthHunt(reference, requested, job, max_chars=max_chars, kinds=kinds, families=families), job)
    report = json.loads(RunFolder(job.out).length.read_text(encoding="utf-8"))
    return LengthResult(job.out, result.counts, report, dict(load_plan(job.out).not_loaded), result.complete)
