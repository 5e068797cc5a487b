"""Fresh engine instances: a sequence of calls replayed on an engine that has never encoded.

    replayer = FreshReplayer("tiktoken:cl100k_base", timeout_s=60)
    [[victim_ids]] = replayer.replay([[victim]])                  # the victim alone, on a fresh engine
    [[_], [victim_ids]] = replayer.replay([[poison], [victim]])   # after one earlier call
    replayer.replay_many([calls_a, calls_b])                      # each sequence on its own fresh engine
    replayer.close()

A *fresh* engine is a new instance in a new process that has made no call: a cache, a buffer,
a mode or a module-level table that an earlier input filled cannot be in it (a new instance in
the same process would still share module-level state). Building one per replay would cost the
engine's load time each, so the replayer keeps a *template* process that builds the engine and
never encodes, and forks it for each replay: the child is a copy of an engine that was never
called (copy-on-write, milliseconds). Where forking is not available (not Linux) every replay
gets a newly spawned process instead, and so does an engine whose template runs a thread or a
process of its own once loaded (a ``subprocess:`` engine's server, a native pool started at load:
a forked copy would share or deadlock on them, ``_forkable``).

A fork copies only the forking thread, so an engine that started a native thread pool while it
loaded could hang or crash in the child where a fresh process would not: the first replay that
crashed or hung in a forked child is run again in a newly spawned process before it is believed;
when the two agree, forked failures are believed from then on (``fork_trusted``), when they
disagree the replayer spawns for every later replay (``mode`` says which).

Each call of a replay is ONE call of the engine's batch entry point on that call's samples
(``verify.executors.engine_calls.encode_call``): its result is one outcome per sample, or -- when the call itself raised,
crashed or hung -- a ``Failure`` for the whole call (a batch that fails where its samples
alone encode is the finding then). A call after a crash or a hang is not made
(``NOT_RUN``). Every wait has a deadline: ``timeout_s`` per call, ``start_timeout_s`` for the
template to load.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
from typing import Sequence, Union

from verify.errors import VerifyError
from verify.executors.engine_calls import encode_call
from verify.executors.lifeline import LIFELINE_THREAD, Lifeline, kill_tree
from verify.executors.threads import pin_threads
from verify.executors.wire import pack_outcomes, pack_samples, unpack_outcomes, unpack_samples
from verify.outcome import Failure, Outcome
from verify.sample import Sample

CallResult = Union[list, Failure]  # one outcome per sample, or the call's own failure
NOT_RUN = Failure("error", "NotRun", "an earlier call of the replay crashed or hung: this call was not made")
FORK_AVAILABLE = sys.platform.startswith("linux")
_FRAME = struct.Struct("<Q")


class FreshUnavailable(VerifyError):
    """The engine cannot be built in a process of its own (its template did not load)."""


# --- the child that runs one replay --------------------------------------------------------------

def _write_frame(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    payload = _FRAME.pack(len(data)) + data
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _run_calls(engine, calls: list, fd: int) -> None:
    """Run the calls in order, writing each call's result as it completes."""
    for payload in calls:
        result = encode_call(engine, unpack_samples(payload))
        _write_frame(fd, pack_outcomes(result) if isinstance(result, list) else result)


def _read_exactly(fd: int, n: int, deadline: float) -> bytes | None:
    """``n`` bytes from ``fd`` before ``deadline``; None on end of file or at the deadline."""
    chunks, got = [], 0
    while got < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _collect_frames(fd: int, count: int, timeout_s: float) -> tuple[list, str | None]:
    """Up to ``count`` results, each within ``timeout_s`` of the one before; why it stopped early."""
    results: list = []
    while len(results) < count:
        deadline = time.monotonic() + timeout_s
        head = _read_exactly(fd, _FRAME.size, deadline)
        if head is None:
            return results, "timeout" if time.monotonic() >= deadline else "crash"
        body = _read_exactly(fd, _FRAME.unpack(head)[0], deadline)
        if body is None:
            return results, "timeout" if time.monotonic() >= deadline else "crash"
        results.append(pickle.loads(body))
    return results, None


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else "ended"


