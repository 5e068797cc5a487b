"""Typed errors. Everything below the CLI raises these; the CLI maps them to
one stderr line and an exit code (see ``verify.cli``)."""

import errno

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)  # the disk is full; over the disk quota
NOT_WRITABLE = {errno.EROFS: "a read-only file system", errno.EACCES: "permission denied",
                errno.EPERM: "operation not permitted"}


class VerifyError(Exception):
    """Base class: a problem the user can fix. Its message is the one line shown."""


class UsageError(VerifyError):
    """Bad command-line usage or conflicting options."""


class ConfigError(VerifyError):
    """A bad engine spec, TOML file, or option value."""


class UnknownEngineError(ConfigError):
    """An engine spec names an adapter or engine that does not exist."""


class EngineUnavailableError(ConfigError):
    """The adapter exists but its package is not installed (message carries the install hint)."""


class VocabError(VerifyError):
    """A vocabulary cannot be found, fetched, or fails its pinned SHA-256."""


class CorpusError(VerifyError):
    """A corpus is missing, unreadable, corrupt, or not valid UTF-8."""


class CorruptFileError(VerifyError):
    """A file verify wrote (a manifest, a plan, a findings part) or the user configured is not
    what it should be: not JSON, nested deeper than Python parses, or of the wrong shape. One
    line naming the file (exit 2), never a crash."""


class DiskFullError(VerifyError):
    """A write found no space left (ENOSPC, or EDQUOT: over quota). Exit 2, one line, like any
    error the user can fix: what was committed before stays, so once space is freed (or the
    folder moved to a bigger disk) a ``--resume`` continues the run."""


class NotWritableError(VerifyError):
    """A write was refused by the file system (EROFS: mounted read-only; EACCES/EPERM: no
    permission). Exit 2, one line: the user's to fix (another --out, or the mount or the
    permissions), and what was committed before stays for ``--resume``."""


def one_line(text: str) -> str:
    """A message as one line: a library's multi-line message (pyarrow's, a child's stderr) is
    folded, its lines joined by " | " (blank ones dropped)."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return " | ".join(lines)


def storage_error(exc: BaseException, out=None) -> VerifyError | None:
    """``exc`` as the one-line error of a write the machine refused -- a full disk
    (``DiskFullError``), a read-only file system or no permission (``NotWritableError``) -- else
    None (then it is not the user's storage: a bug, raised as it is)."""
    full = disk_full(exc, out)
    if full is not None or not isinstance(exc, OSError) or exc.errno not in NOT_WRITABLE:
        return full
    where = exc.filename or out
    return NotWritableError(f"cannot write {where or 'the output folder'}: {NOT_WRITABLE[exc.errno]} "
                            f"({errno.errorcode[exc.errno]}): choose another --out, or make it writable, then run "
                            f"again (with --resume where the command takes it)")


def disk_full(exc: BaseException, out=None) -> DiskFullError | None:
    """``exc`` as a ``DiskFullError`` when it is a write that found the disk full, else None.
    ``out``: the folder being written, named when the error itself names no file."""
    if not isinstance(exc, OSError) or exc.errno not in NO_SPACE:
        return None
    where = exc.filename or out
    what = f"the disk holding {where}" if where else "the disk"
    return DiskFullError(f"no space left on {what} ({errno.errorcode[exc.errno]}): free space or move the folder "
                         f"to a bigger disk, then run again (with --resume where the command takes it)")
