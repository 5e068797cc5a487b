"""Files that exist whole or not at all: write to a temporary name beside the target,
then rename over it (``os.replace`` is atomic on one file system), so a reader -- or a
run resumed after ``kill -9`` -- never sees half a file.

    write_text(path, text)          write_json(path, obj, indent=2)
    write_lines(path, lines)        streamed: an iterable of text lines, never all held at once
    with file_lock(path): ...       one process at a time (a cache entry built once, by one of them)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any, Iterable


@contextlib.contextmanager
def file_lock(path: Path):
    """Hold an exclusive lock on ``path`` (made, with its folder, when missing): another process
    taking it waits until this one is done (building a cache entry both want)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def temporary(path: Path) -> Path:
    """The temporary name a writer of ``path`` uses (per process, so two writers never share one)."""
    path = Path(path)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_text(path: Path, text: str) -> Path:
    return write_lines(path, (text,))


def write_json(path: Path, obj: Any, indent: int | None = 2, **dumps: Any) -> Path:
    dumps.setdefault("ensure_ascii", False)
    return write_text(path, json.dumps(obj, indent=indent, **dumps) + "\n")


def write_bytes(path: Path, data: bytes) -> Path:
    return _write(path, "wb", (data,))


def write_lines(path: Path, lines: Iterable[str]) -> Path:
    """Write ``lines`` (each with its own line end) to ``path`` atomically."""
    return _write(path, "w", lines)


def _write(path: Path, mode: str, parts: Iterable) -> Path:
    path = Path(path)
    tmp = temporary(path)
    try:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as fh:
            for part in parts:
                fh.write(part)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
