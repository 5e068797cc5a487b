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
                 Speculating (``EngineOptions.speculate``, a ledger run): the worker is
                 the crash boundary even for isolated engines. Its engines run in its own
                 process (no texts and ids between processes per batch), each call under the
                 hang deadline (``verify.executors.call_deadline``); a worker that crashes or
                 passes the deadline is replaced as above, and its shard runs again with
                 isolated engines, which attribute the crash or hang to its sample. With
                 ``--workers 1`` that is one worker process.

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
from verify.executors.call_deadline import HANG_SIGNAL
from verify.executors.devices import DeviceWorkers, device_specs
from verify.executors.lifeline import Lifeline, kill_tree
from verify.executors.notes import merge_notes
from verify.executors.pool import EnginePool
from verify.executors.setup import (HarnessError, OnResult, OnStart, RayOptions, RunnerCannotStart, ShardError,
                                    ShardFailure, Started, TaskContext, WorkerSetup, open_ledger, start_engines)
from verify.executors.threads import pin_threads

PREFETCH = 2  # shards in flight per worker: the next one waits in its pipe while the driver commits
MAX_WORKERS = 4096  # the most shard worker processes (or Ray actors, or CPUs per actor) a run may ask for
SHARD_DEATHS = 2  # a shard whose worker died this many times is failed, never counted
SLOT_DEATHS = 3  # a worker slot whose workers die this many times in a row (no shard done between) is given up

__all__ = ["HarnessError", "InlineShards", "OnResult", "OnStart", "ProcessShards", "RayOptions", "RunnerCannotStart",
           "ShardError", "ShardFailure", "Started", "WorkerSetup", "default_workers", "make_shard_runner"]


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

def _worker_main(conn, setup: WorkerSetup, name: str, lifeline: Lifeline) -> None:
    lifeline.hold()  # it ends with the driver, however the driver ends
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
    slot: int  # which of the run's N workers this one is (a replacement takes the dead one's slot)
    proc: Any
    conn: Any
    setup: WorkerSetup
    tasks: deque = field(default_factory=deque)  # shards handed to it, oldest (the one it runs) first
    ready: bool = False
    broken: bool = False  # a shard could not be sent: it is dead or dying, and gets nothing more

    @property
    def isolated(self) -> bool:
        return self.setup.engine_options.isolate


def _exit(code: int | None) -> str:
    if code == -HANG_SIGNAL:  # a speculating worker's engine call passed the hang deadline
        return f"exit code {code}: an engine call passed --timeout"
    return f"exit code {code}" + (" (killed: out of memory?)" if code == -9 else "")


