"""Stateful sessions: the engine layer's protocol for incremental tokenizers.

Agent serving appends a little text to a long transcript every turn; a stateful
tokenizer re-tokenizes only near the end. An engine with ``capabilities.sessions``
opens sessions; each ``append`` of typed segments returns what changed:

    session = engine.open_session(state=None)        # or a stored state, to resume
    update = session.append([Segment("more text", False)])
    ids = apply_update(previous_ids, update)          # previous[:replace_from] + update.ids
    state = session.state()                          # bytes to resume in a fresh process, or None
    session.close()

``SessionUpdate.replace_from`` is the index from which the transcript's ids were
replaced (``len(previous)`` for a pure append, ``0`` for a full re-encode) and
``ids`` the new ids from there on; ``notes`` carries what the engine reports about
the step (a repair's window, widenings, fallback, which certificate rule it relied
on). A correct session's ids after every append equal the reference's from-scratch
encode of the whole transcript so far -- that is what ``verify replay`` checks.

The simplest stateful plugin (``python:MODULE:ATTR``) is an object with
``open_session()`` returning an object with ``append(text) -> ids of the whole
transcript``; ``PluginSession`` wraps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

import numpy as np

from verify.engines.base import as_token_array
from verify.sample import Segment


@dataclass
class SessionUpdate:
    replace_from: int
    ids: np.ndarray  # uint32 ids of the transcript from ``replace_from`` on
    notes: dict[str, Any] = field(default_factory=dict)


class Session(Protocol):
    def append(self, segments: Sequence[Segment]) -> SessionUpdate: ...

    def state(self) -> bytes | None: ...

    def close(self) -> None: ...


def apply_update(previous: np.ndarray, update: SessionUpdate) -> np.ndarray:
    """The transcript's ids after an update."""
    if not 0 <= update.replace_from <= previous.size:
        raise ValueError(f"update replaces from {update.replace_from}, but the transcript has {previous.size} ids")
    return np.concatenate([previous[:update.replace_from], as_token_array(update.ids)])


class PluginSession:
    """A plugin's session object whose ``append(text)`` returns the whole transcript's ids."""

    def __init__(self, inner, special: bool = False):
        self.inner = inner
        self.special = special
        self._length = 0

    def append(self, segments: Sequence[Segment]) -> SessionUpdate:
        if any(s.allow_special for s in segments) and not self.special:
            raise ValueError("this plugin's sessions take plain text only")
        if self.special and callable(getattr(self.inner, "append_segments", None)):
            full = as_token_array(self.inner.append_segments([(s.text, s.allow_special) for s in segments]))
        else:
            full = as_token_array(self.inner.append("".join(s.text for s in segments)))
        self._length = int(full.size)
        return SessionUpdate(0, full)

    def state(self) -> bytes | None:
        getter = getattr(self.inner, "state", None)
        return getter() if callable(getter) else None

    def close(self) -> None:
        closer = getattr(self.inner, "close", None)
        if callable(closer):
            closer()


class FullReencodeSession:
    """A session over any stateless engine: every append re-encodes the whole transcript.
    What ``naive:INNER`` is, and the reference side of a replay."""

    def __init__(self, engine):
        self.engine = engine
        self.segments: list[Segment] = []

    def append(self, segments: Sequence[Segment]) -> SessionUpdate:
        from verify.sample import Sample

        from verify.session_trace import coalesce

        self.segments = list(coalesce([*self.segments, *segments]))  # a turn continues the text before it
        (ids,) = self.engine.encode_batch([Sample("session", tuple(self.segments))])
        return SessionUpdate(0, as_token_array(ids), {"route": "full"})

    def state(self) -> bytes | None:
        import json

        return json.dumps([[s.text, s.allow_special] for s in self.segments]).encode()

    def close(self) -> None:
        self.segments = []
