"""``verify replay --edits N`` as a hunt on the one pipeline: hypothesis edit scripts
(``verify.adversarial.fuzz.sessions``) against stateful candidates.

The shards are candidate x seed-slice: each candidate's N examples are cut into slices of
``EXAMPLES_PER_SLICE``, each searched by hypothesis from its own seed -- the first slice from
``--seed`` itself (so ``--edits N`` up to one slice searches exactly as before), slice ``i``
from ``slice_seed(seed, i)`` -- so what a shard finds follows from its fields alone (``EditsShard``). A
slice stops at its first counterexample and shrinks it: one finding per slice at most,
committed as a record (a session finding that triage shrinks to a (prefix, append) pair).
Every edit script tried is one sample: diverged when it is the slice's counterexample, else
verified. A slice that ran into its time budget says so (``capped``).

The reference encodes each transcript; a candidate without sessions is a ``UsageError``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.corpora.shards import HuntShard
from verify.counts import Counts
from verify.errors import UsageError
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.result import ShardResult

EXAMPLES_PER_SLICE = 50
MAX_EDITS = 100_000  # --edits' ceiling: 2,000 slices (shards) per engine
SLICE_BUDGET_S = 120.0  # a cap on one slice's search (it stops early only when the budget ends)
SOURCE = "edits"


@dataclass(frozen=True, kw_only=True)
class EditsShard(HuntShard):
    """Examples ``start`` to ``stop - 1`` of ``candidate``'s edit-script search, searched from
    hypothesis seed ``seed``; label ``edits:SPEC#SLICE``."""

    kind = "edits"
    candidate: str
    seed: int


def slice_seed(seed: int, index: int) -> int:
    """The hypothesis seed of slice ``index``: ``seed`` itself for the first slice."""
    if index == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"edits:{seed}:{index}".encode()).digest()[:8], "big")


def edits_shard(index: int, shard: EditsShard, executors: list, context) -> ShardResult:
    """The task: one seed-slice of the edit-script search against one candidate."""
    from verify.adversarial.checks.hunt import ResultWriter
    from verify.adversarial.fuzz.sessions import fuzz_sessions

    reference = executors[0]
    spec = shard.candidate
    (candidate,) = [ex for ex in executors[1:] if ex.spec == spec]
    if not candidate.capabilities.sessions:
        raise UsageError(f"{spec} has no sessions: --edits needs a stateful engine")
    result = ShardResult(index, shard.id, Counts(), worker=context.worker)
    found = fuzz_sessions(reference, candidate, ResultWriter(result), max_examples=shard.stop - shard.start,
                          seed=shard.seed, budget_s=context.params["slice_budget_s"], source=SOURCE)
    counts = result.counts
    n_found = len(found.findings)
    counts.samples = found.examples  # one edit script = one sample
    counts.findings = len(result.records)
    counts.states["diverged"] = n_found
    counts.states["verified"] = found.examples - n_found
    counts.engine(spec).update(verified=found.examples - n_found, diverged=n_found)
    result.seconds = found.seconds
    result.extra = {"candidate": spec, "seed": shard.seed, "examples": found.examples,
                    "findings": n_found, "seconds": round(found.seconds, 3), "capped": found.capped}
    return result


class EditsHunt(Hunt):
    name = "replay-edits"
    label = "verify replay-edits"
    task = staticmethod(edits_shard)

    def __init__(self, reference: str | None, engines: list[str], job: JobOptions, *, examples: int | None,
                 seed: int | None = 0, per_slice: int = EXAMPLES_PER_SLICE):
        self.reference, self.engines, self.job = reference, list(engines), job
        self.examples, self.seed, self.per_slice = examples, seed, per_slice

    def fill_from(self, saved) -> None:
        self.reference = self.reference or saved.reference
        self.engines = self.engines or list(saved.requested)
        if self.examples is None:
            self.examples = saved.options.get("examples")
        if self.seed is None:
            self.seed = saved.options.get("seed")

    def plan(self) -> HuntPlan:
        from verify.engines.catalogue import engine_values

        self.reference, self.engines = engine_values(self.reference, self.engines)
        if not self.reference or not self.engines:
            raise UsageError("--edits needs --reference SPEC and at least one --engine SPEC")
        if self.reference in self.engines:
            raise UsageError(f"'{self.reference}' is both the reference and an --engine")
        if not self.examples or not 1 <= self.examples <= MAX_EDITS:
            raise UsageError(f"--edits must be from 1 to {MAX_EDITS:,}")
        seed = self.seed or 0
        shards = []
        for spec in self.engines:
            for i, start in enumerate(range(0, self.examples, self.per_slice)):
                stop = min(start + self.per_slice, self.examples)
                shards.append(EditsShard(SOURCE, label=f"edits:{spec}#{i}", start=start, stop=stop, candidate=spec,
                                         seed=slice_seed(seed, i)))
        options = {"examples": self.examples, "seed": seed, "examples_per_slice": self.per_slice,
                   "slice_budget_s": SLICE_BUDGET_S, "timeout_s": self.job.engine.timeout_s,
                   "memory_limit_mb": self.job.engine.memory_limit_mb}
        source = {"name": f"edit scripts (seed {seed})", "kind": "edits", "examples": self.examples}
        return HuntPlan(self.reference, list(self.engines), list(self.engines), [source], shards, options)

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        return {"edits": edits_section(plan, store, markers)}


def edits_section(plan, store, markers) -> dict[str, Any]:
    """The manifest's ``edits`` section: per candidate, edit scripts tried, findings, seconds."""
    engines: dict[str, dict[str, Any]] = {}
    for _, extra in store.extras(markers):
        info = engines.setdefault(extra["candidate"], {"examples": 0, "findings": 0, "seconds": 0.0, "capped": 0})
        info["examples"] += extra["examples"]
        info["findings"] += extra["findings"]
        info["seconds"] = round(info["seconds"] + extra["seconds"], 3)
        info["capped"] += bool(extra["capped"])  # slices the time budget ended early
    return {"seed": plan.options["seed"], "max_examples": plan.options["examples"],
            "examples_per_slice": plan.options["examples_per_slice"], "engines": engines}
