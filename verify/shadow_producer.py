"""A small producer of ``verify.shadow/1`` records for a serving stack (docs/shadow.md).

    from verify.shadow_producer import ShadowSampler

    sampler = ShadowSampler(0.05, "/var/log/tokenizer-shadow/shadow.jsonl")
    ...
    ids = tokenizer.encode(prompt)                      # what the server feeds the model
    sampler.sample(request_id, "cl100k-server", "1.4.2", VOCAB_SHA256, prompt, ids, digest_only=True)

``shadow_record`` builds one record (a dict); ``ShadowSampler`` keeps a deterministic
fraction of requests and appends their records to a JSON Lines file, one ``write`` per
line on an ``O_APPEND`` descriptor (whole lines, also from several threads or worker
processes). Whether a request is kept depends only on ``seed`` and its request id -- or
its session id, so a session is kept or dropped whole: ``verify shadow`` can only replay
a session whose turns 0..n are all recorded. The record is only built when kept, so the
cost for the other requests is one hash.

``digest_only=True`` records ``ids_digest`` (``verify.keys.ids_digest``: xxh3-128 over the
ids as little-endian uint32) and ``ids_len`` instead of the ids: a few dozen bytes per
request however long the prompt, and still an exact check.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from verify import jsonl
from verify.corpora.shards import keep_record
from verify.keys import ids_digest
from verify.shadow.schema import SCHEMA

TextOrSegments = str | Sequence[tuple[str, bool]]


def _ids(ids) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim != 1 or (arr.size and (arr.min() < 0 or arr.max() > 2 ** 32 - 1)):
        raise ValueError("ids must be a flat sequence of integers in [0, 2^32)")
    return arr.astype(np.uint32)


def shadow_record(request_id: str, tokenizer_name: str, version: str, vocab_sha256: str | None,
                  text_or_segments: TextOrSegments, ids, *, digest_only: bool = False,
                  timestamp: str | datetime | None = None, session: tuple[str, int] | None = None) -> dict[str, Any]:
    """One record. ``text_or_segments``: the prompt as one string, or ``[(text, allow_special), ...]``
    when parts of it may produce special tokens (chat-template structure) and parts must not
    (user text). ``ids``: production's ids for it -- for a session turn (``session=(id, turn)``,
    turns numbered from 0, ``text_or_segments`` what the turn appended) the ids of the whole
    transcript after the turn. ``timestamp``: default now (UTC)."""
    arr = _ids(ids)
    when = timestamp or datetime.now(timezone.utc)
    record: dict[str, Any] = {
        "schema": SCHEMA, "request_id": str(request_id),
        "timestamp": when if isinstance(when, str) else when.isoformat(timespec="milliseconds"),
        "tokenizer": {"name": tokenizer_name, "version": version, "vocab_sha256": vocab_sha256},
    }
    if isinstance(text_or_segments, str):
        record["text"] = text_or_segments
    else:
        record["segments"] = [[str(t), bool(a)] for t, a in text_or_segments]
    if digest_only:
        record["ids_digest"], record["ids_len"] = ids_digest(arr), int(arr.size)
    else:
        record["ids"] = [int(i) for i in arr]
    if session is not None:
        record["session"] = {"id": str(session[0]), "turn": int(session[1])}
    return record


class ShadowSampler:
    """Keeps ``rate`` of the requests (0 < rate <= 1), deterministically, appending to ``path``."""

    def __init__(self, rate: float, path: str | Path, *, seed: int = 0):
        if not 0 < rate <= 1:
            raise ValueError("rate must be in (0, 1]")
        self.rate, self.seed, self.path = float(rate), int(seed), Path(path)
        self.kept = self.seen = 0
        self._lock = threading.Lock()
        self._fd: int | None = None

    def keeps(self, request_id: str, session_id: str | None = None) -> bool:
        """Whether this request is sampled (by its session when it has one)."""
        return keep_record(self.seed, self.rate, f"session:{session_id}" if session_id is not None
                           else f"request:{request_id}")

    def sample(self, request_id: str, tokenizer_name: str, version: str, vocab_sha256: str | None,
               text_or_segments: TextOrSegments, ids, *, digest_only: bool = False,
               timestamp: str | datetime | None = None, session: tuple[str, int] | None = None) -> bool:
        """Append this request's record when it is sampled; returns whether it was."""
        self.seen += 1
        if not self.keeps(str(request_id), None if session is None else str(session[0])):
            return False
        self.append(shadow_record(request_id, tokenizer_name, version, vocab_sha256, text_or_segments, ids,
                                  digest_only=digest_only, timestamp=timestamp, session=session))
        return True

    def append(self, record: dict[str, Any]) -> None:
        data = jsonl.line(record).encode("utf-8")
        with self._lock:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            written = os.write(self._fd, data)
            if written != len(data):  # a full disk: say so rather than leave half a line unnoticed
                raise OSError(f"{self.path}: wrote {written} of {len(data)} bytes of a shadow record")
            self.kept += 1

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "ShadowSampler":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False
