"""Ctrl-C and SIGTERM end any command within seconds, wherever it is.

``handled()`` (around every command, ``verify.cli``):

* SIGINT raises ``KeyboardInterrupt`` -- also when the command was started with SIGINT
  ignored (``nohup verify ... &``, a script's background job: Python then leaves it ignored).
* SIGTERM raises ``Terminated``, a ``KeyboardInterrupt``: every path that leaves OUT
  resumable after Ctrl-C does so after SIGTERM too; the CLI says which it was (130 / 143).
* A hard stop: Python runs a signal handler only between bytecodes of the main thread, so a
  command inside a C call that does not return (an engine's native loop, a constructor
  blocked in a call that retries) would not see it. The C-level handler also writes the
  signal's number to a socket (``signal.set_wakeup_fd``) that a watcher thread reads: when the
  command has not ended ``HARD_STOP_S`` after the signal (or at a second Ctrl-C), the
  watcher kills every process of the run (``verify.reaper``), prints the command's line
  and exits with 130 (143 after SIGTERM). What was committed stays: every commit is an
  atomic rename, so OUT is resumable at any instant.

A C call that holds the GIL without end stops the watcher too; only a signal Python does not
handle (SIGKILL) ends such a process.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import threading
import time
from typing import Iterator

from verify.exit_codes import ExitCode

HARD_STOP_S = 5.0  # after Ctrl-C or SIGTERM, the command has this long to end by itself
EXIT_SIGINT, EXIT_SIGTERM = ExitCode.INTERRUPTED, ExitCode.TERMINATED
INTERRUPTED_LINE = "verify: interrupted (partial reports written)"
TERMINATED_LINE = "verify: terminated by SIGTERM (what was committed stays; continue with --resume)"


class Terminated(KeyboardInterrupt):
    """SIGTERM: handled where Ctrl-C is (the run stays resumable), reported as itself."""


def _on_sigterm(signum, frame):
    raise Terminated()


def exit_code(exc: BaseException) -> int:
    return EXIT_SIGTERM if isinstance(exc, Terminated) else EXIT_SIGINT


def line_for(exc: BaseException) -> str:
    return TERMINATED_LINE if isinstance(exc, Terminated) else INTERRUPTED_LINE


class _Watcher:
    """Reads the wakeup socket; a hard stop when the command outlives a signal by ``HARD_STOP_S``."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="verify-interrupts", daemon=True)

    def _watch(self) -> None:
        deadline, code = None, EXIT_SIGINT
        while not self.done.is_set():
            try:
                ready, _, _ = select.select([self.sock], [], [], 0.2)
                data = self.sock.recv(64) if ready else b""
            except (OSError, ValueError):
                return
            for number in data:
                if number not in (signal.SIGINT, signal.SIGTERM):
                    continue
                if deadline is not None and number == signal.SIGINT:
                    deadline = time.monotonic()  # a second Ctrl-C: at once
                elif deadline is None:
                    deadline = time.monotonic() + HARD_STOP_S
                    code = EXIT_SIGTERM if number == signal.SIGTERM else EXIT_SIGINT
            if deadline is not None and time.monotonic() >= deadline and not self.done.is_set():
                _hard_stop(code)

    def stop(self) -> None:
        self.done.set()


def _hard_stop(code: int) -> None:
    from verify import reaper

    with contextlib.suppress(Exception):
        reaper.sweep_now()
    line = TERMINATED_LINE if code == EXIT_SIGTERM else INTERRUPTED_LINE
    with contextlib.suppress(OSError):
        os.write(2, f"{line}; it did not end within {HARD_STOP_S:g} s, so it was stopped\n".encode())
    os._exit(code)


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """Around one command: SIGINT and SIGTERM as above; the previous handlers are restored after
    (a test may run commands inside its own process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    watcher = _Watcher(reader)
    try:
        previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        previous_fd = None
    else:
        watcher.thread.start()
    try:
        yield
    finally:
        watcher.stop()
        if previous_fd is not None:
            with contextlib.suppress(ValueError, OSError):
                signal.set_wakeup_fd(previous_fd)
        for handler, number in zip(before, (signal.SIGINT, signal.SIGTERM)):
            with contextlib.suppress(ValueError, TypeError, OSError):
                signal.signal(number, handler if handler is not None else signal.SIG_DFL)
        if watcher.thread.is_alive():
            watcher.thread.join(1)
        reader.close()
        writer.close()


__all__ = ["EXIT_SIGINT", "EXIT_SIGTERM", "HARD_STOP_S", "Terminated", "exit_code", "handled", "line_for"]
