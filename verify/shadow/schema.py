"""The shadow record, schema ``verify.shadow/1`` (docs/shadow.md): one production request.

    parse_record(position, doc) -> ShadowRecord | BadRecord

A record names the request (``request_id``, ``timestamp``), the production tokenizer
(``tokenizer``: ``name``, ``version``, ``vocab_sha256``), its input (``text``, or typed
``segments`` ``[[text, allow_special], ...]``) and what production gave: the ``ids``, or
their ``ids_digest`` (``verify.keys.ids_digest``: xxh3-128 over the ids as little-endian
uint32) with ``ids_len``. With ``session`` ``{id, turn}`` the input is what that turn
appended and the ids (or digest) are those of the whole transcript after it.

A JSON line or a Parquet row that breaks a rule is a ``BadRecord`` saying which, never
dropped: a shadow sample that cannot be checked is reported, not counted as confirmed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from verify.corpora.files import scalar_checked
from verify.outcome import Recorded
from verify.sample import BadRecord, Sample, Segment

SCHEMA = "verify.shadow/1"
PRODUCTION_PREFIX = "production:"  # findings name production's tokenizer as engine production:NAME
MAX_ID = 2 ** 32 - 1
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
# every field of the record (the columns of a Parquet shadow file)
FIELDS = ("schema", "request_id", "timestamp", "tokenizer", "text", "segments", "ids", "ids_digest", "ids_len",
          "session")


@dataclass(frozen=True)
class Tokenizer:
    name: str
    version: str
    vocab_sha256: str | None  # None: the serving stack cannot tell

    @property
    def engine(self) -> str:
        """How findings name this tokenizer (its version is per record: one bug, many versions)."""
        return PRODUCTION_PREFIX + self.name

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "vocab_sha256": self.vocab_sha256}


@dataclass(frozen=True)
class ShadowRecord:
    position: str  # file:line or file:rowN
    request_id: str
    timestamp: str  # as recorded
    when: datetime  # parsed, UTC
    tokenizer: Tokenizer
    segments: tuple[Segment, ...]  # the request's input (a session turn: what it appended)
    ids: np.ndarray | None  # production's ids, or None when only their digest was recorded
    ids_digest: str
    ids_len: int
    session_id: str | None = None
    turn: int | None = None

    @property
    def id(self) -> str:  # what Shard.records() samples by
        return self.request_id

    @property
    def digest_only(self) -> bool:
        return self.ids is None

    def production(self) -> np.ndarray | Recorded:
        """Production's outcome as ``verify.outcome.agree`` compares it."""
        return self.ids if self.ids is not None else Recorded(self.ids_digest, self.ids_len)

    def sample(self, segments: tuple[Segment, ...] | None = None) -> Sample:
        return Sample(self.request_id, self.segments if segments is None else segments)

    def describe(self) -> dict[str, Any]:
        """The record's identity in a finding (never its text)."""
        doc: dict[str, Any] = {"request_id": self.request_id, "timestamp": self.timestamp,
                               "tokenizer": self.tokenizer.as_dict(), "position": self.position,
                               "recorded": "digest" if self.digest_only else "ids",
                               "production": {"ids_len": self.ids_len, "ids_digest": self.ids_digest}}
        if self.session_id is not None:
            doc["session"] = {"id": self.session_id, "turn": self.turn}
        return doc


@dataclass(frozen=True)
class ShadowSession:
    """The records of one session, turns 0, 1, ... in order (the reader checks they are whole)."""

    id: str
    records: tuple[ShadowRecord, ...]

    def trace(self):
        """The session as the trace model sees it: each turn what it appended."""
        from verify.session_trace import SessionTrace, Turn

        return SessionTrace(self.id, tuple(Turn(r.turn, r.segments) for r in self.records))


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 (``2026-03-01T12:00:00Z``, offsets, fractions) or a Parquet timestamp; a time
    without zone is UTC."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _tokenizer(value: Any) -> Tokenizer | str:
    if not isinstance(value, dict):
        return "needs 'tokenizer': {name, version, vocab_sha256}"
    name, version, sha = value.get("name"), value.get("version"), value.get("vocab_sha256")
    if not isinstance(name, str) or not name:
        return "'tokenizer.name' must be a non-empty string"
    if not isinstance(version, str) or not version:
        return "'tokenizer.version' must be a non-empty string"
    if sha is not None and not (isinstance(sha, str) and _HEX64.fullmatch(sha)):
        return "'tokenizer.vocab_sha256' must be 64 lowercase hex characters (or null when unknown)"
    return Tokenizer(name, version, sha)


