"""``OUT/sessions.jsonl``: one line when a session (a start or a ``--resume``) begins and
one when it ends, appended. A killed session has no end line; the next one says it resumed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from verify import jsonl

SESSIONS_FILE = "sessions.jsonl"


def append_session(out: Path, entry: dict[str, Any]) -> None:
    with open(Path(out) / SESSIONS_FILE, "a", encoding="utf-8") as fh:
        fh.write(jsonl.line(entry))


def read_sessions(out: Path) -> list[dict[str, Any]]:
    """Sessions in order, each with its begin and end lines merged."""
    path = Path(out) / SESSIONS_FILE
    merged: dict[int, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                merged.setdefault(entry["session"], {}).update(entry)
    return [merged[k] for k in sorted(merged)]
