"""One engine child process (``subprocess:``): started in a process group of its own, its
stdout read line by line into a queue, the tail of its stderr kept for error messages.

A watchdog process kills the group when the process that started the child goes without
closing it (kill -9 of the run, or of the isolated worker holding the engine after a hang):
no engine process outlives a run. The protocol spoken over the pipes is the adapter's
(``verify.engines.subprocess_engine``).
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import weakref

from verify import reaper
from verify.errors import ConfigError
from verify.limits import MAX_ANSWER_LINE_BYTES, READ_CHUNK_BYTES

STDERR_TAIL_LINES = 40
STDERR_TAIL_CHARS = 4000
EOF = object()
READ_BUFFER = 1 << 16


class TooLong:
    """In place of a stdout line longer than ``MAX_ANSWER_LINE_BYTES`` (the rest of it is skipped)."""

    def __init__(self, size: int):
        self.size = size
# the watchdog: reads its stdin to the end; "released" means the group was already ended
_WATCHDOG = ("import os, signal, sys\n"
             "word = sys.stdin.buffer.read()\n"
             "if word != b'released':\n"
             "    try:\n"
             "        os.killpg(int(sys.argv[1]), signal.SIGKILL)\n"
             "    except OSError:\n"
             "        pass\n")


def _drain(stream, sink) -> None:
    """Read ``stream`` line by line into ``sink`` until EOF (runs in a thread)."""
    try:
        for line in iter(stream.readline, b""):
            sink(line)
    except (OSError, ValueError):
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


class ChildProcess:
    """One running child process plus the threads that drain its pipes."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        reaper.guard()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                start_new_session=True,  # its own process group: it and its children end together
            )
        except OSError as exc:
            raise ConfigError(f"cannot start engine process {shlex.join(argv)!r}: {exc}") from exc
        self.watchdog = _start_watchdog(self.proc.pid)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: collections.deque[bytes] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._out = threading.Thread(target=self._read_stdout, daemon=True, name=f"verify-stdout-{self.proc.pid}")
        self._err = threading.Thread(target=_drain, args=(self.proc.stderr, self.stderr.append),
                                     daemon=True, name=f"verify-stderr-{self.proc.pid}")
        self._out.start()
        self._err.start()
        # Reap the child even when nobody calls close() (GC, interpreter exit).
        self._finalizer = weakref.finalize(self, ChildProcess._terminate, self.proc, self.watchdog)

    def _read_stdout(self) -> None:
        """Line by line into ``lines``, each at most ``MAX_ANSWER_LINE_BYTES`` (a longer one is a
        ``TooLong``, skipped in chunks: memory stays bounded whatever the child writes)."""
        stream = io.BufferedReader(self.proc.stdout, READ_BUFFER)
        try:
            while True:
                line = stream.readline(MAX_ANSWER_LINE_BYTES + 1)
                if not line:
                    break
                if len(line) <= MAX_ANSWER_LINE_BYTES or line.endswith(b"\n"):
                    self.lines.put(line)
                    continue
                size = len(line)
                while line and not line.endswith(b"\n"):
                    line = stream.readline(READ_CHUNK_BYTES)
                    size += len(line)
                self.lines.put(TooLong(size))
        except (OSError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError, ValueError):
                stream.close()
            self.lines.put(EOF)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def stderr_tail(self) -> str:
        if self.proc.poll() is not None:
            self._err.join(timeout=1.0)  # let the drain thread collect the child's last words
        text = b"".join(self.stderr).decode("utf-8", errors="replace").rstrip()
        if len(text) > STDERR_TAIL_CHARS:
            text = "..." + text[-STDERR_TAIL_CHARS:]
        return text

    def exit_status(self, wait: float = 2.0) -> int | None:
        try:
            return self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return None

    @staticmethod
    def _terminate(proc: subprocess.Popen, watchdog: subprocess.Popen | None, grace: float = 5.0) -> None:
        if proc.stdin and not proc.stdin.closed:
            try:
                proc.stdin.close()  # EOF on stdin is the polite "please exit"
            except OSError:
                pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            reaper.kill_descendants(proc.pid)  # what a hung child started, also in sessions of their own
        kill_group(proc.pid)  # a hung child, and whatever the child left running
        proc.wait()
        _release_watchdog(watchdog)

    def close(self, grace: float = 5.0) -> None:
        self._finalizer.detach()
        ChildProcess._terminate(self.proc, self.watchdog, grace)
        self._out.join(timeout=1.0)
        self._err.join(timeout=1.0)


def _start_watchdog(group: int) -> subprocess.Popen | None:
    """Kills process group ``group`` when its stdin closes without a word (its holder is gone);
    in a session of its own, so that a kill of the run's process group spares it."""
    try:
        return subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHDOG, str(group)], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:  # no watchdog: the group still ends with close()
        return None


def _release_watchdog(watchdog: subprocess.Popen | None) -> None:
    if watchdog is None:
        return
    with contextlib.suppress(OSError, ValueError):
        watchdog.stdin.write(b"released")
    with contextlib.suppress(OSError, ValueError):
        watchdog.stdin.close()
    try:
        watchdog.wait(timeout=5)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


def kill_group(group: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
