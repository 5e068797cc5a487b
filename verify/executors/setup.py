"""What a shard runner needs to know, and what every worker is handed.

    WorkerSetup   the engines of a run, how they start, and the *task*: the hunt's function
                  ``task(index, shard, executors, context) -> ShardResult`` that runs one
                  shard on them (a top-level function, so it pickles by name to worker
                  processes and Ray actors). Shard runners reach the hunt only through it.
    TaskContext   one per worker: the setup, the worker's name, the reference's ledger, and
                  a cache a task may keep between the shards of one worker (a vocabulary,
                  a probe set) -- never results, which travel in the ``ShardResult``.
    start_engines every engine of the run in this process's ``EnginePool`` (two pools for a
                  hunt that compares an engine with a second copy of itself).
    RayOptions    ``--executor ray``: where the cluster is and how its actors are sized
                  (reaching it: ``verify.executors.ray_cluster``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from verify.errors import VerifyError
from verify.executors.devices import DeviceEndpoint, DeviceExecutor, device_batch_size
from verify.executors.notes import merge_notes
from verify.executors.pool import EngineOptions, EnginePool

if TYPE_CHECKING:
    from verify.corpora.shards import Shard
    from verify.rundir.result import ShardResult


OnResult = Callable[["ShardResult"], None]  # the driver's commit of one shard's result
OnStart = Callable[[int], None]  # a shard (by plan index) was handed to a worker


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker needs to start its engines and run shards (picklable)."""

    specs: tuple[str, ...]  # the reference first
    optional: tuple[str, ...]
    engine_options: EngineOptions
    task: Callable[..., "ShardResult"] | None = None  # the hunt's shard task
    batch_size: int = 64
    strict: bool = False
    ledger_root: str | None = None  # --ledger: where the reference's recorded results are
    device_endpoints: tuple[DeviceEndpoint, ...] = ()  # engines that live in a device worker
    params: dict[str, Any] = field(default_factory=dict, hash=False)  # the hunt's options (plan.options)
    twins: bool = False  # a second copy of every engine, from its own pool (the metamorphic checks)
    reference_required: bool = True  # False: no engine is the reference (regression cases name their own)

    def for_devices(self, devices: dict[str, str]) -> "WorkerSetup":
        """With device engines, shard batches are large enough for them."""
        return replace(self, batch_size=device_batch_size(self.batch_size)) if devices else self

    def run(self, index: int, shard: "Shard", executors: list, context: "TaskContext") -> "ShardResult":
        if self.task is None:
            raise VerifyError("this run has no shard task")
        from verify.rundir.status import watched

        # a shard that is no corpus shows its progress through the samples its task sends
        return self.task(index, shard, watched(executors, shard.id, counted=shard.has_records), context)


@dataclass
class TaskContext:
    setup: WorkerSetup
    worker: str = ""
    ledger: Any = None  # verify.ledger.Ledger of the reference, with --ledger
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def params(self) -> dict[str, Any]:
        return self.setup.params


@dataclass
class Started:
    """What the engines said when they started."""

    identities: dict[str, dict[str, Any]]
    not_loaded: dict[str, str]
    specs: list[str]  # the engines that run, reference first


@dataclass
class ShardFailure:
    index: int
    shard_id: str
    reason: str


class HarnessError(Exception):
    """A bug in the harness (not in an engine, not the user's input): exit 3."""


class ShardError(VerifyError):
    """A shard stopped with a user-facing error (``--strict`` and a bad record, say)."""


class RunnerCannotStart(Exception):
    """No worker (or Ray actor) could be started: each died while starting its engines, again
    and again (killed, out of memory). Not configuration (an engine that refuses to load is a
    ``VerifyError``) and not a harness bug: the run ends incomplete, exit 1, with a manifest
    saying why (the runner's ``events``)."""


@dataclass(frozen=True)
class RayOptions:
    """``--executor ray``: where the cluster is and how its actors are sized."""

    address: str | None = None  # None: a local Ray on this machine's cores
    actors: int | None = None  # engine actors (default: the cluster's CPUs // cpus_per_actor)
    cpus_per_actor: float = 1.0
    log_file: str | None = None  # where Ray's own messages go (the driver sets OUT/ray.log), never the terminal


class Engines:
    """The engines of one worker: its pool (and the twin pool), the executors in order."""

    def __init__(self, pools: list[EnginePool], executors: list):
        self.pools, self.executors = pools, executors

    @property
    def pool(self) -> EnginePool:
        return self.pools[0]

    @property
    def not_loaded(self) -> dict[str, str]:
        return self.pool.not_loaded

    def identities(self) -> dict[str, dict[str, Any]]:
        return self.pool.identities()

    def specs(self) -> list[str]:
        n = len(self.executors) // len(self.pools)
        return [ex.spec for ex in self.executors[:n]]

    def notes(self) -> dict[str, dict[str, Any]]:
        return merge_notes([pool.notes() for pool in self.pools[:1]])

    def close(self) -> None:
        for pool in self.pools:
            pool.close()


def start_engines(setup: WorkerSetup, devices: dict[str, str] | None = None) -> Engines:
    """Every engine of the run; those of ``setup.device_endpoints`` are reached in their device
    worker, those of ``devices`` (spec -> device) start here, unpinned. With ``twins`` a second
    pool starts the engines that loaded again, each its own copy."""
    pools: list[EnginePool] = []
    try:
        pool = EnginePool(setup.engine_options, devices=dict(devices or {}))
        pools.append(pool)
        for endpoint in setup.device_endpoints:
            pool.executors[endpoint.spec] = DeviceExecutor(endpoint)
        executors = pool.start(setup.specs, optional=setup.optional)
        if setup.reference_required and (not executors or executors[0].spec != setup.specs[0]):
            raise VerifyError(f"the reference '{setup.specs[0]}' did not start")
        if setup.twins:
            twin = EnginePool(setup.engine_options, devices=dict(devices or {}))
            pools.append(twin)
            executors = executors + twin.start([ex.spec for ex in executors])
    except BaseException:
        for pool in pools:
            pool.close()
        raise
    return Engines(pools, executors)


def open_ledger(setup: WorkerSetup, reference):
    """The reference's ledger for a worker (None without --ledger)."""
    if not setup.ledger_root:
        return None
    from verify.ledger import Ledger

    return Ledger.open(setup.ledger_root, reference.identity().as_dict())
