"""One writer per OUT: ``OUT/.verify.lock``, held for as long as a command writes there.

Two ``--resume`` of one folder at once would run the same shards twice and interleave their
commits. The lock is ``flock`` on ``OUT/.verify.lock``, which holds the owner's pid: a
second command finds it taken and stops with one line naming that process (exit 2). The
kernel drops a lock when its process ends however it ends (kill -9 included), so a folder
whose writer is gone is taken over by the next command, whatever the file says.

The owner removes the file when it is done (while still holding it: a command that opened it
meanwhile sees that the file it locked is no longer the one at the path, and tries again), and
with it OUT itself when the lock made OUT and nothing else was written there.

    with out_lock(out):
        ...write into out...
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from verify.errors import UsageError
from verify.rundir.layout import LOCK_FILE, RunFolder


class OutInUse(UsageError):
    """Another live process writes into this OUT."""


def _owner(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return text if text.isdigit() else "unknown"


def acquire(out: Path) -> int:
    """The lock's file descriptor, held; ``OutInUse`` when another process holds it."""
    import fcntl

    path = RunFolder(out).lock
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _owner(fd)
            os.close(fd)
            raise OutInUse(f"{out} is in use by another verify (process {owner}): wait for it to end or stop it, "
                           "then run again (one writer per folder)") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            return fd
        os.close(fd)  # the owner removed it as we opened it: lock the file now at the path


def release(out: Path, fd: int, remove_out: bool = False) -> None:
    with contextlib.suppress(OSError):
        RunFolder(out).lock.unlink()
    os.close(fd)
    if remove_out:
        with contextlib.suppress(OSError):
            Path(out).rmdir()  # only when nothing else is there


@contextlib.contextmanager
def out_lock(out: Path) -> Iterator[None]:
    """Hold OUT's lock for the block (OUT is made when missing, and removed again when the block
    left nothing in it)."""
    out = Path(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        fd = acquire(out)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    try:
        yield
    finally:
        release(out, fd, remove_out=created)


def only_the_lock(out: Path) -> bool:
    """Whether OUT holds nothing but its lock (a folder a failed start may remove)."""
    try:
        return {p.name for p in Path(out).iterdir()} <= {LOCK_FILE}
    except OSError:
        return False
