"""Device engines (``capabilities.device`` other than "cpu"): one worker process per device.

A GPU engine held by each of N shard workers would load its kernels and tables
N times onto one device and see N streams of small batches. Instead, before the
shard workers start, ``DeviceWorkers`` starts one process per device holding
that device's engines in its own ``EnginePool`` (isolated as the run says, and
never thread-pinned: ``EngineOptions.for_device``). Shard workers reach those
engines through ``DeviceExecutor``, an ``Executor`` whose calls go over a local
socket, so the shard task feeds a device engine like any other engine. The
device worker merges encode requests that wait for the same engine into one
call (up to ``MERGED_MAX_SAMPLES`` samples), and runs with shard batches of at
least ``DEVICE_BATCH_SIZE`` samples.

Where an engine runs is known before it loads (``declared_device``): the spec's
``device`` option (``toktier:VOCAB?device=cuda``) or its adapter's class-level
``capabilities``. A device worker that dies takes its engines with it: every
later sample of theirs is a ``crash`` failure (never counted as verified).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import shutil
import tempfile
import threading
from dataclasses import dataclass
from multiprocessing.connection import Client, Listener, wait
from typing import Any, Sequence

from verify.engine_spec import EngineSpec
from verify.errors import VerifyError
from verify.executors.base import ExecutorBase
from verify.executors.lifeline import Lifeline, kill_tree
from verify.executors.pool import EngineOptions, EnginePool
from verify.executors.threads import unpin_threads
from verify.outcome import Failure, FindingKind, Outcome
from verify.sample import Sample

CPU = "cpu"
DEVICE_BATCH_SIZE = 1024  # shard batches when a device engine runs (the run's --batch-size if larger)
MERGED_MAX_SAMPLES = 8192  # encode requests merged into one device call, at most
MERGED_MAX_CHARS = 1 << 24
REPLY_TIMEOUT_S = 1800.0  # a device worker that answers nothing for this long is taken for hung


def declared_device(spec: EngineSpec) -> str:
    """Where ``spec``'s engine runs, without loading it: its ``device`` option when that
    names one ("auto" counts as the CPU), else its adapter's class-level capabilities."""
    from verify.engines.registry import adapters

    if not isinstance(spec, EngineSpec):  # text naming no engine known here: it fails to start, saying why
        return CPU
    try:
        option = str(spec.options.get("device", CPU)).lower()
        if option not in (CPU, "auto"):
            return option
        entry = adapters().get(spec.adapter)
        return entry.load().capabilities.device if entry is not None else CPU
    except VerifyError:
        return CPU  # an engine that cannot load says why when it is started


def device_specs(specs: Sequence[EngineSpec]) -> dict[EngineSpec, str]:
    """``{spec: device}`` for the engines that do not run on the CPU."""
    return {spec: device for spec in specs if (device := declared_device(spec)) != CPU}


def device_batch_size(batch_size: int) -> int:
    return max(batch_size, DEVICE_BATCH_SIZE)


@dataclass(frozen=True)
class DeviceEndpoint:
    spec: str
    device: str
    address: str  # the device worker's socket


# --- the shard worker's side ---------------------------------------------------------------

