"""A hunt: what a command sends through the engines, as a plan of shards.

Every command that sends inputs through engines is a ``Hunt`` run by the one driver
(``verify.pipeline.run.run_plan``; ``verify.driver.run_hunt`` adds triage and reports):

    class UnicodeHunt(Hunt):
        name = "unicode"
        task = staticmethod(unicode_shard)      # runs in a worker: (index, shard, executors, context) -> ShardResult
        def plan(self) -> HuntPlan: ...        # engines, sources, shards, options
        def finish(self, out, plan, store, markers) -> dict: ...   # reads committed shards; the hunt's reports

So every hunt gets the same ``--workers N``, ``--executor ray``, ``--resume --out OUT``,
live status, per-shard commit and ``verify triage OUT``. A hunt's shards are
``verify.corpora.shards.HuntShard`` values, one small class per hunt in the hunt's module
with its typed fields, so they pickle to workers and Ray actors and are saved in
``OUT/plan.json``; everything a shard gives must follow from its fields and the plan's
``options`` (deterministic, so 1, 2 or 3 workers and a resumed run give the same findings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from verify.corpora.shards import Shard
from verify.executors.pool import EngineOptions
from verify.executors.setup import RayOptions

if TYPE_CHECKING:
    from verify.counts import Counts
    from verify.rundir.plan import RunPlan
    from verify.rundir.store import ShardStore


@dataclass
class JobOptions:
    """How a hunt runs, never what it finds: changing any of these on ``--resume`` is allowed."""

    out: Path
    engine: EngineOptions = field(default_factory=EngineOptions)
    workers: int = 1
    executor: str = "local"  # local | ray
    ray: RayOptions | None = None
    ledger: str | None = None  # --ledger DIR or URL (the run hunt): the reference's ids by input key
    progress: bool | None = None
    minimize_budget_s: float = 120.0  # triage after the shards; 0 disables
    resume: bool = False
    argv: list[str] = field(default_factory=list)


@dataclass
class HuntPlan:
    """What a hunt contributes to ``OUT/plan.json``."""

    reference: str
    requested: list[str]  # the candidates as asked for (``all`` included)
    candidates: list[str]  # what that expands to
    sources: list[dict[str, Any]]
    shards: list[Shard]
    options: dict[str, Any]  # every option that changes what a shard gives
    optional: list[str] = field(default_factory=list)  # engines left out (and reported) when they do not load
    corpora: list[str] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)


class Hunt:
    """The base of every hunt; a subclass sets ``name`` and ``task`` and builds its plan."""

    name = "run"
    label = "verify run"
    task: Callable = None  # type: ignore[assignment]  # a top-level function: it pickles by name
    twins = False  # a second copy of every engine in each worker (metamorphic checks)
    reference_required = True  # False: the first spec is no reference (regression cases)
    batch_size = 64
    strict = False

    def plan(self) -> HuntPlan:
        raise NotImplementedError

    def fill_from(self, saved: "RunPlan") -> None:
        """``--resume``: take what the command line left unsaid from the saved plan."""

    def finish(self, out: Path, plan: "RunPlan", store: "ShardStore", markers: dict[int, dict]) -> dict[str, Any]:
        """After the shards (or an interrupted part of them): read what they committed, write
        the hunt's own reports, return its manifest sections (``OUT/hunt.json``)."""
        return {}

    def keep(self) -> Callable[[dict], bool] | None:
        """A filter over the committed findings, in plan order, as they are merged into
        ``divergences.jsonl`` (e.g. one finding per cluster); None keeps every one."""
        return None

    def empty(self, totals: "Counts") -> str | None:
        """Why a finished run that looked at nothing is a mistake (one line), or None."""
        return None
