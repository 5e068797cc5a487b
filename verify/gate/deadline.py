"""The gate's total deadline: ``[gate] deadline = SECONDS`` in the suite (``gate init`` writes the
profile's: 300 for ``pr``, 1800 for ``nightly``), or ``verify gate SUITE --deadline S``.

    clock = Deadline(300, "[gate] deadline")
    run = clock.not_started(spec) if clock.passed() else clock.run(ctx, run_check)

A check that would start after the deadline does not start; a check running when it passes is
cut, as Ctrl-C cuts a run (the shards it committed stay, so ``verify gate --resume`` continues
it). Either is marked (``CheckRun.cut``, ``cut`` in gate.json) and fails the check: a gate that
ran out of time never passes as if it had checked everything. The alarm is SIGALRM, so it cuts
only a gate run in the main thread; elsewhere the deadline is checked between checks.
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Callable

from verify.gate.check_run import CheckContext, CheckRun, manifest_of, tally


class DeadlinePassed(KeyboardInterrupt):
    """Raised in the main thread when the deadline passes during a check (handled as Ctrl-C is)."""


class Deadline:
    def __init__(self, seconds: float | None, name: str):
        self.seconds, self.name = seconds, name
        self.start = time.monotonic()

    def remaining(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.start)

    def passed(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def _what(self) -> str:
        return f"the gate's deadline ({self.name} = {self.seconds:g} s)"

    def not_started(self, spec) -> CheckRun:
        run = CheckRun(spec.name, spec.kind, spec.digest())
        run.cut = f"not started: {self._what()} had passed"
        run.problems.append(run.cut + "; raise it, or run the checks in a longer gate")
        return run

    def run(self, ctx: CheckContext, run_check: Callable[[CheckContext], CheckRun]) -> CheckRun:
        left = self.remaining()
        if left is None or threading.current_thread() is not threading.main_thread():
            return run_check(ctx)
        started = time.monotonic()
        alarm = _Alarm(max(left, 0.001))
        try:
            with alarm:
                return run_check(ctx)
        except KeyboardInterrupt:
            if not alarm.fired:
                raise
        run = CheckRun(ctx.spec.name, ctx.spec.kind, ctx.spec.digest())
        run.seconds = round(time.monotonic() - started, 3)
        run.cut = f"cut by {self._what()} after {run.seconds:.0f} s of it"
        run.problems.append(run.cut + ": what it committed is counted, the rest did not run (verify gate --resume "
                            "continues it)")
        if manifest_of(ctx.out):
            tally(run, [ctx.out], ctx.spec.allow_skipped)
        return run


class _Alarm:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.fired = False

    def _ring(self, signum, frame):
        self.fired = True
        raise DeadlinePassed()

    def __enter__(self):
        self._before = signal.signal(signal.SIGALRM, self._ring)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._before)
        return False