class DeviceExecutor(ExecutorBase):
    """An engine of a device worker, seen from a shard worker."""

    def __init__(self, endpoint: DeviceEndpoint):
        self.spec = endpoint.spec
        self.device = endpoint.device
        self._conn = Client(endpoint.address, family="AF_UNIX", authkey=mp.current_process().authkey)
        self._dead: str | None = None
        self._key = f"{os.getpid()}.{id(self)}"  # session keys of different shard workers never meet
        self._pending = 0
        self._in_flight = False  # an encode was sent and its reply not read yet
        self._early: tuple | None = None  # that reply, read early because another call came first
        status, value = self._call("describe", None)
        if status != "ok":
            raise VerifyError(f"the {self.device} worker of '{self.spec}' did not answer: {value}")
        self.capabilities, self._identity, self.timeout_s = value

    def _send(self, op: str, payload) -> None:
        if self._dead is None:
            try:
                self._conn.send((op, self.spec, payload))
            except (BrokenPipeError, OSError) as exc:
                self._dead = f"the {self.device} worker is gone ({exc})"

    def _receive(self):
        if self._dead is not None:
            return "crash", self._dead
        try:
            if not self._conn.poll(REPLY_TIMEOUT_S):
                self._dead = f"the {self.device} worker answered nothing for {REPLY_TIMEOUT_S:g} s"
                return "timeout", self._dead
            status, value = self._conn.recv()
        except (EOFError, OSError) as exc:
            self._dead = f"the {self.device} worker died ({type(exc).__name__})"
            return "crash", self._dead
        if status == "error":  # a bug in the harness, not in the engine
            raise RuntimeError(f"{self.device} worker, engine '{self.spec}': {value}")
        return status, value

    def _call(self, op: str, payload):
        if self._in_flight:  # replies come in order: keep the encode's for collect()
            self._early, self._in_flight = self._receive(), False
        self._send(op, payload)
        return self._receive()

    def _failures(self, status: str, why: str, count: int) -> list[Outcome]:
        kind = "timeout" if status == "timeout" else "crash"
        return [Failure(kind, "DeviceWorkerDied" if kind == FindingKind.CRASH else "Timeout", why)] * count

    def _submit(self, samples: list[Sample]) -> None:
        self._pending = len(samples)
        self._send("encode", samples)
        self._in_flight = True

    def _collect(self) -> list[Outcome]:
        status, value = self._early if self._early is not None else self._receive()
        self._early, self._in_flight = None, False
        count, self._pending = self._pending, 0
        return value if status == "ok" else self._failures(status, value, count)

    def _encode_concurrent(self, samples: list[Sample], threads: int) -> list[list[Outcome]]:
        status, value = self._call("encode_concurrent", (samples, threads))
        return value if status == "ok" else [self._failures(status, value, len(samples))] * threads

    def token_bytes(self, ids):
        if not self.capabilities.decode:
            return None
        status, value = self._call("token_bytes", ids)
        return value if status == "ok" else None

    def _session(self, op: str, payload):
        status, value = self._call(op, payload)
        return value if status == "ok" else self._failures(status, value, 1)[0]

    def open_session(self, key: str, state: bytes | None = None):
        if not self.capabilities.sessions:
            return self._no_sessions()
        return self._session("open_session", (f"{self._key}:{key}", state))

    def session_append(self, key: str, segments):
        return self._session("session_append", (f"{self._key}:{key}", list(segments)))

    def session_state(self, key: str):
        return self._session("session_state", (f"{self._key}:{key}",))

    def close_session(self, key: str) -> None:
        if self.capabilities.sessions:
            self._session("close_session", (f"{self._key}:{key}",))

    def identity(self):
        return self._identity

    def run_notes(self) -> dict[str, Any]:
        return {"device_worker": self.device}  # the engine's own notes come once, from DeviceWorkers.notes()

    def close(self) -> None:
        self._conn.close()


# --- the device worker ---------------------------------------------------------------------

def _answer(pool: EnginePool, op: str, spec: str, payload):
    executor = pool.executors[spec]
    if op == "describe":
        return executor.capabilities, executor.identity(), executor.timeout_s
    if op == "encode_concurrent":
        return executor.encode_concurrent(*payload)
    if op == "token_bytes":
        return executor.token_bytes(payload)
    if op in ("open_session", "session_append", "session_state", "close_session"):
        return getattr(executor, op)(*payload)
    raise ValueError(f"unknown request '{op}'")


def _reply(conn, message) -> None:
    try:
        conn.send(message)
    except (BrokenPipeError, OSError):
        pass  # that shard worker is gone; its replacement connects anew


def _encode_merged(executor, requests: list[tuple[Any, list[Sample]]]) -> None:
    """The requests waiting for one engine, in merged calls of bounded size."""
    while requests:
        group, samples, chars = [], [], 0
        while requests and (not group or (len(samples) + len(requests[0][1]) <= MERGED_MAX_SAMPLES
                                          and chars <= MERGED_MAX_CHARS)):
            conn, batch = requests.pop(0)
            group.append((conn, len(batch)))
            samples.extend(batch)
            chars += sum(len(seg.text) for s in batch for seg in s.segments)
        try:
            outcomes = executor.encode(samples)
        except Exception as exc:  # executors never raise for engine failures: this is a harness bug
            for conn, _ in group:
                _reply(conn, ("error", f"{type(exc).__name__}: {exc}"))
            continue
        start = 0
        for conn, size in group:
            _reply(conn, ("ok", outcomes[start:start + size]))
            start += size


