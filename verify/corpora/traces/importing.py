"""What every trace importer shares: deterministic JSON rendering of structured parts,
the record-level error they raise, and turning a message list into a session.

    raise Invalid("'content' must be a string or a list of blocks")   # -> a BadRecord
    json_text({"name": "bash", "input": {...}})                       # sorted keys, UTF-8 kept
    yield from session_or_bad(template, "file.jsonl:3", messages, position="file.jsonl:3")
    for line in json_lines(path): ...                                 # JsonLine or BadRecord
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

from verify.session_trace import SessionTrace
from verify.corpora.traces.templates import ChatTemplate, Message
from verify.sample import BadRecord


class Invalid(ValueError):
    """A record that cannot become messages; the importer yields it as a BadRecord."""


class JsonLine(NamedTuple):
    lineno: int
    position: str  # file:line
    doc: dict
    raw: bytes


def json_lines(path: Path) -> Iterator[JsonLine | BadRecord]:
    """Every non-blank line of a JSON Lines file (``.gz``/``.zst`` too) as a JSON object;
    a line that is no JSON, or no object, is a BadRecord."""
    from verify.corpora.files import open_binary

    with open_binary(path) as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            position = f"{path}:{lineno}"
            try:
                doc = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield BadRecord(position, f"invalid JSON ({exc})", raw[:200])
                continue
            yield JsonLine(lineno, position, doc, raw) if isinstance(doc, dict) else \
                BadRecord(position, "not a JSON object", raw[:200])


def json_text(value) -> str:
    """``json.dumps`` with sorted keys and non-ASCII kept: the same text for the same value."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def require_text(value, what: str) -> str:
    if not isinstance(value, str):
        raise Invalid(f"{what} must be a string, got {type(value).__name__}")
    return value


def lone_surrogate(messages: Sequence[Message]) -> bool:
    for message in messages:
        try:
            message.content.encode("utf-8")
            message.role.encode("utf-8")
        except UnicodeEncodeError:
            return True
    return False


def session_or_bad(template: ChatTemplate, session_id: str, messages: Sequence[Message],
                   position: str) -> Iterator[SessionTrace | BadRecord]:
    """The session of ``messages`` (nothing when no message renders), or a BadRecord when a
    message holds a lone surrogate (not valid Unicode: no engine can be asked to encode it)."""
    if lone_surrogate(messages):
        yield BadRecord(position, f"session {session_id}: lone surrogate in a message (not valid Unicode)")
        return
    trace = template.session(session_id, messages)
    if trace is not None:
        yield trace
