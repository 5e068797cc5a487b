"""Run an engine in its own worker process, so that a segfault, abort, OOM kill
or hang in the engine becomes a finding instead of ending the run.

The worker builds the engine from its spec (engines need not pickle) and encodes
with ``encode_outcomes``, so Python exceptions are attributed per sample inside
it. When a batch crashes the worker or passes its deadline, the worker is
replaced and the batch re-run one sample at a time to find the sample(s)
responsible: each gets a ``crash`` or ``timeout`` failure, every other sample its ids.

An engine whose worker *dies* while loading (killed, out of memory) is started again,
``ENGINE_START_ATTEMPTS`` times in all; one that never comes up is a finding for that
engine -- every sample sent to it is a ``crash`` failure (``EngineDidNotStart``), never
verified -- and the run goes on with the others. So is one that hangs while loading: its
constructor has ``start_timeout_s`` (``--load-timeout``), the probe calls made once it is
built (its fingerprint) ``timeout_s`` (``--timeout``); a hang is not tried again. An engine
that *refuses* to load (a bad spec, a missing vocabulary, its constructor raised) is
configuration: ``EngineLoadError``.

Every child process of a run ends with it (``Lifeline``): the engine worker leads its
own process group, so killing it takes whatever the engine started with it. Its stderr goes
to a temporary file named for the executor's process; the files of processes killed before
they could remove theirs are removed by the next executor started on the machine.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import signal
import tempfile
import time
from pathlib import Path

import numpy as np

from verify.engines.base import Capabilities, EngineIdentity
from verify.errors import VerifyError
from verify.limits import MAX_SECONDS
from verify.executors.base import ExecutorBase
from verify.executors.fresh import FreshReplayers
from verify.executors.lifeline import Lifeline, kill_tree, process_gone
from verify.executors.loading import DEFAULT_LOAD_TIMEOUT_S, UNSTARTED, did_not_start, unstarted_identity
from verify.executors.threads import pin_threads
from verify.executors.wire import (pack_expected, pack_outcomes, pack_samples, unpack_expected, unpack_outcomes,
                                   unpack_samples)
from verify.outcome import Failure, Outcome, Recorded
from verify.sample import Sample

DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = MAX_SECONDS  # about 11 days: a wait in milliseconds (poll) overflows at 24.8 days
MAX_MEMORY_MB = 2**30  # a petabyte: setrlimit's bytes overflow near 2**44 MB
STDERR_TAIL = 2000
STDERR_PREFIX = "verify-worker-"  # an engine worker's stderr: verify-worker-PID-*.stderr, PID its executor's
ENGINE_START_ATTEMPTS = 3  # an engine worker that dies while loading is started this many times in all
def _worker_main(conn, spec: str, stderr_path: str, memory_limit_mb: int | None, threads: int | None,
                 lifeline: Lifeline) -> None:
    lifeline.hold(own_group=True)
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 2)
    pin_threads(threads)
    if memory_limit_mb:
        import resource

        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from verify.engines import build_engine
    from verify.executors.local import LocalExecutor

    try:
        executor = LocalExecutor(build_engine(spec))
        conn.send(("built",))  # the load deadline is met; the probes (identity) have the call deadline
        conn.send(("ready", executor.capabilities, executor.identity()))
    except BaseException as exc:  # report why the engine could not load, then exit
        conn.send(("load-failed", type(exc).__name__, str(exc), isinstance(exc, VerifyError)))
        return
    calls = {"encode": lambda p: pack_outcomes(executor.encode_runnable(unpack_samples(p[0]), unpack_expected(p[1]))),
             "encode_concurrent": lambda p: executor._encode_concurrent(*p), "token_bytes": executor.token_bytes,
             "open_session": lambda p: executor.open_session(*p), "session_state": executor.session_state,
             "session_append": lambda p: executor.session_append(*p), "close_session": executor.close_session,
             "run_notes": lambda p: executor.run_notes()}
    while True:
        try:
            op, payload = conn.recv()
        except EOFError:
            return
        if op == "close":
            executor.close()
            return
        conn.send(("ok", calls[op](payload)))


class EngineLoadError(VerifyError):
    """The engine could not be built in its worker."""


class _DiedWhileLoading(Exception):
    """The engine's worker died (or hung: ``hung``) before saying whether the engine loaded."""

    def __init__(self, why: str, hung: bool = False):
        super().__init__(why)
        self.hung = hung


