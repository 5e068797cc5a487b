"""Typed errors. Everything below the CLI raises these; the CLI maps them to
one stderr line and an exit code (see ``verify.cli``)."""

import errno

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)  # the disk is full; over the disk quota


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


class DiskFullError(VerifyError):
    """A write found no space left (ENOSPC, or EDQUOT: over quota). Exit 2, one line, like any
    error the user can fix: what was committed before stays, so once space is freed (or the
    folder moved to a bigger disk) a ``--resume`` continues the run."""


def disk_full(exc: BaseException, out=None) -> DiskFullError | None:
    """``exc`` as a ``DiskFullError`` when it is a write that found the disk full, else None.
    ``out``: the folder being written, named when the error itself names no file."""
    if not isinstance(exc, OSError) or exc.errno not in NO_SPACE:
        return None
    where = exc.filename or out
    what = f"the disk holding {where}" if where else "the disk"
    return DiskFullError(f"no space left on {what} ({errno.errorcode[exc.errno]}): free space or move the folder "
                         f"to a bigger disk, then run again (with --resume where the command takes it)")
