"""``OUT/attempts.jsonl``: one line when a run attempt (a start or a ``--resume``) begins
and one when it ends, appended. A killed attempt has no end line; the next one says it
resumed. (An *attempt* is a run of the driver; a *session* is a tokenizer's stateful session.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify import jsonl

ATTEMPTS_FILE = "attempts.jsonl"


def append_attempt(out: Path, entry: dict[str, Any]) -> None:
    with open(Path(out) / ATTEMPTS_FILE, "a", encoding="utf-8") as fh:
        fh.write(jsonl.line(entry))


def read_attempts(out: Path) -> list[dict[str, Any]]:
    """Attempts in order, each with its begin and end lines merged."""
    merged: dict[int, dict[str, Any]] = {}
    for entry in jsonl.read(Path(out) / ATTEMPTS_FILE):
        merged.setdefault(entry["attempt"], {}).update(entry)
    return [merged[k] for k in sorted(merged)]