@functools.cache
def _remove_orphaned_stderr() -> None:
    """Once per process: remove the engine workers' stderr files whose executor's process is gone
    (a run killed with -9 cannot remove its own), from the temporary folder."""
    for path in Path(tempfile.gettempdir()).glob(f"{STDERR_PREFIX}*-*.stderr"):
        pid = path.name[len(STDERR_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and process_gone(int(pid)):
            path.unlink(missing_ok=True)


class IsolatedExecutor(ExecutorBase):
    checks_expected = True  # the worker compares ids with the ledger's digests: matching ids stay there

    def __init__(self, spec: str, timeout_s: float = DEFAULT_TIMEOUT_S, memory_limit_mb: int | None = None,
                 threads: int | None = None, start_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S):
        self.spec = spec
        self.timeout_s = timeout_s
        self.memory_limit_mb = memory_limit_mb
        self.threads = threads
        self.start_timeout_s = start_timeout_s
        self.restarts = 0
        self._fresh = FreshReplayers(spec, timeout_s, memory_limit_mb, threads)
        self._ctx = mp.get_context("spawn")
        _remove_orphaned_stderr()
        self._stderr = tempfile.NamedTemporaryFile(prefix=f"{STDERR_PREFIX}{os.getpid()}-", suffix=".stderr",
                                                   delete=False)
        self._stderr.close()
        self._pending: list[Sample] = []
        self._expected: list[Recorded | None] | None = None  # what the caller holds for the pending samples
        self._early: tuple | None = None  # an in-flight encode's reply, received early (``_settle``)
        self._sent_at: float | None = None
        self._open: set[str] = set()  # sessions in the current worker
        self._lost: dict[str, str] = {}  # sessions a dead worker took with it -> why
        self._unstarted: str | None = None  # why the engine never came up (then every sample is a crash)
        self.capabilities: Capabilities
        self._identity: EngineIdentity
        try:
            self._start_bounded(first=True)
        except BaseException:
            Path(self._stderr.name).unlink(missing_ok=True)
            raise

    # --- process management ------------------------------------------------
    def _start_bounded(self, first: bool) -> None:
        """Start the worker; one that dies while loading is started again, up to
        ``ENGINE_START_ATTEMPTS`` times in all, then the engine is *unstarted*. A load error
        (the engine refused to load) raises on the first start; on a restart it too leaves
        the engine unstarted, with its message."""
        for attempt in range(1, ENGINE_START_ATTEMPTS + 1):
            try:
                self._start()
                return
            except _DiedWhileLoading as exc:
                why = str(exc)
                if exc.hung:
                    break  # a hang while loading is not tried again: each try takes a whole deadline
                if attempt < ENGINE_START_ATTEMPTS:
                    self.restarts += 1
            except EngineLoadError as exc:
                if first:
                    raise
                why = str(exc)
                break
        self._unstarted = did_not_start(self.spec, why, attempt)
        if first:
            self.capabilities, self._identity = UNSTARTED, unstarted_identity(self.spec)

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker_main, daemon=True,
                                       args=(child, self.spec, self._stderr.name, self.memory_limit_mb, self.threads,
                                             Lifeline.here()))
        self._proc.start()
        child.close()
        self._conn = parent
        message = self._loading_message(self.start_timeout_s, "it did not load within {:g} s (--load-timeout)")
        if message[0] == "built":
            message = self._loading_message(self.timeout_s, "its probe calls (the fingerprint) did not answer "
                                                            "within {:g} s (--timeout)")
        if message[0] == "load-failed":
            _, kind, text, expected = message
            self._proc.join(5)
            self._kill()
            raise EngineLoadError(text if expected else f"engine '{self.spec}' failed to load: {kind}: {text}")
        _, self.capabilities, self._identity = message

    def _loading_message(self, seconds: float, hang: str):
        """The worker's next word while it loads, within ``seconds``; its death or its hang
        (``hang``, formatted with the seconds) is ``_DiedWhileLoading``."""
        if not self._conn.poll(seconds):
            self._kill()
            raise _DiedWhileLoading(hang.format(seconds), hung=True)
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            why = self._death()
            self._kill()
            raise _DiedWhileLoading(f"its worker died while loading: {why}") from None

    def _kill(self) -> None:
        kill_tree(self._proc)  # the worker leads its own process group: what the engine started goes too
        self._proc.join(10)
        self._conn.close()

    def _restart(self) -> None:
        if self._unstarted is not None:
            return
        self._kill()
        self.restarts += 1
        for key in self._open:
            self._lost.setdefault(key, "the engine's worker died or hung at an earlier turn")
        self._open.clear()
        self._start_bounded(first=False)

    def _death(self) -> str:
        self._proc.join(5)
        code = self._proc.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            cause = f"killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
        else:
            cause = f"exited with code {code}"
        tail = self._stderr_tail()
        return cause + (f"; stderr: {tail}" if tail else "")

    def _stderr_tail(self) -> str:
        try:
            with open(self._stderr.name, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - STDERR_TAIL))
                return fh.read().decode("utf-8", "replace").strip()
        except FileNotFoundError:  # removed as an orphan by a run that cannot see this process (a container)
            return ""

    def _settle(self) -> None:
        """One request at a time on the pipe: an encode still in flight (submitted, not yet
        collected) is received first and kept for ``collect``, so a call made between
        ``submit`` and ``collect`` (``token_bytes`` while the next batch encodes) gets its own
        answer, never the encode's."""
        if not self._pending or self._sent_at is None or self._early is not None:
            return
        remaining = max(0.0, self.timeout_s - (time.monotonic() - self._sent_at))
        if not self._conn.poll(remaining):
            self._early = ("timeout", None)
            return
        try:
            self._early = self._conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self._early = ("crash", self._death())

    def _call(self, op: str, payload, timeout: float):
        """Send one request; returns ("ok", value) or ("crash"|"timeout", reason)."""
        if self._unstarted is not None:
            return "crash", self._unstarted
        self._settle()
        if self._early is not None and self._early[0] != "ok":
            return self._early  # the worker is dead or hung: collect restarts it
        try:
            self._conn.send((op, payload))
        except (BrokenPipeError, OSError):
            return "crash", self._death()
        if not self._conn.poll(timeout):
            return "timeout", f"no answer within {timeout:g} s"
        try:
            return self._conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            return "crash", self._death()

    # --- executor API -----------------------------------------------------
    def _submit(self, samples: list[Sample], expected: list[Recorded | None] | None = None) -> None:
        self._pending, self._expected = samples, expected
        try:
            self._conn.send(("encode", (pack_samples(samples), None if expected is None else pack_expected(expected))))
            self._sent_at = time.monotonic()
        except (BrokenPipeError, OSError):
            self._sent_at = None

    def _collect(self) -> list[Outcome]:
        samples, self._pending = self._pending, []
        expected, self._expected = self._expected, None
        early, self._early = self._early, None
        if self._unstarted is not None:  # a finding for this engine: nothing it did is counted as verified
            return [Failure("crash", "EngineDidNotStart", self._unstarted)] * len(samples)
        if early is not None:
            status, value = early
        elif self._sent_at is None:
            status, value = "crash", self._death()
        else:
            remaining = max(0.0, self.timeout_s - (time.monotonic() - self._sent_at))
            if not self._conn.poll(remaining):
                status, value = "timeout", None
            else:
                try:
                    status, value = self._conn.recv()
                except (EOFError, ConnectionResetError, OSError):
                    status, value = "crash", self._death()
        if status == "ok":
            return unpack_outcomes(value, expected)
        self._restart()
        return [self._encode_alone(s) for s in samples]

    def _encode_alone(self, sample: Sample) -> Outcome:
        status, value = self._call("encode", (pack_samples([sample]), None), self.timeout_s)
        if status == "ok":
            return unpack_outcomes(value)[0]
        self._restart()
        if status == "timeout":
            return Failure("timeout", "Timeout", f"engine did not answer within {self.timeout_s:g} s")
        return Failure("crash", "WorkerDied", value or "worker died")

    def _encode_concurrent(self, samples: list[Sample], threads: int) -> list[list[Outcome]]:
        status, value = self._call("encode_concurrent", (samples, threads), self.timeout_s)
        if status == "ok":
            return value
        self._restart()
        kind, kind_type = ("timeout", "Timeout") if status == "timeout" else ("crash", "WorkerDied")
        failure = Failure(kind, kind_type, f"{threads} threads at once: {value}")
        return [[failure] * len(samples) for _ in range(threads)]

    # --- sessions (they live in the worker) ------------------------------------------------
    def _session_call(self, op: str, key: str, payload):
        if key in self._lost:
            return Failure("error", "SessionLost", self._lost[key])
        status, value = self._call(op, payload, self.timeout_s)
        if status == "ok":
            return value
        self._restart()
        if status == "timeout":
            return Failure("timeout", "Timeout", f"session {op} did not answer within {self.timeout_s:g} s")
        return Failure("crash", "WorkerDied", value or "worker died")

    def open_session(self, key: str, state: bytes | None = None):
        if not self.capabilities.sessions:
            return self._no_sessions()
        self._lost.pop(key, None)
        result = self._session_call("open_session", key, (key, state))
        if result is None:
            self._open.add(key)
        return result

    def session_append(self, key: str, segments):
        return self._session_call("session_append", key, (key, list(segments)))

    def session_state(self, key: str):
        return self._session_call("session_state", key, key)

    def close_session(self, key: str) -> None:
        if key in self._open:
            self._session_call("close_session", key, key)
            self._open.discard(key)
        self._lost.pop(key, None)

    def token_bytes(self, ids: np.ndarray) -> list[bytes] | None:
        if not self.capabilities.decode:
            return None
        status, value = self._call("token_bytes", ids, self.timeout_s)
        if status == "ok":
            return value
        self._restart()
        return None

    def identity(self) -> EngineIdentity:
        return self._identity

    def fresh_replayer(self):
        return None if self._unstarted is not None else self._fresh.get()

    def run_notes(self) -> dict:
        if self._unstarted is not None:
            return {"did_not_start": self._unstarted}
        status, value = self._call("run_notes", None, self.timeout_s)
        if status == "ok":
            return {**value, **self._fresh.notes()}
        self._restart()
        return {"run_notes_error": f"worker {status}: {value}"}

    def close(self) -> None:
        self._fresh.close()
        if self._proc.is_alive():
            try:
                self._conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
            self._proc.join(5)
        self._kill()
        try:
            os.unlink(self._stderr.name)
        except FileNotFoundError:
            pass
