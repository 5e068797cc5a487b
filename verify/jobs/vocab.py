"""``verify vocab sweep`` as a function: every token of the reference's vocabulary as text,
through the reference and every candidate, on the one pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.adversarial.vocab.hunt import VocabHunt
from verify.adversarial.vocab.sweep import DEFAULT_BATCH, DEFAULT_MAX_FINDINGS, DEFAULT_PAIRS
from verify.counts import Counts
from verify.driver import run_hunt
from verify.pipeline.hunt import JobOptions
from verify.rundir.plan import load_plan


@dataclass
class VocabResult:
    out: Path
    counts: Counts  # every sample of the committed shards; ``findings``: those in divergences.jsonl
    parts: dict[str, dict[str, Any]]  # part -> its statistics (the manifest's ``vocab_sweep`` section)
    not_loaded: dict[str, str]  # engines swept in by ``all`` that did not load, and why


def vocab_job(reference: str | None, requested: list[str] | None, job: JobOptions, *,
              parts: list[str] | None = None, limit: int | None = None, pairs: int | None = DEFAULT_PAIRS,
              seed: int | None = 0, batch_size: int | None = DEFAULT_BATCH,
              max_findings: int | None = DEFAULT_MAX_FINDINGS, shard_samples: int | None = None) -> VocabResult:
    """One vocabulary sweep into ``job.out``: shards, then triage (when ``job.minimize_budget_s``
    is above 0), then the reports. ``parts``: some of tokens, pairs, special (None: all);
    ``limit``: the first N token ids; ``pairs``: random partners per token; ``max_findings``:
    findings kept per candidate and part. None for any of these means the default, or on
    ``job.resume`` the value the run was started with; ``shard_samples`` (about how many
    samples a shard holds) is for tests."""
    hunt = VocabHunt(reference, requested, job, parts=parts, limit=limit, pairs=pairs, seed=seed,
                     batch_size=batch_size, max_findings=max_findings, shard_samples=shard_samples)
    result = run_hunt(hunt, job)
    manifest = result.manifest
    return VocabResult(job.out, Counts.from_dict(manifest["counts"]), dict(manifest.get("vocab_sweep") or {}),
                       dict(load_plan(job.out).not_loaded))
