"""The state hunt's inputs: poison calls, then victims, from the length families.

A stateful fast path -- a result cache, a reused buffer, a mode left set -- goes wrong only
after some earlier input: ``encode(' '×4096)`` is right on a fresh engine and wrong after an
input with a run of 4,096 spaces followed by a letter. The hunt sends each *victim* (a run of
one character class, at and around powers of two and the known thresholds) after *poison*
inputs drawn from the same family (the same run followed by a character of each other class),
in single calls and inside one batch, and compares what the engine gives with the victim's
right ids (the reference's; without a reference, the engine's own on a fresh instance).

    for group in state_plan(limit):          # deterministic: the same groups for the same limit
        group.victim, group.poisons           # Samples

Groups come in priority order (the likeliest shapes first: whitespace runs, powers of two), so
a limit keeps the most telling ones; ``plan_size`` says how many there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from verify.sample import Sample

# run classes: the character a run is made of (whitespace first: caches of whitespace runs are common)
RUN_CHARS = (" ", "\n", "\t", "a", "1", ".", "A", "\u4e2d", "\u00e9")
# what follows a run in a poison: one character of each other class
FOLLOWERS = ("a", " ", "1", ".", "\n", "A", "\u4e2d")
# lengths: powers of two from 2^4 to 2^15 and their neighbours, and documented thresholds
POWERS = tuple(range(4, 16))
THRESHOLDS = (500, 25_000, 25_001)
DEFAULT_LIMIT = 600  # victim groups a check sends (each with one poison per follower)


@dataclass(frozen=True)
class StateGroup:
    run: str
    length: int

    @property
    def victim(self) -> Sample:
        return Sample.plain(f"state:{_name(self.run)}x{self.length}", self.run * self.length)

    @property
    def poisons(self) -> tuple[Sample, ...]:
        return tuple(Sample.plain(f"state:{_name(self.run)}x{self.length}+{_name(f)}", self.run * self.length + f)
                     for f in FOLLOWERS if f != self.run)

    def recipe(self) -> dict:
        return {"shape": "state", "run": self.run, "length": self.length}


def _name(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def _lengths() -> list[int]:
    out: list[int] = []
    for k in POWERS:  # the power first, then its neighbours: a limit keeps the powers
        out.append(2 ** k)
    for k in POWERS:
        out += [2 ** k - 1, 2 ** k + 1]
    out += list(THRESHOLDS)
    return list(dict.fromkeys(out))


def state_plan(limit: int | None = DEFAULT_LIMIT) -> Iterator[StateGroup]:
    """Victim groups in priority order: lengths (powers of two first), then run classes."""
    n = 0
    for length in _lengths():
        for run in RUN_CHARS:
            if limit is not None and n >= limit:
                return
            n += 1
            yield StateGroup(run, length)


def plan_size(limit: int | None = DEFAULT_LIMIT) -> dict[str, int]:
    groups = list(state_plan(limit))
    poisons = sum(len(g.poisons) for g in groups)
    chars = sum(g.length * (1 + 2 * len(g.poisons)) for g in groups)  # victims, poisons, and the batches
    return {"groups": len(groups), "poisons": poisons, "chars": chars}
