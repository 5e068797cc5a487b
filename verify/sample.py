"""The sample model: what every source produces and every engine consumes.

A sample is an ordered list of typed segments. ``allow_special=True`` means the
segment may produce special / control tokens; ``False`` means any control-token
look-alike inside it must be encoded as ordinary text. The reference result of a
sample is the concatenation of the per-segment encodes under that rule
(see docs/segments.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8. An ASCII string (CPython knows it without a scan) is as long
    in bytes as in characters: no copy is made for the common case."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Segment(NamedTuple):
    """A named tuple: samples cross process boundaries by the million, and tuples pickle
    and construct several times faster than dataclass instances."""

    text: str
    allow_special: bool = False


@dataclass(frozen=True, slots=True)
class Sample:
    """``id`` lets a user find the input again: the record's id, or file:line / file:row."""

    id: str
    segments: tuple[Segment, ...]

    def __reduce__(self):
        return (Sample, (self.id, self.segments))

    @classmethod
    def plain(cls, sample_id: str, text: str) -> "Sample":
        return cls(sample_id, (Segment(text, False),))

    @classmethod
    def from_segments(cls, sample_id: str, segments: Iterable[tuple[str, bool] | Segment]) -> "Sample":
        segs = tuple(s if isinstance(s, Segment) else Segment(s[0], bool(s[1])) for s in segments)
        return cls(sample_id, segs)

    @property
    def text(self) -> str:
        if len(self.segments) == 1:
            return self.segments[0].text
        return "".join(s.text for s in self.segments)

    @property
    def is_plain(self) -> bool:
        segments = self.segments
        if len(segments) == 1:  # a corpus record: asked of every sample by every executor
            return not segments[0].allow_special
        return not any(s.allow_special for s in segments)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "segments": [[s.text, s.allow_special] for s in self.segments],
        }

    @classmethod
    def from_json(cls, obj: dict) -> "Sample":
        return cls.from_segments(obj["id"], [(t, a) for t, a in obj["segments"]])


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A corpus record that cannot become a sample (null or missing text, broken JSON
    or UTF-8, a lone surrogate): where it is, why, and its first bytes. Sources yield
    these instead of raising, so one bad record never ends a run; it is counted and
    reported as a ``bad-input`` finding."""

    position: str  # file:line, file@byte, file:rowN
    reason: str
    raw: bytes | str | None = None
