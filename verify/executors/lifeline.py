"""Child processes that end with their parent, whatever ends the parent.

A shard worker, an engine worker or a device worker must not outlive the run: not after
a normal end, an exception, SIGINT or SIGTERM, nor after the driver is killed with
SIGKILL (when nothing of it runs any more). ``Lifeline`` gives a child both guards:
``prctl(PR_SET_PDEATHSIG)`` on Linux (the kernel signals the child when the thread that
spawned it ends -- so it is asked only when the parent spawned it from its main thread)
and a thread that watches the parent's pid, on every platform. ``kill_tree`` ends a
child and the process group it leads (whatever an engine started); ``process_gone`` says
whether a pid runs no more (whose leftover files may then be removed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass

from verify import reaper

LIFELINE_THREAD = "verify-lifeline"  # the watcher's thread name (fresh.py tells it from an engine's threads)

LIFELINE_POLL_S = 0.2
PR_SET_PDEATHSIG = 1  # linux/prctl.h


# --- child processes that end with their parent ----------------------------------------------

@dataclass(frozen=True)
class Lifeline:
    """Handed to a child process (shard, engine or device worker). ``hold()``, first thing in
    the child, ends it as soon as its parent is gone however it went (SIGTERM, kill -9): at
    once by PR_SET_PDEATHSIG on Linux -- asked for only when the parent started the child from
    its main thread, as Linux sends it when that *thread* ends -- and by a thread watching the
    parent pid everywhere."""

    parent: int
    from_main_thread: bool

    @classmethod
    def here(cls) -> Lifeline:
        reaper.guard()  # the command's sweeper runs before its first child does
        return cls(os.getpid(), threading.current_thread() is threading.main_thread())

    def hold(self, own_group: bool = False) -> None:
        """``own_group``: this child leads a process group of its own, which ends with it. The
        child is a subreaper: what its engines start and orphan stays below it (``kill_tree``)."""
        reaper.become_subreaper()
        if own_group:
            with contextlib.suppress(OSError):
                os.setpgid(0, 0)
        if self.from_main_thread:
            _parent_death_signal(signal.SIGKILL)
        if os.getppid() != self.parent:  # the parent went before we got here
            _end_now()
        threading.Thread(target=self._watch, daemon=True, name=LIFELINE_THREAD).start()

    def _watch(self) -> None:
        while os.getppid() == self.parent:
            time.sleep(LIFELINE_POLL_S)
        _end_now()


def _parent_death_signal(sig: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the watching thread still ends the child


def _end_now() -> None:
    """The parent is gone: end this process, with what it started and its process group."""
    reaper.kill_descendants(os.getpid())
    if os.getpgid(0) == os.getpid():
        os.killpg(0, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def process_gone(pid: int) -> bool:
    """Whether no process ``pid`` runs (one of another user's runs: it is not gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def kill_tree(proc) -> None:
    """Kill a child process started with a ``Lifeline`` (``proc``: a multiprocessing Process),
    with every process below it (what an engine started, also in a session of its own) and its
    process group when it leads one."""
    if proc.pid is None:
        return
    if proc.is_alive():
        reaper.kill_descendants(proc.pid)
    with contextlib.suppress(OSError):
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.is_alive():
        proc.kill()


# --- the engine worker -----------------------------------------------------------------------
