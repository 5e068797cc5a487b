"""One session of the ``repair`` engine: incremental re-tokenization by window and splice.

The session keeps the transcript (its segments, adjacent same-flag ones joined, as
``SessionTrace.transcript`` joins them), the transcript's ids, and for the last
segment each token's byte end. Segments are encoded independently (docs/segments.md),
so only the last segment can change when text of its own kind is appended; an
append that starts a segment of the other kind appends its ids (rule ``segment``).

Otherwise the window re-encode starts at ``w``: the last old token boundary (at a
UTF-8 character boundary) at or before ``window`` bytes from the segment's end. When
``w`` is the segment's start the re-encode is exact (rule ``segment``); else the
splice needs the certificate (``verify.engines.repair_certificate``); an uncertified
window doubles, up to ``widen`` times, then the whole last segment is re-encoded
(``fallback``; with ``fallback=false`` the last uncertified splice is accepted
instead). ``scheme=margin`` re-encodes from ``margin`` bytes back and never checks.

Token byte offsets come from the inner engine's ``token_bytes``; where the bytes of a
segment's tokens do not spell its text (a normalising tokenizer), that segment is
re-encoded whole on every append (counted as ``unaligned`` in the run notes).

``state()`` is JSON: the segments, the ids (base64 little-endian uint32) and where the
last segment's ids start; ``open_session(state)`` resumes it in a fresh process.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from typing import Any, Protocol, Sequence

import numpy as np

from verify.session_trace import coalesce
from verify.engines.base import TOKEN_DTYPE, as_token_array
from verify.engines.repair_certificate import RepairSettings, certify, matched_run
from verify.engines.session_controls import segments_from_json, segments_to_json
from verify.engines.sessions import SessionUpdate
from verify.sample import Sample, Segment



class RepairOwner(Protocol):
    """What a session needs of the engine that opened it (``RepairEngine``): its settings and
    counters, the engine it repairs with, and the engine's checks. Named as a protocol so that
    the session does not import the engine back."""

    settings: RepairSettings
    stats: Counter
    inner: Any  # the wrapped engine under repair

    def check_segments(self, segments: Sequence[Segment]) -> None: ...

    def longest(self) -> int: ...

STATE_SCHEMA = "verify.repair-state/1"
_EMPTY_IDS = np.zeros(0, dtype=TOKEN_DTYPE)
_EMPTY_ENDS = np.zeros(0, dtype=np.int64)


class RepairSession:
    def __init__(self, owner: RepairOwner, state: bytes | None = None):
        self.owner = owner
        self.settings = owner.settings
        self.segments: list[Segment] = []
        self.ids = _EMPTY_IDS
        self.last_start = 0  # index in ids of the last segment's first token
        self.last_text = bytearray()  # the last segment's UTF-8 bytes
        self.last_ends = _EMPTY_ENDS  # byte end of each of the last segment's tokens
        self.aligned = True  # the last segment's token bytes spell its text
        if state is not None:
            self._resume(state)

    # --- the inner engine -------------------------------------------------------------
    def _encode(self, segments: Sequence[Segment]) -> list[np.ndarray]:
        """Each segment encoded alone, in one call."""
        samples = [Sample(f"repair#{i}", (seg,)) for i, seg in enumerate(segments)]
        return [as_token_array(ids) for ids in self.owner.inner.encode_batch(samples)]

    def _ends(self, ids: np.ndarray, text: bytes) -> tuple[np.ndarray, bool]:
        pieces = self.owner.inner.token_bytes(ids)
        ends = np.cumsum(np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces)))
        return ends, (int(ends[-1]) if ends.size else 0) == len(text) and b"".join(pieces) == text

    # --- appends ------------------------------------------------------------------------
    def append(self, segments: Sequence[Segment]) -> SessionUpdate:
        self.owner.check_segments(segments)
        new = list(coalesce(segments))
        stats = self.owner.stats
        stats["appends"] += 1
        stats["appended_bytes"] += sum(len(s.text.encode()) for s in new)
        if not new:
            return SessionUpdate(int(self.ids.size), _EMPTY_IDS, {"rules": ["empty"]})
        if not self.segments or new[0].allow_special != self.segments[-1].allow_special:
            return self._append_segments(new)
        head, rest = new[0], new[1:]
        first, ids, ends, aligned, notes = self._repair_last(head.text)
        replace_from = self.last_start + first
        tail = [ids]
        self.segments[-1] = Segment(self.segments[-1].text + head.text, head.allow_special)
        self.last_text += head.text.encode()
        self.last_ends = np.concatenate([self.last_ends[:first], ends])
        self.aligned = aligned
        if rest:
            rest_ids = self._encode(rest)
            tail += rest_ids
            self._start_last(rest, rest_ids, replace_from + sum(int(t.size) for t in tail[:-1]))
        out = np.concatenate(tail) if len(tail) > 1 else ids
        self.ids = np.concatenate([self.ids[:replace_from], out])
        return SessionUpdate(replace_from, out, notes)

    def _append_segments(self, new: list[Segment]) -> SessionUpdate:
        """Text of the other kind: a segment boundary, after which old ids are final."""
        encoded = self._encode(new)
        replace_from = int(self.ids.size)
        out = np.concatenate(encoded) if len(encoded) > 1 else encoded[0]
        self._start_last(new, encoded, replace_from + int(out.size) - int(encoded[-1].size))
        self.ids = np.concatenate([self.ids, out])
        self.owner.stats["segment"] += 1
        return SessionUpdate(replace_from, out, {"window": 0, "widenings": 0, "fallback": False,
                                                 "rules": ["segment"]})

    def _start_last(self, new: list[Segment], encoded: list[np.ndarray], last_start: int) -> None:
        self.segments.extend(new)
        self.last_start = last_start
        self.last_text = bytearray(new[-1].text.encode())
        self.last_ends, self.aligned = self._ends(encoded[-1], bytes(self.last_text))

    # --- the last segment -----------------------------------------------------------------
    def _boundary(self, target: int) -> tuple[int, int]:
        """(w, k): the last token boundary ``w`` <= target at a character boundary, ``k`` tokens before it."""
        if target <= 0:
            return 0, 0
        k = int(np.searchsorted(self.last_ends, target, side="right"))
        while k > 0 and (self.last_text[int(self.last_ends[k - 1])] & 0xC0) == 0x80:
            k -= 1
        return (int(self.last_ends[k - 1]) if k else 0), k

    def _window(self, start: int, appended: str) -> tuple[np.ndarray, np.ndarray, bool]:
        text = self.last_text[start:].decode("utf-8") + appended
        (ids,) = self._encode([Segment(text, self.segments[-1].allow_special)])
        ends, aligned = self._ends(ids, text.encode())
        self.owner.stats["windows"] += 1
        self.owner.stats["reencoded_bytes"] += len(self.last_text) - start
        return ids, ends, aligned

    def _repair_last(self, appended: str):
        """(first old token replaced, its replacement ids, their byte ends, aligned, notes)."""
        s, stats = self.settings, self.owner.stats
        size = len(self.last_text)
        if not self.aligned:
            stats["unaligned"] += 1
            return self._accept(0, 0, *self._window(0, appended), {"rules": ["unaligned"], "fallback": True})
        if s.scheme == "margin":
            start, k = self._boundary(size - s.margin)
            ids, ends, aligned = self._window(start, appended)
            rule = "segment" if start == 0 else "margin"
            stats[rule] += 1
            return self._accept(start, k, ids, ends, aligned, {"rules": [rule], "window": size - start})
        window, widenings, tried, previous = s.window, 0, None, -1
        for attempt in range(s.widen + 1):
            if attempt:
                window *= 2
                widenings += 1
            start, k = self._boundary(size - window)
            if start == previous:
                continue  # the doubled window reaches the same token boundary
            previous = start
            ids, ends, aligned = self._window(start, appended)
            notes = {"window": size - start, "widenings": widenings, "fallback": False}
            if not aligned:  # the window's token bytes do not spell it: no offsets to align
                stats["unaligned"] += 1
                return self._accept(0, 0, *self._window(0, appended), {"rules": ["unaligned"], "fallback": True})
            if start == 0:
                stats["segment"] += 1
                stats["widenings"] += widenings
                return self._accept(0, 0, ids, ends, aligned, {**notes, "rules": ["segment"]})
            cert = certify(s, self.owner.longest() if s.cover is None else 0, text=self.last_text,
                           plain=not self.segments[-1].allow_special, start=start, old_ids=self._old_ids(),
                           old_ends=self.last_ends, first=k, window_ids=ids, window_ends=ends)
            notes.update(matched=cert.matched, covered=cert.covered, sync_at=cert.sync_at)
            if cert.ok:
                stats["certified"] += 1
                stats["widenings"] += widenings
                for rule in cert.passed:
                    stats[f"rule_{rule}"] += 1
                return self._accept(start, k, ids, ends, aligned, {**notes, "rules": list(cert.passed)})
            tried = (start, k, ids, ends, aligned, {**notes, "rules": list(cert.passed), "failed": list(cert.failed)})
        stats["widenings"] += widenings
        if tried is not None and not s.fallback:
            stats["uncertified"] += 1
            return self._accept(*tried[:5], {**tried[5], "uncertified": True})
        stats["fallbacks"] += 1
        return self._accept(0, 0, *self._window(0, appended),
                            {"window": size, "widenings": widenings, "fallback": True, "rules": ["fallback"]})

    def _old_ids(self) -> np.ndarray:
        return self.ids[self.last_start:]

    def _accept(self, start: int, k: int, ids: np.ndarray, ends: np.ndarray, aligned: bool, notes: dict):
        """Replace from the first window token that differs from the old token it overlays."""
        m = matched_run(self._old_ids(), self.last_ends, k, start, ids, ends) if aligned else 0
        notes = {"scheme": self.settings.scheme, "widenings": 0, "fallback": False, **notes}
        if self.settings.dropped():
            notes["dropped"] = self.settings.dropped()
        return k + m, ids[m:], ends[m:] + start, aligned, notes

    # --- state ------------------------------------------------------------------------
    def state(self) -> bytes:
        ids = np.ascontiguousarray(self.ids, dtype="<u4").tobytes()
        return json.dumps({"schema": STATE_SCHEMA, "segments": segments_to_json(self.segments),
                           "ids": base64.b64encode(ids).decode(), "last_start": self.last_start}).encode()

    def _resume(self, state: bytes) -> None:
        saved: Any = json.loads(state)
        if not isinstance(saved, dict) or saved.get("schema") != STATE_SCHEMA:
            raise ValueError(f"not a {STATE_SCHEMA} session state")
        self.segments = segments_from_json(saved.get("segments"))
        self.ids = np.frombuffer(base64.b64decode(saved.get("ids", "")), dtype="<u4").astype(TOKEN_DTYPE)
        self.last_start = int(saved.get("last_start", 0))
        if not 0 <= self.last_start <= self.ids.size:
            raise ValueError("session state: last_start outside the ids")
        if self.segments:
            self.last_text = bytearray(self.segments[-1].text.encode())
            self.last_ends, self.aligned = self._ends(self.ids[self.last_start:], bytes(self.last_text))

    def close(self) -> None:
        self.segments, self.ids, self.last_text = [], _EMPTY_IDS, bytearray()
