"""Paths read from committed files stay inside the run folder; a folder given to write into is one.

A committed file is untrusted input: a findings line may name ``"input_file":
"../secret/secret.json"`` or ``/etc/passwd``. ``inside(out, relative)`` resolves such a
path against OUT and refuses, with one line, anything that is absolute or ends up outside
OUT (``..``, a symlink out) -- so no stage reads, or copies into its own output, a file
the run did not write."""

from __future__ import annotations

from pathlib import Path

from verify.errors import UsageError


class OutsideRunFolder(UsageError):
    """A committed file names a path outside the run folder."""


def inside(out: Path, relative: str, what: str = "a committed path") -> Path:
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise OutsideRunFolder(f"{what} {relative!r} is not a path inside {out}: refused")
    root = Path(out).resolve()
    if Path(relative).is_absolute():
        raise OutsideRunFolder(f"{what} {relative!r} is absolute, not inside {out}: refused")
    path = (root / relative).resolve()
    if path != root and root not in path.parents:
        raise OutsideRunFolder(f"{what} {relative!r} points outside {out}: refused")
    return path


def folder_to_write(path: Path, flag: str = "--out") -> Path:
    """``path`` as a folder to write into: one already there, or one that can be made (its nearest
    existing ancestor is a folder). A file, or a path under one, is one line (exit 2), before any work."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} is a file, not a directory")
    ancestor = next(p for p in (path.absolute(), *path.absolute().parents) if p.exists())
    if not ancestor.is_dir():
        raise UsageError(f"{flag} {path}: {ancestor} is a file, not a directory")
    return path
