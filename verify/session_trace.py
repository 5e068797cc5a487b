"""The trace record model: a session and its turns (what an agent trace, a shadow record and
a stateful engine's session share; the core of the sample model, beside ``verify.sample``)."""

from __future__ import annotations

from dataclasses import dataclass

from verify.sample import Sample, Segment


def coalesce(segments) -> tuple[Segment, ...]:
    """Adjacent segments with the same ``allow_special`` joined; empty ones dropped."""
    out: list[Segment] = []
    for seg in segments:
        if not seg.text:
            continue
        if out and out[-1].allow_special == seg.allow_special:
            out[-1] = Segment(out[-1].text + seg.text, seg.allow_special)
        else:
            out.append(seg)
    return tuple(out)


@dataclass(frozen=True)
class Turn:
    index: int
    segments: tuple[Segment, ...]  # what this turn appends to the transcript
    recorded_ids: tuple[int, ...] | None = None  # the transcript's ids after it, as a trace recorded them

    @property
    def chars(self) -> int:
        return sum(len(s.text) for s in self.segments)


@dataclass(frozen=True)
class SessionTrace:
    id: str  # leads back to the session: file:line, a log's session id, agent:SEED:INDEX
    turns: tuple[Turn, ...]

    def transcript(self, upto: int) -> Sample:
        """The whole transcript after turn ``upto`` (0-based position in ``turns``).

        Turn boundaries are not segment boundaries: a turn that appends plain text to
        plain text continues the same text, and a from-scratch encode sees the whole
        run (``docs/segments.md`` rule 3 keeps segments apart, so adjacent segments with
        the same ``allow_special`` are joined here into one)."""
        return Sample(f"{self.id}#{self.turns[upto].index}",
                      coalesce(seg for turn in self.turns[:upto + 1] for seg in turn.segments))

    def to_json(self) -> dict:
        return {"schema": "verify.trace/1", "session": self.id,
                "turns": [{"turn": t.index, "append": [[s.text, s.allow_special] for s in t.segments],
                           **({"ids": list(t.recorded_ids)} if t.recorded_ids is not None else {})}
                          for t in self.turns]}
