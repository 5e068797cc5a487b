"""Nothing a command starts outlives it, however its processes try to leave.

A process group is not enough: an engine may start a child with ``start_new_session=True``
(``setsid``), or fork twice so that its grandchild is orphaned -- both leave every group the
harness kills. Three guards catch them:

  the tag        ``run_scope()`` (the CLI, around every command) puts ``VERIFY_RUN_<ID>=1`` in
                 the environment; every process started from then on inherits it, whatever
                 session or group it moves to.
  a subreaper    the command's process and every worker call ``become_subreaper()``
                 (``PR_SET_CHILD_SUBREAPER``, Linux): an orphan below them is re-parented to
                 them, not to init, so it stays a descendant that ``descendants()`` finds.
  the sweep      at the end of the command (normal end, exception, Ctrl-C, SIGTERM) every
                 descendant started during it and every tagged process is killed; killing a
                 worker (``kill_tree``) kills its descendants first. When the command's own
                 process is killed (SIGKILL), the *sweeper* -- a tiny process in a session of
                 its own, started with the first child (``guard()``) -- sees its pipe close and
                 kills every tagged process.

Linux only (``/proc``); elsewhere the process groups and lifelines still apply.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from typing import Iterator

PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37  # linux/prctl.h
TAG_PREFIX = "VERIFY_RUN_"
PROC = "/proc"

# the sweeper: reads its stdin to the end; unless told "released", kills every process whose
# environment holds the tag (argv[1]), itself excepted
_SWEEPER = ("import os, signal, sys\n"
            "word = sys.stdin.buffer.read()\n"
            "if word != b'released':\n"
            "    tag = sys.argv[1].encode() + b'='\n"
            "    for name in os.listdir('/proc'):\n"
            "        if not name.isdigit() or int(name) == os.getpid():\n"
            "            continue\n"
            "        try:\n"
            "            with open('/proc/' + name + '/environ', 'rb') as fh:\n"
            "                if any(entry.startswith(tag) for entry in fh.read().split(b'\\0')):\n"
            "                    os.kill(int(name), signal.SIGKILL)\n"
            "        except OSError:\n"
            "            pass\n")


def linux() -> bool:
    return sys.platform.startswith("linux") and os.path.isdir(PROC)


def become_subreaper(on: bool = True) -> bool:
    """Orphans below this process are re-parented to it (Linux; elsewhere nothing). Returns
    whether it was a subreaper before."""
    if not linux():
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        before = ctypes.c_int(0)
        libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(before), 0, 0, 0)
        libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        return bool(before.value)
    except (OSError, AttributeError):
        return False


# --- the process tree, from /proc -----------------------------------------------------------

def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (``/proc/PID/stat``)."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir(PROC)
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{PROC}/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1:
            parents[int(name)] = int(fields[1])
    return parents


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children first, then theirs)."""
    if not linux():
        return []
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop(0)
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def tagged(tag: str) -> list[int]:
    """The processes whose environment holds ``tag`` (this one excepted)."""
    if not linux():
        return []
    marker = tag.encode() + b"="
    found = []
    for name in os.listdir(PROC):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"{PROC}/{name}/environ", "rb") as fh:
                if any(entry.startswith(marker) for entry in fh.read().split(b"\0")):
                    found.append(int(name))
        except OSError:
            continue
    return found


def kill(pids) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def kill_descendants(pid: int) -> None:
    """Kill every process below ``pid`` (stopped first, so none can start another meanwhile)."""
    below = descendants(pid)
    for victim in below:
        with contextlib.suppress(OSError):
            os.kill(victim, signal.SIGSTOP)
    kill(below + descendants(pid))  # and any started between the listing and the stops


# --- the scope of one command ---------------------------------------------------------------

class _Scope:
    def __init__(self) -> None:
        self.tag = f"{TAG_PREFIX}{uuid.uuid4().hex[:16].upper()}"
        self.owner = os.getpid()
        self.before = set(descendants(self.owner))  # a caller's own children (a test's servers) are spared
        self.sweeper: subprocess.Popen | None = None

    def guard(self) -> None:
        """The sweeper, once: it kills the tagged processes if this one dies without sweeping."""
        if self.sweeper is not None or os.getpid() != self.owner or not linux():
            return
        try:
            self.sweeper = subprocess.Popen([sys.executable, "-I", "-S", "-c", _SWEEPER, self.tag],
                                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            self.sweeper = None  # the sweep at the end still runs

    def sweep(self) -> None:
        """Kill what the command started: the tagged processes and the descendants started since."""
        if os.getpid() != self.owner:
            return
        spare = {self.sweeper.pid} if self.sweeper is not None else set()
        victims = [p for p in tagged(self.tag) + descendants(self.owner) if p not in self.before and p not in spare]
        for victim in victims:
            with contextlib.suppress(OSError):
                os.kill(victim, signal.SIGSTOP)
        kill(victims)
        kill(p for p in tagged(self.tag) if p not in spare and p not in self.before)  # started meanwhile

    def release(self) -> None:
        if self.sweeper is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self.sweeper.stdin.write(b"released")
        with contextlib.suppress(OSError, ValueError):
            self.sweeper.stdin.close()
        try:
            self.sweeper.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.sweeper.kill()
            self.sweeper.wait()
        self.sweeper = None


_scope: _Scope | None = None


@contextlib.contextmanager
def run_scope() -> Iterator[None]:
    """Around one command (``verify.cli``): tag, subreaper, and the sweep at its end."""
    global _scope
    if _scope is not None or not linux():  # nested (a command run by a command's code): the outer one sweeps
        yield
        return
    scope = _scope = _Scope()
    os.environ[scope.tag] = "1"
    was_subreaper = become_subreaper()
    try:
        yield
    finally:
        try:
            scope.release()
            scope.sweep()
        finally:
            os.environ.pop(scope.tag, None)
            if not was_subreaper:
                become_subreaper(False)
            _scope = None


def guard() -> None:
    """Before starting a child process: make sure the sweeper runs (in the command's process)."""
    if _scope is not None:
        _scope.guard()


def sweep_now() -> None:
    """The sweep, at once (a hard stop, ``verify.interrupts``)."""
    if _scope is not None:
        _scope.release()
        _scope.sweep()