def _forked_replay(engine, calls: list, timeout_s: float) -> tuple[list, str | None]:
    """One replay in a forked child of this (never-called) process."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a copy of an engine that was never called
        try:
            os.close(read_fd)
            from verify.executors.lifeline import _parent_death_signal

            _parent_death_signal(signal.SIGKILL)
            _run_calls(engine, calls, write_fd)
            os._exit(0)
        except BaseException:
            os._exit(70)
    os.close(write_fd)
    try:
        results, stopped = _collect_frames(read_fd, len(calls), timeout_s)
        if stopped is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_fd)
    return results, (f"{stopped}: {_death(status)}" if stopped == "crash" else stopped)


def _forkable() -> bool:
    """Whether a forked copy of this process is a fresh engine: only when the engine runs no
    thread and no process of its own. A fork copies one thread (a lock another thread held stays
    locked in the child forever) and shares a child process's pipes with the template (a
    ``subprocess:`` engine's server would be the template's, warm, not a new one)."""
    try:
        tasks = os.listdir("/proc/self/task")
        with open(f"/proc/self/task/{os.getpid()}/children", encoding="ascii") as fh:
            children = fh.read().split()
    except OSError:  # no /proc: never fork
        return False
    # the template's own lifeline watcher holds no lock a child could need (it waits on a pipe)
    ours = sum(1 for t in threading.enumerate() if t.name == LIFELINE_THREAD and t.is_alive())
    return len(tasks) - ours == 1 and not children


def _template_main(conn, spec: str, memory_limit_mb: int | None, threads: int | None, lifeline: Lifeline,
                   fork: bool) -> None:
    """The template: builds the engine, never encodes; forks a child per replay (or, in spawn
    mode, runs its one replay itself and ends)."""
    lifeline.hold(own_group=True)
    pin_threads(threads)
    if memory_limit_mb:
        import resource

        limit = memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from verify.engines import build_engine

    try:
        engine = build_engine(spec)
    except BaseException as exc:
        conn.send(("load-failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", _forkable()))
    while True:
        try:
            op, replays, timeout_s = conn.recv()
        except (EOFError, OSError):
            return
        if op == "close":
            return
        answers = []
        for calls in replays:
            if fork:
                answers.append(_forked_replay(engine, calls, timeout_s))
            else:  # spawn mode: this process is the fresh engine, used once; each call's result as it comes
                for payload in calls:
                    result = encode_call(engine, unpack_samples(payload))
                    conn.send(("frame", pack_outcomes(result) if isinstance(result, list) else result))
                conn.send(("ok", None))
                return
        conn.send(("ok", answers))


# numpy's OpenBLAS starts a pool thread on import: a template that never computes needs none, and
# with it the template would count as running a thread of its own and never fork
IDLE_POOLS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def _no_idle_pools():
    """The environment a fork template starts with (the user's own settings kept)."""
    added = {k: v for k, v in IDLE_POOLS.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


# --- the replayer ----------------------------------------------------------------------------------

class _Template:
    """One template process (fork mode: kept; spawn mode: one per replay)."""

    def __init__(self, spec: str, fork: bool, memory_limit_mb: int | None, threads: int | None,
                 start_timeout_s: float):
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_template_main, daemon=True,
                                args=(child, spec, memory_limit_mb, threads, Lifeline.here(), fork))
        with _no_idle_pools() if fork else contextlib.nullcontext():
            self.proc.start()
        child.close()
        self.conn = parent
        if not self.conn.poll(start_timeout_s):
            self.close()
            raise FreshUnavailable(f"a fresh instance of '{spec}' did not load within {start_timeout_s:g} s")
        try:
            status, why = self.conn.recv()
        except (EOFError, OSError):
            self.close()
            raise FreshUnavailable(f"a fresh instance of '{spec}' died while loading") from None
        if status != "ready":
            self.close()
            raise FreshUnavailable(f"a fresh instance of '{spec}' did not load: {why}")
        self.forkable = bool(why)  # a ready template says whether a fork of it is fresh

    def replay(self, replays: list, timeout_s: float, deadline_s: float) -> tuple[list | None, str]:
        """``(answers, "")``, or ``(None, why)`` when the template died or missed ``deadline_s``."""
        try:
            self.conn.send(("replay", replays, timeout_s))
            if not self.conn.poll(deadline_s):
                return None, "timeout"
            status, answers = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            return None, "crash"
        return (answers, "") if status == "ok" else (None, "crash")

    def replay_here(self, calls: list, timeout_s: float) -> tuple[list, str | None]:
        """Spawn mode: the template is the fresh engine; its results call by call, each within
        ``timeout_s``, and why it stopped early (it died, or a call hung)."""
        frames: list = []
        try:
            self.conn.send(("replay", [calls], timeout_s))
            while True:
                if not self.conn.poll(timeout_s):
                    return frames, "timeout"
                status, frame = self.conn.recv()
                if status == "ok":
                    return frames, None
                frames.append(frame)
        except (EOFError, OSError, BrokenPipeError):
            return frames, "crash: " + _exit_of(self.proc)

    def close(self) -> None:
        try:
            if self.proc.is_alive():
                self.conn.send(("close", None, None))
                self.proc.join(2)
        except (OSError, BrokenPipeError):
            pass
        kill_tree(self.proc)
        self.proc.join(5)
        self.conn.close()


class FreshReplayer:
    """Replays call sequences on fresh instances of ``spec`` (see the module docstring)."""

    def __init__(self, spec: str, *, timeout_s: float | None = 60.0, memory_limit_mb: int | None = None,
                 threads: int | None = None, start_timeout_s: float = 600.0):
        self.spec = spec
        self.timeout_s = float(timeout_s or 60.0)
        self.memory_limit_mb, self.threads, self.start_timeout_s = memory_limit_mb, threads, start_timeout_s
        self.mode = "fork" if FORK_AVAILABLE else "spawn"
        self.replays = 0  # fresh instances used
        self.spawn_checks = 0  # fork failures run again in a spawned process
        self.fork_trusted = False  # a spawned process once agreed with a fork failure: forks are believed
        self._template: _Template | None = None

    # --- process management ----------------------------------------------------------------
    def _new(self, fork: bool) -> _Template:
        return _Template(self.spec, fork, self.memory_limit_mb, self.threads, self.start_timeout_s)

    def _forker(self) -> _Template | None:
        """The fork template, or None (and spawn mode from now on) where a fork would not be fresh."""
        if self._template is None or not self._template.proc.is_alive():
            self._template = self._new(fork=True)
            if not self._template.forkable:  # threads or processes of its own: spawn a process per replay
                self._template.close()
                self._template = None
                self.mode = "spawn"
        return self._template

    def _run(self, replays: list[list], fork: bool) -> list[tuple[list, str | None]]:
        if not fork:  # a new process per replay, each call's result kept as it comes
            answers = []
            for calls in replays:
                template = self._new(fork=False)
                try:
                    answers.append(template.replay_here(calls, self.timeout_s))
                finally:
                    template.close()
            return answers
        template = self._forker()
        # the whole request: every call of every replay may take the per-call timeout, plus slack
        deadline = self.timeout_s * (sum(len(r) for r in replays) + 1) + 30.0
        answers, why = template.replay(replays, self.timeout_s, deadline)
        if answers is None:  # the template itself died or hung: nothing it said can be believed
            self._template.close()
            self._template = None
            return [([], why if why == "timeout" else "crash: the fresh engine's process died") for _ in replays]
        return answers

    # --- replays --------------------------------------------------------------------------------
    def replay_many(self, sequences: Sequence[Sequence[Sequence[Sample]]]) -> list[list[CallResult]]:
        """Each sequence of calls on its own fresh instance; per sequence, per call, its result."""
        packed = [[pack_samples(call) for call in calls] for calls in sequences]
        if self.mode == "fork":
            self._forker()  # the template loads on first use, replays or not (and may turn spawn mode on)
        if not packed or not any(packed):
            return [[] for _ in sequences]
        answers = self._run(packed, fork=self.mode == "fork")
        results = [self._results(seq, answer) for seq, answer in zip(sequences, answers)]
        if self.mode == "fork" and not self.fork_trusted:
            retry = [i for i, (_, stopped) in enumerate(answers) if stopped is not None]
            if retry:  # a crash or hang in a forked child is believed only when a spawned process agrees
                first = retry[0]
                spawned = self._results(sequences[first], self._run([packed[first]], fork=False)[0])
                self.spawn_checks += 1
                if _shape(spawned) == _shape(results[first]):
                    self.fork_trusted = True  # they agreed: a fork's failures are this engine's from now on
                else:
                    self.mode = "spawn"  # forking changes what this engine does: never again
                    results[first] = spawned
                    for i in retry[1:]:
                        results[i] = self._results(sequences[i], self._run([packed[i]], fork=False)[0])
                        self.spawn_checks += 1
        self.replays += len(sequences)
        return results

    def replay(self, calls: Sequence[Sequence[Sample]]) -> list[CallResult]:
        return self.replay_many([calls])[0]

    def _results(self, calls: Sequence[Sequence[Sample]], answer: tuple[list, str | None]) -> list[CallResult]:
        frames, stopped = answer
        out: list[CallResult] = []
        for frame in frames:
            out.append(frame if isinstance(frame, Failure) else unpack_outcomes(frame))
        if len(out) < len(calls):
            if stopped and stopped.startswith("timeout"):
                out.append(Failure("timeout", "Timeout", f"a fresh engine did not answer within {self.timeout_s:g} s"))
            else:
                out.append(Failure("crash", "WorkerDied", f"a fresh engine's process {stopped or 'died'}"))
            out += [NOT_RUN] * (len(calls) - len(out))
        return out

    def notes(self) -> dict:
        return {"fresh_mode": self.mode, "fresh_instances": self.replays, "fresh_spawn_checks": self.spawn_checks}

    def close(self) -> None:
        if self._template is not None:
            self._template.close()
            self._template = None


def _exit_of(proc) -> str:
    proc.join(5)
    code = proc.exitcode
    if code is not None and code < 0:
        return f"killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _shape(results: list[CallResult]) -> list:
    """What a replay came to, for comparing a forked child with a spawned process: per call the
    failure kind, or the outcomes (ids as bytes)."""
    shape: list = []
    for r in results:
        if isinstance(r, Failure):
            shape.append(r.kind)
        else:
            shape.append([o.tobytes() if hasattr(o, "tobytes") else getattr(o, "kind", "?") for o in r])
    return shape


Outcomes = list[Outcome]


class FreshReplayers:
    """The fresh replayer of an executor: started on first use, closed with the executor
    (``IsolatedExecutor`` and ``LocalExecutor`` hold one each)."""

    def __init__(self, spec: str, timeout_s: float | None, memory_limit_mb: int | None = None,
                 threads: int | None = None):
        self.spec, self.timeout_s, self.memory_limit_mb, self.threads = spec, timeout_s, memory_limit_mb, threads
        self.replayer: FreshReplayer | None = None
        self.unavailable: str | None = None  # why there is none (its template did not load)

    def get(self) -> FreshReplayer | None:
        if self.replayer is None and self.unavailable is None:
            replayer = FreshReplayer(self.spec, timeout_s=self.timeout_s, memory_limit_mb=self.memory_limit_mb,
                                     threads=self.threads)
            try:
                replayer.replay([])  # loads the template now: a spec that cannot load elsewhere says so once
            except FreshUnavailable as exc:
                self.unavailable = str(exc)
                return None
            self.replayer = replayer
        return self.replayer

    def notes(self) -> dict:
        if self.unavailable:
            return {"fresh_unavailable": self.unavailable}
        return self.replayer.notes() if self.replayer is not None else {}

    def close(self) -> None:
        if self.replayer is not None:
            self.replayer.close()
            self.replayer = None
