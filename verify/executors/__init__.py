"""Executors decide where an engine runs: in this process (``local``) or in an
isolated worker process. Each turns a batch into one outcome per sample:
a uint32 id array or a ``Failure``, never an exception."""

from verify.executors.local import LocalExecutor

__all__ = ["LocalExecutor"]