class ProcessShards:
    """A worker that dies at any point -- starting its engines, running a shard, or waiting
    for one -- is replaced by one whose engines are isolated, and the shard it ran runs
    again there (so a sample that crashed an in-process engine becomes a finding); a shard
    whose worker died ``SHARD_DEATHS`` times is failed, never counted. A slot whose workers
    die ``SLOT_DEATHS`` times in a row (no shard done between) is given up: without any
    worker left the shards still waiting fail, and when no worker ever started ``start``
    raises ``RunnerCannotStart`` (the run ends with exit 1 and a manifest, not as a
    configuration error)."""

    def __init__(self, setup: WorkerSetup, workers: int):
        self.setup = setup
        self.count = max(1, workers)
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []
        self._started: Started | None = None
        self._serial = 0
        self._slot_deaths: dict[int, int] = {}  # slot -> its workers' deaths since its last shard done
        self._given_up: list[str] = []  # why slots were given up
        # shard index -> the workers alive when its worker died: a retry goes to a worker started
        # since (its replacement), so two workers killed at once do not cost the shard two deaths
        self._suspects: dict[int, frozenset[str]] = {}
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

    def _spawn(self, setup: WorkerSetup, slot: int) -> _Worker:
        parent, child = self._ctx.Pipe()
        self._serial += 1
        name = f"worker-{self._serial}"
        # not a daemon: a worker starts its own engine worker processes; it ends with the driver
        # (its Lifeline), and close() kills what is left
        proc = self._ctx.Process(target=_worker_main, args=(child, setup, name, Lifeline.here()), daemon=False,
                                 name=name)
        proc.start()
        child.close()
        worker = _Worker(name, slot, proc, parent, setup)
        self._workers.append(worker)
        return worker

    def _isolated(self) -> WorkerSetup:
        return replace(self.setup, engine_options=self.setup.engine_options.with_(isolate=True, speculate=False))

    def start(self) -> Started:
        """Start every worker; each loads every engine. All must agree on what loaded."""
        try:
            device_not_loaded = self._start_devices()
            for slot in range(self.count):
                self._spawn(self.setup, slot)
            while any(not w.ready for w in self._workers):
                for worker, message in self._news([w for w in self._workers if not w.ready]):
                    if message is None:
                        self._died(worker, deque(), deque(), {})
                    elif message[0] == "load-failed":  # an engine refused to load: configuration
                        _, text, expected = message
                        raise VerifyError(text) if expected else HarnessError(f"worker failed to start: {text}")
                    else:
                        self._ready(worker, message)
            if self._started is None:
                raise RunnerCannotStart(f"no worker could start its engines: {self._given_up[-1]}")
        except BaseException:
            self.close()
            raise
        self._started.not_loaded.update(device_not_loaded)
        return self._started

    def _ready(self, worker: _Worker, message) -> None:
        _, identities, not_loaded, specs = message
        started = Started(identities, not_loaded, specs)
        if self._started is None:
            self._started = started
        elif started.specs != self._started.specs:
            raise HarnessError(f"workers loaded different engines ({started.specs} vs {self._started.specs})")
        worker.ready = True

    def _news(self, workers: list[_Worker], timeout: float = 5.0) -> list[tuple[_Worker, Any]]:
        """``(worker, message)`` for each of ``workers`` that said something, ``(worker, None)``
        for each that died (its pipe closed, or its process ended)."""
        ready = wait([w.conn for w in workers] + [w.proc.sentinel for w in workers], timeout=timeout)
        news = []
        for worker in workers:
            if worker.conn in ready:
                try:
                    news.append((worker, worker.conn.recv()))
                    continue
                except (EOFError, OSError):
                    pass
            if worker.conn in ready or worker.proc.sentinel in ready:
                news.append((worker, None))
        return news

    def run(self, tasks: Sequence[tuple[int, Shard]], on_result: OnResult, on_start: OnStart) -> None:
        pending = deque(tasks)
        retry: deque = deque()  # shards whose worker died: for workers with isolated engines
        deaths: dict[int, int] = {}
        while pending or retry or any(w.tasks for w in self._workers):
            if not self._workers:  # every slot was given up: what is left cannot run
                why = f"no worker could be started for it: {self._given_up[-1]}"
                self.failures += [ShardFailure(index, shard.id, why) for index, shard in [*retry, *pending]]
                self.events.append(f"{len(retry) + len(pending)} shards not run: {why}")
                return
            self._hand_out(pending, retry, on_start)
            for worker, message in self._news(list(self._workers)):
                if message is None:
                    self._died(worker, pending, retry, deaths)
                elif message[0] == "ready":
                    self._ready(worker, message)
                elif message[0] == "load-failed":  # a replacement whose engines did not load this time
                    self._died(worker, pending, retry, deaths, why=message[1])
                else:
                    self._handle(worker, message, on_result)

    def _hand_out(self, pending: deque, retry: deque, on_start: OnStart) -> None:
        isolated = any(w.isolated for w in self._workers)  # else a retried shard goes to any worker
        for worker in self._workers:
            while worker.ready and not worker.broken and len(worker.tasks) < PREFETCH:
                task = self._retry_for(worker, retry) if worker.isolated or not isolated else None
                if task is None:
                    if not pending:
                        break
                    task = pending.popleft()
                worker.tasks.append(task)
                on_start(task[0])
                try:
                    worker.conn.send(("shard", *task))
                except (BrokenPipeError, ConnectionResetError, OSError):
                    worker.broken = True  # it is dead or dying: its sentinel says so, then it is replaced
                    kill_tree(worker.proc)

    def _retry_for(self, worker: _Worker, retry: deque) -> tuple[int, Shard] | None:
        """The first retried shard ``worker`` may take: one whose worker died before this one
        started, or any once every live worker was alive at that death (no replacement came)."""
        alive = {w.name for w in self._workers}
        for task in retry:
            suspects = self._suspects.get(task[0], frozenset())
            if worker.name not in suspects or alive <= suspects:
                retry.remove(task)
                return task
        return None

    def _handle(self, worker: _Worker, message, on_result: OnResult) -> None:
        if message[0] == "result":
            worker.tasks.popleft()
            self._slot_deaths.pop(worker.slot, None)
            on_result(message[1])
        elif message[0] == "shard-error":
            _, index, text, expected = message
            worker.tasks.popleft()
            if expected:
                raise ShardError(text)
            raise HarnessError(f"shard {index} failed in {worker.name}: {text}")

    def _died(self, worker: _Worker, pending: deque, retry: deque, deaths: dict[int, int],
              why: str | None = None) -> None:
        """A worker died (or its engines did not load): replace it, with isolated engines, in
        its slot -- unless its slot's workers keep dying -- and run its shard again there.
        Shards that waited behind it go back to the front of the queue."""
        worker.proc.join(5)
        kill_tree(worker.proc)
        worker.proc.join(5)
        self._workers.remove(worker)
        worker.conn.close()
        tasks = list(worker.tasks)
        # the shard it ran: none when it died starting, idle, or before a shard reached it
        ran = tasks[0] if tasks and worker.ready and not (worker.broken and len(tasks) == 1) else None
        pending.extendleft(reversed(tasks[1:] if ran else tasks))
        how = why or _exit(worker.proc.exitcode)
        doing = f"on shard {ran[1].id}" if ran else "while idle" if worker.ready else "while starting its engines"
        deaths_in_slot = self._slot_deaths[worker.slot] = self._slot_deaths.get(worker.slot, 0) + 1
        if ran is not None:
            self._suspects[ran[0]] = frozenset(w.name for w in self._workers)  # before the replacement
        if deaths_in_slot < SLOT_DEATHS:
            self._spawn(self._isolated(), worker.slot)
            replaced = "replaced (engines isolated)"
        else:
            self._given_up.append(f"{worker.name} died {doing} ({how}), its slot's {deaths_in_slot}th death in a row")
            replaced = f"slot given up after {deaths_in_slot} deaths in a row"
        if ran is None:
            self.events.append(f"{worker.name} died {doing} ({how}): {replaced}")
            return
        index, shard = ran
        deaths[index] = deaths.get(index, 0) + 1
        if deaths[index] >= SHARD_DEATHS:
            self.failures.append(ShardFailure(index, shard.id, f"its worker died {deaths[index]} times ({how})"))
            self.events.append(f"{worker.name} died ({how}) on shard {shard.id} again: shard failed; {replaced}")
        else:
            retry.append(ran)
            self.events.append(f"{worker.name} died ({how}) on shard {shard.id}: retried with isolated engines; "
                               f"{replaced}")

    def notes(self) -> dict[str, dict[str, Any]]:
        collected = []
        for worker in self._workers:
            if not worker.ready or not worker.proc.is_alive():
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
            # one still starting its engines, or busy with a shard (Ctrl-C, an error: its result would not be
            # committed), is not waited for
            worker.proc.join(10 if worker.ready and not worker.tasks else 0)
            if worker.proc.is_alive():
                kill_tree(worker.proc)
                worker.proc.join(5)
        self._workers.clear()
        if self.device_workers is not None:
            self.device_workers.close()
            self.device_workers = None


def make_shard_runner(setup: WorkerSetup, workers: int, executor: str = "local", ray: RayOptions | None = None):
    """The shard runner a run asked for: ``local`` (this process, or N worker processes)
    or ``ray`` (actors of a Ray cluster, ``verify.executors.ray_shards``)."""
    options = setup.engine_options
    if options.speculate and options.isolate and executor == "local" and speculating(setup):
        return ProcessShards(replace(setup, engine_options=options.with_(isolate=False)), max(1, workers))
    setup = replace(setup, engine_options=options.with_(speculate=False))  # isolated means isolated there
    if executor == "ray":
        from verify.executors.ray_shards import RayShards

        return RayShards(setup, ray or RayOptions())
    if executor != "local":
        raise VerifyError(f"unknown executor '{executor}' (use local or ray)")
    if workers <= 1:
        return InlineShards(setup)
    return ProcessShards(setup, workers)


def speculating(setup: WorkerSetup) -> bool:
    """Whether shard workers may be the crash boundary of a run that asked for isolated engines:
    not with a memory limit (it is per engine process) nor with engines on a device (they live in
    their device worker)."""
    return setup.engine_options.memory_limit_mb is None and not device_specs(setup.specs)


def default_workers() -> int:
    return os.cpu_count() or 1
