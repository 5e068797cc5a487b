"""Engines that do not start in time, and engines that never started.

Loading an engine is two waits, each with its own deadline: building it (its constructor,
its vocabulary: ``--load-timeout``) and the probe calls made once it is built (the fingerprint
of its identity: ``--timeout``, as every engine call). An isolated engine's worker is killed
at either deadline (``verify.executors.isolated``); an in-process engine is built under
``deadline()`` on the main thread. Either way the engine is *unstarted*: every sample sent
to it is a ``crash`` failure ``EngineDidNotStart`` (an ``engine-start`` finding for it, never
a verified sample) and the run goes on with the others.

``deadline()`` raises ``Overdue`` in the main thread (SIGALRM) when its block outlives it. It
interrupts Python code and blocking calls that return on a signal (a sleep, a socket read);
a native call that never returns to Python cannot be interrupted in the process that made it
-- which is why engines run isolated by default.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Iterator

from verify.engines.base import Capabilities, EngineIdentity
from verify.executors.base import ExecutorBase
from verify.outcome import Failure, Outcome
from verify.sample import Sample

DEFAULT_LOAD_TIMEOUT_S = 600.0  # building an engine may fetch and check its vocabulary first
UNSTARTED = Capabilities(special_tokens=True)  # an engine that never started is sent every sample


class Overdue(KeyboardInterrupt):
    """A ``deadline()`` block ran out of time. A ``KeyboardInterrupt`` so that an engine's own
    ``except Exception`` (or the fingerprint's) cannot swallow it; ``deadline()`` turns it into
    ``LoadTimedOut`` before it leaves the block."""


class LoadTimedOut(Exception):
    """An engine did not load (or answer its probes) within its deadline."""


def unstarted_identity(spec: str) -> EngineIdentity:
    return EngineIdentity(spec, spec.partition(":")[0], package=None, package_version=None, vocab=None,
                          vocab_sha256=None, options={"did_not_start": True})


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise ``LoadTimedOut(what)`` when the block takes longer than ``seconds`` (main thread
    only; elsewhere the block runs without one)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    # An outer alarm (the gate's deadline) may be pending: when it comes first it stays armed and
    # cuts this block as it cuts the rest; otherwise it is re-armed, less the time spent here.
    outer_left = signal.getitimer(signal.ITIMER_REAL)[0]
    if outer_left and outer_left <= seconds:
        yield
        return
    started = time.monotonic()
    armed = [True]

    def overdue(signum, frame):
        if armed[0]:
            raise Overdue(what)

    previous = signal.signal(signal.SIGALRM, overdue)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except Overdue:
        raise LoadTimedOut(what) from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 0.001))


def did_not_start(spec: str, why: str, tries: int = 1) -> str:
    """The one line every sample of an unstarted engine carries."""
    times = f", {tries} times" if tries > 1 else ""
    return f"engine '{spec}' did not start{times} ({why}): no sample reached it"


class UnstartedExecutor(ExecutorBase):
    """An in-process engine that did not start: a ``crash`` failure for every sample."""

    restarts = 0
    timeout_s = None

    def __init__(self, spec: str, why: str):
        self.spec = spec
        self.why = why
        self.capabilities = UNSTARTED
        self._pending: list[Sample] = []

    def _submit(self, samples: list[Sample]) -> None:
        self._pending = samples

    def _collect(self) -> list[Outcome]:
        samples, self._pending = self._pending, []
        return [Failure("crash", "EngineDidNotStart", self.why)] * len(samples)

    def _encode_concurrent(self, samples: list[Sample], threads: int) -> list[list[Outcome]]:
        return [[Failure("crash", "EngineDidNotStart", self.why)] * len(samples) for _ in range(threads)]

    def token_bytes(self, ids):
        return None

    def identity(self) -> EngineIdentity:
        return unstarted_identity(self.spec)

    def run_notes(self) -> dict:
        return {"did_not_start": self.why}

    def close(self) -> None:
        pass
