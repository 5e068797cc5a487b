"""Shard runners: who runs the shards of a run, and where. (An *executor* runs one
engine, ``verify.executors.base``; a *shard runner* runs whole shards on every engine.)

  InlineShards   one after another in this process (``--workers 1``); the engines
                 run as the pool options say (isolated workers, or in this process)
  ProcessShards  N worker processes (``--workers N``), each holding every engine of
                 the run in its own ``EnginePool``, each pulling the next shard when
                 it is done with one. A worker that dies (an in-process engine
                 segfaulted, the worker ran out of memory) is replaced; its shard is
                 run again on a worker whose engines are isolated, so the sample that
                 killed it becomes a finding; a shard that fails twice is reported
                 failed, never counted.

Both run each shard with the run's task (``WorkerSetup.task``, the hunt's function) and
hand every ``ShardResult`` to ``on_result`` in the calling process, which commits it. Engines that thread internally are pinned to an even share of the
cores (``verify.executors.threads``). Engines on a device (a GPU) are not pinned,
get shard batches of at least ``DEVICE_BATCH_SIZE`` samples, and under
``ProcessShards`` live in one device worker per device that every shard worker
feeds (``verify.executors.devices``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import traceback
from collections import deque
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait
from typing import Any, Sequence

from verify.corpora.shards import Shard
from verify.errors import VerifyError
from verify.executors.devices import DeviceWorkers, device_specs
from verify.executors.notes import merge_notes
from verify.executors.pool import EnginePool
from verify.executors.setup import (HarnessError, OnResult, OnStart, RayOptions, ShardError, ShardFailure, Started,
                                    TaskContext, WorkerSetup, open_ledger, start_engines)
from verify.executors.threads import pin_threads
PREFETCH = 2  # shards in flight per worker: the next one waits in its pipe while the driver commits

__all__ = ["HarnessError", "InlineShards", "OnResult", "OnStart", "ProcessShards", "RayOptions", "ShardError",
           "ShardFailure", "Started", "WorkerSetup", "default_workers", "make_shard_runner"]


class InlineShards:
    def __init__(self, setup: WorkerSetup):
        self.setup = setup
        self.pool: EnginePool | None = None
        self.executors: list = []
        self.failures: list[ShardFailure] = []  # never any: a failure here ends the run
        self.events: list[str] = []

    def start(self) -> Started:
        devices = device_specs(self.setup.specs)
        self.setup = self.setup.for_devices(devices)
        self.engines = start_engines(self.setup, devices)
        self.pool, self.executors = self.engines.pool, self.engines.executors
        ledger = open_ledger(self.setup, self.executors[0]) if self.executors else None
        self.context = TaskContext(self.setup, "inline", ledger)
        return Started(self.engines.identities(), dict(self.engines.not_loaded), self.engines.specs())

    def run(self, tasks: Sequence[tuple[int, Shard]], on_result: OnResult, on_start: OnStart) -> None:
        for index, shard in tasks:
            on_start(index)
            on_result(self.setup.run(index, shard, self.executors, self.context))

    def notes(self) -> dict[str, dict[str, Any]]:
        return self.engines.notes() if self.pool else {}

    def close(self) -> None:
        if self.pool:
            self.engines.close()


# --- worker processes ---------------------------------------------------------------

def _worker_main(conn, setup: WorkerSetup, name: str) -> None:
    pin_threads(setup.engine_options.threads)
    try:
        engines = start_engines(setup)
    except BaseException as exc:
        conn.send(("load-failed", str(exc) if isinstance(exc, VerifyError) else f"{type(exc).__name__}: {exc}",
                   isinstance(exc, VerifyError)))
        return
    executors = engines.executors
    try:
        context = TaskContext(setup, name, open_ledger(setup, executors[0]) if executors else None)
        conn.send(("ready", engines.identities(), dict(engines.not_loaded), engines.specs()))
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return  # the driver is gone
            if message[0] == "shard":
                _, index, shard = message
                try:
                    result = setup.run(index, shard, executors, context)
                    conn.send(("result", result))
                except VerifyError as exc:
                    conn.send(("shard-error", index, str(exc), True))
                except Exception:
                    conn.send(("shard-error", index, traceback.format_exc(limit=8), False))
            elif message[0] == "notes":
                conn.send(("notes", engines.notes()))
            elif message[0] == "close":
                return
    except KeyboardInterrupt:
        return
    finally:
        engines.close()


@dataclass
class _Worker:
    name: str
    proc: Any
    conn: Any
    setup: WorkerSetup
    tasks: deque = field(default_factory=deque)  # shards handed to it, oldest (the one it runs) first
    ready: bool = False

    @property
    def isolated(self) -> bool:
        return self.setup.engine_options.isolate


class ProcessShards:
    def __init__(self, setup: WorkerSetup, workers: int):
        self.setup = setup
        self.count = max(1, workers)
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []
        self._started: Started | None = None
        self._serial = 0
        self.failures: list[ShardFailure] = []
        self.events: list[str] = []  # worker deaths and retries, for the manifest
        self.device_workers: DeviceWorkers | None = None

    def _start_devices(self) -> dict[str, str]:
        """The device workers, before any shard worker: returns the optional device engines
        that did not load. Shard workers then reach the device engines through them."""
        devices = device_specs(self.setup.specs)
        if not devices:
            return {}
        self.device_workers = DeviceWorkers(devices, self.setup.optional, self.setup.engine_options)
        endpoints, not_loaded = self.device_workers.start()
        self.setup = replace(self.setup.for_devices(devices), device_endpoints=endpoints,
                             specs=tuple(s for s in self.setup.specs if s not in not_loaded))
        return not_loaded

    def _spawn(self, setup: WorkerSetup) -> _Worker:
        parent, child = self._ctx.Pipe()
        self._serial += 1
        name = f"worker-{self._serial}"
        # not a daemon: a worker starts its own engine worker processes; it exits when the driver
        # goes away (its pipe closes), and close() kills what is left
        proc = self._ctx.Process(target=_worker_main, args=(child, setup, name), daemon=False, name=name)
        proc.start()
        child.close()
        worker = _Worker(name, proc, parent, setup)
        self._workers.append(worker)
        return worker

    def _await_ready(self, worker: _Worker) -> Started:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            worker.proc.join(5)
            raise VerifyError(f"a worker died while starting its engines (exit code {worker.proc.exitcode})") from None
        if message[0] == "load-failed":
            _, text, expected = message
            raise VerifyError(text) if expected else HarnessError(f"worker failed to start: {text}")
        _, identities, not_loaded, specs = message
        worker.ready = True
        return Started(identities, not_loaded, specs)

    def start(self) -> Started:
        """Start every worker; each loads every engine. All must agree on what loaded."""
        try:
            device_not_loaded = self._start_devices()
            for _ in range(self.count):
                self._spawn(self.setup)
            for worker in self._workers:
                started = self._await_ready(worker)
                if self._started is None:
                    self._started = started
                elif started.specs != self._started.specs:
                    raise HarnessError(f"workers loaded different engines ({started.specs} vs {self._started.specs})")
        except BaseException:
            self.close()
            raise
        self._started.not_loaded.update(device_not_loaded)
        return self._started

    def run(self, tasks: Sequence[tuple[int, Shard]], on_result: OnResult, on_start: OnStart) -> None:
        pending = deque(tasks)
        retry: deque = deque()  # shards whose worker died: only for workers with isolated engines
        deaths: dict[int, int] = {}
        while pending or retry or any(w.tasks for w in self._workers):
            for worker in self._workers:
                while worker.ready and len(worker.tasks) < PREFETCH:
                    queue = retry if retry and worker.isolated else pending
                    if not queue:
                        break
                    task = queue.popleft()
                    worker.tasks.append(task)
                    on_start(task[0])
                    worker.conn.send(("shard", *task))
            busy = [w for w in self._workers if w.tasks]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=5.0)
            for worker in busy:
                if worker.conn in ready:
                    try:
                        message = worker.conn.recv()
                    except (EOFError, OSError):
                        message = None
                    if message is not None:
                        self._handle(worker, message, on_result)
                        continue
                if worker.tasks and (worker.proc.sentinel in ready or not worker.proc.is_alive()):
                    self._replace(worker, pending, retry, deaths)

    def _handle(self, worker: _Worker, message, on_result: OnResult) -> None:
        if message[0] == "result":
            worker.tasks.popleft()
            on_result(message[1])
        elif message[0] == "shard-error":
            _, index, text, expected = message
            worker.tasks.popleft()
            if expected:
                raise ShardError(text)
            raise HarnessError(f"shard {index} failed in {worker.name}: {text}")

    def _replace(self, worker: _Worker, pending: deque, retry: deque, deaths: dict[int, int]) -> None:
        """A worker died running a shard: replace it by one whose engines are isolated and
        run the shard again there, so the sample that killed it becomes a finding. Shards
        that waited behind it go back to the front of the queue."""
        (index, shard), *waiting = worker.tasks
        pending.extendleft(reversed(waiting))
        worker.proc.join(5)
        code = worker.proc.exitcode
        self._workers.remove(worker)
        worker.conn.close()
        isolated = replace(self.setup, engine_options=self.setup.engine_options.with_(isolate=True))
        self._await_ready(self._spawn(isolated))
        deaths[index] = deaths.get(index, 0) + 1
        if deaths[index] >= 2:
            self.failures.append(ShardFailure(index, shard.id, f"its worker died twice (exit code {code})"))
            self.events.append(f"{worker.name} died (exit code {code}) on shard {shard.id} again: shard failed")
        else:
            retry.append((index, shard))
            self.events.append(f"{worker.name} died (exit code {code}) on shard {shard.id}: "
                               "retried with isolated engines")

    def notes(self) -> dict[str, dict[str, Any]]:
        collected = []
        for worker in self._workers:
            if not worker.proc.is_alive():
                continue
            try:
                worker.conn.send(("notes",))
                if worker.conn.poll(60):
                    message = worker.conn.recv()
                    if message[0] == "notes":
                        collected.append(message[1])
            except (EOFError, OSError):
                continue
        merged = merge_notes(collected)
        if self.device_workers is not None:  # each device engine once, from its own worker
            merged.update(self.device_workers.notes())
        return merged

    def close(self) -> None:
        for worker in self._workers:
            try:
                worker.conn.send(("close",))
            except (BrokenPipeError, OSError):
                pass
        for worker in self._workers:
            worker.proc.join(10)
            if worker.proc.is_alive():
                worker.proc.kill()
                worker.proc.join(5)
        self._workers.clear()
        if self.device_workers is not None:
            self.device_workers.close()
            self.device_workers = None


def make_shard_runner(setup: WorkerSetup, workers: int, executor: str = "local", ray: RayOptions | None = None):
    """The shard runner a run asked for: ``local`` (this process, or N worker processes)
    or ``ray`` (actors of a Ray cluster, ``verify.executors.ray_shards``)."""
    if executor == "ray":
        from verify.executors.ray_shards import RayShards

        return RayShards(setup, ray or RayOptions())
    if executor != "local":
        raise VerifyError(f"unknown executor '{executor}' (use local or ray)")
    if workers <= 1:
        return InlineShards(setup)
    return ProcessShards(setup, workers)


def default_workers() -> int:
    return os.cpu_count() or 1
