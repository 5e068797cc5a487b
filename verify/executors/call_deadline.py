"""The hang deadline of an engine call in a speculating shard worker (``EngineOptions.speculate``).

Past it the kernel ends the whole process with SIGALRM's default action: no Python runs, so a
native call that holds the GIL and never returns is ended too. The driver sees the worker die
by SIGALRM and runs its shard again on a worker with isolated engines, whose own deadline says
which sample hung (``verify.executors.workers.ProcessShards``). Calls from other threads than
the main one (the thread-safety check) run without it: that check never speculates."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

HANG_SIGNAL = signal.SIGALRM


@contextlib.contextmanager
def ends_process_after(seconds: float | None) -> Iterator[None]:
    """The block, with this process ended when it outlives ``seconds`` (None: no deadline)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(HANG_SIGNAL, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(HANG_SIGNAL, previous)
