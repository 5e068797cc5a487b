"""``OUT/attempts.jsonl``: one line when a run attempt (a start or a ``--resume``) begins
and one when it ends, appended. A killed attempt has no end line; the next one says it
resumed. (An *attempt* is a run of the driver; a *session* is a tokenizer's stateful session.)

A line cut short as it was appended (the disk filled up, the driver was killed) is skipped
when read, and the next line starts on a line of its own: the run stays resumable."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from verify import jsonl
from verify.rundir.layout import RunFolder


def append_attempt(out: Path, entry: dict[str, Any]) -> None:
    with open(RunFolder(out).attempts, "a+b") as fh:
        fh.write(_line_start(fh) + jsonl.line(entry).encode("utf-8"))


def _line_start(fh) -> bytes:
    """A line end when the file ends inside a line (one cut short), else nothing."""
    if fh.seek(0, os.SEEK_END) == 0:
        return b""
    fh.seek(-1, os.SEEK_END)
    return b"" if fh.read(1) == b"\n" else b"\n"


def read_attempts(out: Path) -> list[dict[str, Any]]:
    """Attempts in order, each with its begin and end lines merged (a torn line left out)."""
    merged: dict[int, dict[str, Any]] = {}
    path = RunFolder(out).attempts
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.exists() else []
    for text in lines:
        try:
            entry = json.loads(text)
        except (ValueError, RecursionError):  # a torn line; nested past the parser
            continue
        if isinstance(entry, dict) and isinstance(entry.get("attempt"), int):
            merged.setdefault(entry["attempt"], {}).update(entry)
    return [merged[k] for k in sorted(merged)]