def _serve(listener: Listener, pool: EnginePool, control) -> None:
    wake_r, wake_w = os.pipe()
    arrived: queue.SimpleQueue = queue.SimpleQueue()

    def accept() -> None:
        while True:
            try:
                arrived.put(listener.accept())
            except (OSError, EOFError):
                return
            os.write(wake_w, b"x")

    threading.Thread(target=accept, daemon=True).start()
    clients: list = []
    while True:
        ready = wait([control, wake_r, *clients])
        if wake_r in ready:
            os.read(wake_r, 4096)
            while not arrived.empty():
                clients.append(arrived.get())
        if control in ready:
            try:
                message = control.recv()
            except (EOFError, OSError):
                return  # the driver is gone
            if message == "notes":
                control.send(("notes", pool.notes()))
            elif message == "close":
                return
        encodes: dict[str, list] = {}
        for conn in [c for c in clients if c in ready]:
            try:
                op, spec, payload = conn.recv()
            except (EOFError, OSError):
                clients.remove(conn)
                continue
            if op == "encode":
                encodes.setdefault(spec, []).append((conn, payload))
                continue
            try:
                _reply(conn, ("ok", _answer(pool, op, spec, payload)))
            except Exception as exc:
                _reply(conn, ("error", f"{type(exc).__name__}: {exc}"))
        for spec, requests in encodes.items():
            _encode_merged(pool.executors[spec], requests)


def _device_main(control, address: str, specs: tuple[str, ...], optional: tuple[str, ...],
                 options: EngineOptions, device: str, lifeline: Lifeline) -> None:
    lifeline.hold()  # it ends with the driver, however the driver ends
    unpin_threads()  # whatever the parent's environment says: a device engine threads as it likes
    pool = EnginePool(options.for_device(device), devices={spec: device for spec in specs})
    try:
        pool.start(specs, optional=optional)
        listener = Listener(address, family="AF_UNIX", authkey=mp.current_process().authkey)
    except BaseException as exc:
        pool.close()
        control.send(("load-failed", str(exc) if isinstance(exc, VerifyError) else f"{type(exc).__name__}: {exc}",
                      isinstance(exc, VerifyError)))
        return
    try:
        control.send(("ready", dict(pool.not_loaded)))
        _serve(listener, pool, control)
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()
        pool.close()


# --- the driver's side ---------------------------------------------------------------------

class DeviceWorkers:
    """One device worker per device for the device engines of a run."""

    def __init__(self, devices: dict[str, str], optional: Sequence[str], options: EngineOptions):
        self.devices = devices  # spec -> device
        self.optional = tuple(s for s in optional if s in devices)
        self.options = options
        self._ctx = mp.get_context("spawn")
        self._dir = tempfile.mkdtemp(prefix="verify-device-")
        self._workers: list[tuple[str, Any, Any]] = []  # (device, process, control pipe)

    def start(self) -> tuple[tuple[DeviceEndpoint, ...], dict[str, str]]:
        """Start every device worker; returns the endpoints of the engines that loaded and
        ``{spec: why}`` for optional ones that did not. A required one that fails raises."""
        endpoints, not_loaded = [], {}
        for number, device in enumerate(sorted(set(self.devices.values()))):
            specs = tuple(s for s, d in self.devices.items() if d == device)
            address = os.path.join(self._dir, f"device-{number}.sock")
            parent, child = self._ctx.Pipe()
            proc = self._ctx.Process(target=_device_main, name=f"device-{device}", daemon=False,
                                     args=(child, address, specs, self.optional, self.options, device,
                                           Lifeline.here()))
            proc.start()
            child.close()
            self._workers.append((device, proc, parent))
            try:
                message = parent.recv()
            except (EOFError, OSError):
                proc.join(5)
                raise VerifyError(f"the {device} worker died while loading its engines "
                                  f"(exit code {proc.exitcode})") from None
            if message[0] == "load-failed":
                _, text, expected = message
                raise VerifyError(text) if expected else RuntimeError(f"{device} worker failed to start: {text}")
            not_loaded.update(message[1])
            endpoints += [DeviceEndpoint(s, device, address) for s in specs if s not in message[1]]
        return tuple(endpoints), not_loaded

    def notes(self) -> dict[str, dict[str, Any]]:
        """The device engines' own run notes (each engine once), marked with their device."""
        out: dict[str, dict[str, Any]] = {}
        for device, proc, conn in self._workers:
            try:
                conn.send("notes")
                if proc.is_alive() and conn.poll(60):
                    _, notes = conn.recv()
                    out.update({spec: {**n, "device_worker": device} for spec, n in notes.items()})
                    continue
            except (EOFError, OSError):
                pass
            out.update({s: {"device_worker": device, "device_worker_died": True}
                        for s, d in self.devices.items() if d == device})
        return out

    def close(self) -> None:
        for _, proc, conn in self._workers:
            try:
                conn.send("close")
            except (BrokenPipeError, OSError):
                pass
        for _, proc, conn in self._workers:
            proc.join(10)
            if proc.is_alive():
                kill_tree(proc)
                proc.join(5)
            conn.close()
        self._workers.clear()
        shutil.rmtree(self._dir, ignore_errors=True)
