"""The two control engines of session replay: ``naive:INNER_SPEC`` and ``concat:INNER_SPEC``.

``naive`` re-encodes the whole transcript on every append (``FullReencodeSession``
over the inner engine, which joins adjacent same-flag segments as
``SessionTrace.transcript`` does): it must never diverge from the inner
engine's from-scratch encode, so a replay finding against it is a harness bug or
an inner engine that is not its own reference.

``concat`` appends the ids of each append, encoded alone, to the ids it had
(``SessionUpdate(replace_from=len(previous), ids=encode(append))``). Tokenization
is not concatenation-invariant ("12" + "345" is not "12345"), so it is wrong by
design: the harness must find it, with session and turn.

Both states are JSON (``open_session(state)`` resumes in a fresh process): the
transcript's segments, and for ``concat`` the number of ids it holds.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from verify.session_trace import coalesce
from verify.engines.base import as_token_array
from verify.engines.sessions import FullReencodeSession, SessionUpdate
from verify.engines.wrapped import WrappedEngine
from verify.sample import Sample, Segment


def segments_from_json(raw) -> list[Segment]:
    if not isinstance(raw, list) or not all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and isinstance(s[1], bool) for s in raw):
        raise ValueError("session state: 'segments' must be [[text, allow_special], ...]")
    return [Segment(t, a) for t, a in raw]


def segments_to_json(segments: Sequence[Segment]) -> list:
    return [[s.text, s.allow_special] for s in segments]


class NaiveSession(FullReencodeSession):
    def __init__(self, owner: "NaiveEngine", state: bytes | None = None):
        super().__init__(owner.inner)
        self.owner = owner
        if state is not None:
            self.segments = list(coalesce(segments_from_json(json.loads(state))))

    def append(self, segments: Sequence[Segment]) -> SessionUpdate:
        self.owner.check_segments(segments)
        self.owner.appends += 1
        return super().append(segments)


class NaiveEngine(WrappedEngine):
    adapter_name = "naive"

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.appends = 0

    def open_session(self, state: bytes | None = None) -> NaiveSession:
        return NaiveSession(self, state)

    def session_notes(self) -> dict[str, Any]:
        return {"appends": self.appends, "full_reencodes": self.appends}


class ConcatSession:
    def __init__(self, owner: "ConcatEngine", state: bytes | None = None):
        self.owner = owner
        self.segments: list[Segment] = []
        self.length = 0
        if state is not None:
            saved = json.loads(state)
            self.segments = segments_from_json(saved.get("segments"))
            self.length = int(saved.get("length", 0))

    def append(self, segments: Sequence[Segment]) -> SessionUpdate:
        self.owner.check_segments(segments)
        appended = coalesce(segments)
        self.owner.appends += 1
        if not appended:
            return SessionUpdate(self.length, as_token_array([]), {"route": "concat"})
        (ids,) = self.owner.inner.encode_batch([Sample("append", appended)])
        ids = as_token_array(ids)
        update = SessionUpdate(self.length, ids, {"route": "concat"})
        self.segments = list(coalesce([*self.segments, *appended]))
        self.length += int(ids.size)
        return update

    def state(self) -> bytes:
        return json.dumps({"segments": segments_to_json(self.segments), "length": self.length}).encode()

    def close(self) -> None:
        self.segments = []


class ConcatEngine(WrappedEngine):
    adapter_name = "concat"

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.appends = 0

    def open_session(self, state: bytes | None = None) -> ConcatSession:
        return ConcatSession(self, state)

    def session_notes(self) -> dict[str, Any]:
        return {"appends": self.appends, "control": "wrong by design: the ids of each append, encoded alone, "
                                                    "concatenated"}
