"""Our own trace format, ``verify.trace/1``: JSON Lines, one line per turn, a session's
turns on consecutive lines in turn order:

    {"schema": "verify.trace/1", "session": "s1", "turn": 0, "text": "You are..."}
    {"schema": "verify.trace/1", "session": "s1", "turn": 1, "segments": [["<|im_start|>", true], ["hi", false]],
     "ids": [...]}

``text`` is one plain segment, ``segments`` typed ones; ``ids`` (optional) the ids a
production tokenizer gave the whole transcript after the turn. A line that breaks
these rules is a bad record; a session whose lines are not consecutive is too
(sort the file by session).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from verify.corpora.files import open_binary
from verify.session_trace import SessionTrace, Turn
from verify.sample import BadRecord, Segment

SCHEMA = "verify.trace/1"


def _turn(position: str, doc) -> Turn | BadRecord:
    if not isinstance(doc, dict) or doc.get("schema", SCHEMA) != SCHEMA:
        return BadRecord(position, f"not a {SCHEMA} line")
    if not isinstance(doc.get("session"), str) or not isinstance(doc.get("turn"), int):
        return BadRecord(position, "needs 'session' (string) and 'turn' (integer)")
    if isinstance(doc.get("text"), str):
        segments = (Segment(doc["text"], False),)
    elif isinstance(doc.get("segments"), list) and all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and isinstance(s[1], bool)
            for s in doc["segments"]):
        segments = tuple(Segment(t, a) for t, a in doc["segments"])
    else:
        return BadRecord(position, "needs 'text' or 'segments': [[text, allow_special], ...]")
    for segment in segments:
        try:
            segment.text.encode("utf-8")
        except UnicodeEncodeError:
            return BadRecord(position, "lone surrogate in text (not valid Unicode)")
    ids = doc.get("ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(i, int) and i >= 0 for i in ids)):
        return BadRecord(position, "'ids' must be a list of non-negative integers")
    return Turn(doc["turn"], segments, tuple(ids) if ids is not None else None)


def read(path: Path, shard=None) -> Iterator[SessionTrace | BadRecord]:
    current: str | None = None
    turns: list[Turn] = []
    seen: set[str] = set()
    with open_binary(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            position = f"{path}:{lineno}"
            if not raw.strip():
                continue
            try:
                doc = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield BadRecord(position, f"invalid JSON ({exc})", raw)
                continue
            turn = _turn(position, doc)
            if isinstance(turn, BadRecord):
                yield turn
                continue
            if doc["session"] != current:
                if current is not None:
                    yield SessionTrace(current, tuple(turns))
                if doc["session"] in seen:
                    yield BadRecord(position, f"session {doc['session']!r} continues after other sessions "
                                              "(sort the file by session)")
                    current, turns = None, []
                    continue
                current, turns = doc["session"], []
                seen.add(current)
            turns.append(turn)
    if current is not None:
        yield SessionTrace(current, tuple(turns))