def _segments(doc: dict[str, Any]) -> tuple[Segment, ...] | str:
    text, segments = doc.get("text"), doc.get("segments")
    if (text is None) == (segments is None):
        return "needs exactly one of 'text' (a string) or 'segments' ([[text, allow_special], ...])"
    if text is not None:
        return (Segment(text, False),) if isinstance(text, str) else "'text' must be a string"
    if not isinstance(segments, list) or not segments:
        return "'segments' must be a non-empty list of [text, allow_special] pairs"
    out = []
    for seg in segments:
        if isinstance(seg, dict):  # a Parquet list<struct<text, allow_special>>
            seg = [seg.get("text"), seg.get("allow_special")]
        if not (isinstance(seg, (list, tuple)) and len(seg) == 2 and isinstance(seg[0], str)
                and isinstance(seg[1], bool)):
            return "'segments' must be a non-empty list of [text, allow_special] pairs"
        out.append(Segment(seg[0], seg[1]))
    return tuple(out)


def _production(doc: dict[str, Any]) -> tuple[np.ndarray | None, str, int] | str:
    from verify.keys import ids_digest

    ids, digest, length = doc.get("ids"), doc.get("ids_digest"), doc.get("ids_len")
    if (ids is None) == (digest is None):
        return "needs exactly one of 'ids' or 'ids_digest' (with 'ids_len')"
    if ids is not None:
        if not isinstance(ids, (list, tuple)) or not all(
                isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_ID for i in ids):
            return "'ids' must be a list of integers in [0, 2^32)"
        arr = np.asarray(ids, dtype=np.uint32)
        if length is not None and length != arr.size:
            return f"'ids_len' is {length} but 'ids' holds {arr.size} ids"
        return arr, ids_digest(arr), int(arr.size)
    if not isinstance(digest, str) or not _HEX32.fullmatch(digest):
        return "'ids_digest' must be 32 lowercase hex characters (verify.keys.ids_digest)"
    if not isinstance(length, int) or isinstance(length, bool) or length < 0:
        return "'ids_digest' needs 'ids_len', a non-negative integer"
    return None, digest, length


def parse_record(position: str, doc: Any, raw: bytes | str | None = None) -> ShadowRecord | BadRecord:
    """One decoded JSON object or Parquet row; ``raw`` is kept on a bad record (its first bytes)."""
    if not isinstance(doc, dict):
        return BadRecord(position, "expected a JSON object per line", raw)
    if doc.get("schema") not in (None, SCHEMA):
        return BadRecord(position, f"schema is {doc.get('schema')!r}, not {SCHEMA}", raw)
    request_id = doc.get("request_id")
    if isinstance(request_id, int) and not isinstance(request_id, bool):
        request_id = str(request_id)
    if not isinstance(request_id, str) or not request_id:
        return BadRecord(position, "needs 'request_id' (a non-empty string)", raw)
    when = parse_timestamp(doc.get("timestamp"))
    if when is None:
        return BadRecord(position, "needs 'timestamp' (ISO 8601, e.g. 2026-03-01T12:00:00Z)", raw)
    parts = [_tokenizer(doc.get("tokenizer")), _segments(doc), _production(doc)]
    for part in parts:
        if isinstance(part, str):
            return BadRecord(position, part, raw)
    tokenizer, segments, (ids, digest, length) = parts
    checked = scalar_checked(position, Sample(request_id, segments), raw)
    if isinstance(checked, BadRecord):
        return checked
    session, session_id, turn = doc.get("session"), None, None
    if session is not None:
        if not (isinstance(session, dict) and isinstance(session.get("id"), str) and session["id"]
                and isinstance(session.get("turn"), int) and not isinstance(session["turn"], bool)
                and session["turn"] >= 0):
            return BadRecord(position, "'session' must be {id: non-empty string, turn: integer >= 0}", raw)
        session_id, turn = session["id"], session["turn"]
    stamp = doc["timestamp"] if isinstance(doc["timestamp"], str) else when.isoformat()
    return ShadowRecord(position, request_id, stamp, when, tokenizer, segments, ids, digest, length,
                        session_id, turn)
