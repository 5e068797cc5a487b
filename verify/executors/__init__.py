"""Executors decide where an engine runs: in this process (``local``) or in an
isolated worker process; ``EnginePool`` starts them with one set of options;
shard executors (``workers``) run whole shards in parallel worker processes.
Each turns a batch into one outcome per sample (``verify.outcome``), never an exception."""

from verify.executors.base import Executor
from verify.executors.local import LocalExecutor
from verify.executors.pool import EngineOptions, EnginePool

__all__ = ["EngineOptions", "EnginePool", "Executor", "LocalExecutor"]
