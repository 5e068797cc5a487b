"""Shrink a failing session to a short (prefix, append) pair.

A session finding says: after turn K of a session, the engine's ids differ from the
reference's from-scratch encode of the transcript. Its record carries the whole
transcript (the finding's input) and how many characters each turn appended
(``session.turn_chars``), so the turns can be rebuilt without the trace file.

    minimize_session(turns, still_fails, budget_s) -> SessionMinimizeResult

``still_fails(turns) -> bool`` replays ``turns`` (a list of segment tuples, one per
turn) on a fresh session and says whether the last turn still diverges. The search:

1. fewer turns: the failing turn becomes the append and everything before it one
   prefix turn (the (prefix, append) pair); if the bug needs its history in several
   turns, turns are instead dropped from the left one at a time;
2. a shorter prefix: the generic minimiser (``verify.minimize``) over the prefix with
   the append fixed -- it removes chunks coarse to fine, the left part first, so a
   repair bug that needs only the text near the boundary keeps just that;
3. a shorter append: the same over the append with the prefix fixed;
4. 2 and 3 again while either shrinks (a shorter append may allow a shorter prefix).

An empty prefix that still fails means the bug is not about history at all: a
from-scratch encode of the append fails too; the result says so (``stateless``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

from verify.session_trace import coalesce
from verify.minimize import minimize
from verify.sample import Sample, Segment

Turns = list[tuple[Segment, ...]]


@dataclass(frozen=True)
class SessionMinimizeResult:
    turns: Turns  # the smallest failing session found: usually [prefix, append]
    calls: int
    seconds: float
    stopped_on_budget: bool
    reproduced: bool  # the initial session failed
    initial_chars: int

    @property
    def chars(self) -> int:
        return sum(len(s.text) for t in self.turns for s in t)

    @property
    def prefix(self) -> tuple[Segment, ...]:
        return coalesce(s for t in self.turns[:-1] for s in t)

    @property
    def append(self) -> tuple[Segment, ...]:
        return self.turns[-1] if self.turns else ()

    @property
    def stateless(self) -> bool:
        """The append alone fails: the bug needs no history."""
        return not self.prefix

    def transcript(self) -> Sample:
        return Sample("minimized", coalesce(s for t in self.turns for s in t))


def turns_from_record(segments: Sequence[Segment], turn_chars: Sequence[int]) -> Turns:
    """Split a transcript's segments back into turns of the given character counts."""
    turns: Turns = []
    queue = [Segment(s.text, s.allow_special) for s in segments]
    for want in turn_chars:
        turn: list[Segment] = []
        while want > 0 and queue:
            head = queue[0]
            if len(head.text) <= want:
                turn.append(head)
                want -= len(head.text)
                queue.pop(0)
            else:
                turn.append(Segment(head.text[:want], head.allow_special))
                queue[0] = Segment(head.text[want:], head.allow_special)
                want = 0
        turns.append(tuple(turn))
    if queue:  # characters past the recorded turns: they belong to the last turn
        turns[-1] = turns[-1] + tuple(queue) if turns else tuple(queue)
    return turns


def minimize_session(turns: Turns, still_fails: Callable[[Turns], bool], *, budget_s: float = 30.0,
                     max_calls: int | None = None) -> SessionMinimizeResult:
    started = time.monotonic()
    calls = 0
    seen: dict[tuple, bool] = {}

    def out_of_budget() -> bool:
        return time.monotonic() - started > budget_s or (max_calls is not None and calls >= max_calls)

    def fails(candidate: Turns) -> bool:
        nonlocal calls
        key = tuple(tuple((s.text, s.allow_special) for s in t) for t in candidate)
        if key not in seen:
            if out_of_budget():
                return False
            calls += 1
            try:
                seen[key] = bool(still_fails(candidate))
            except Exception:
                seen[key] = False
        return seen[key]

    initial_chars = sum(len(s.text) for t in turns for s in t)
    turns = [tuple(t) for t in turns if t] or [()]
    if not fails(turns):
        return SessionMinimizeResult(turns, calls, time.monotonic() - started, out_of_budget(), False, initial_chars)

    best = _fewer_turns(turns, fails)
    while not out_of_budget():
        before = sum(len(s.text) for t in best for s in t)
        position = 0
        while position < len(best):  # the prefix turns first, the append last
            length = len(best)
            best = _shrink_turn(best, position, fails, budget_s - (time.monotonic() - started))
            position += 1 if len(best) == length else 0
        if sum(len(s.text) for t in best for s in t) >= before:
            break
    return SessionMinimizeResult(best, calls, time.monotonic() - started, out_of_budget(), True, initial_chars)


def _fewer_turns(turns: Turns, fails) -> Turns:
    """The (prefix, append) pair if it still fails, else turns dropped from the left."""
    if len(turns) <= 2:
        return turns
    pair = [coalesce(s for t in turns[:-1] for s in t), turns[-1]]
    if fails(pair):
        return pair
    best = turns
    while len(best) > 2 and fails(best[1:]):
        best = best[1:]
    return best


def _shrink_turn(turns: Turns, position: int, fails, budget_s: float) -> Turns:
    """The generic minimiser over one turn, the others fixed."""
    if budget_s <= 0 or not turns[position]:
        return turns

    def with_turn(sample: Sample) -> Turns:
        return turns[:position] + [tuple(sample.segments)] + turns[position + 1:]

    result = minimize(Sample("turn", tuple(turns[position])), lambda s: fails(with_turn(s)), budget_s=budget_s)
    if not result.reproduced:
        return turns
    shrunk = with_turn(result.sample)
    if position == 0 and len(shrunk) == 2 and not shrunk[0] and fails([shrunk[1]]):
        return [shrunk[1]]  # no history needed
    return shrunk


def session_ids(executor, turns: Turns, key: str = "minimise"):
    """The transcript ids after replaying ``turns`` on a fresh session of ``executor``, or
    ``None`` when the engine fails on the way (a failure is not the divergence minimised)."""
    import numpy as np

    from verify.engines.sessions import apply_update
    from verify.outcome import Failure

    if isinstance(executor.open_session(key), Failure):
        return None
    try:
        ids = np.zeros(0, dtype=np.uint32)
        for turn in turns:
            update = executor.session_append(key, turn)
            if isinstance(update, Failure):
                return None
            ids = apply_update(ids, update)
        return ids
    finally:
        executor.close_session(key)


def replay_fails(reference, executor, key: str = "minimise") -> Callable[[Turns], bool]:
    """``still_fails`` for a stateful candidate: replay the turns on a fresh session of
    ``executor`` and compare its transcript ids after the last turn with ``reference``'s
    from-scratch encode (``verify.outcome.differ``: a failure on either side is not a
    divergence, so a minimised input never turns into a different kind of finding)."""
    from verify.outcome import differ

    def fails(turns: Turns) -> bool:
        ids = session_ids(executor, turns, key)
        if ids is None:
            return False
        (expected,) = reference.encode([Sample("minimise", coalesce(s for t in turns for s in t))])
        return differ(expected, ids)
    return fails


def minimized_session_fields(session: dict, sample: Sample, reference, executor, budget_s: float) -> dict | None:
    """Triage's ``minimized`` block for a session finding: the (prefix, append) pair, the
    whole minimised transcript as ``input``, and where the final replay diverges.
    ``None`` when the recorded session does not fail again (a flaky engine)."""
    from verify.findings import describe_divergence
    from verify.outcome import differ

    turns = turns_from_record(sample.segments, session.get("turn_chars") or [len(sample.text)])
    result = minimize_session(turns, replay_fails(reference, executor), budget_s=budget_s)
    if not result.reproduced:
        return None
    final = result.transcript()
    ids = session_ids(executor, result.turns, "minimised-final")
    (expected,) = reference.encode([final])
    if ids is None or not differ(expected, ids):
        return None
    located = describe_divergence(final, expected, ids, reference.token_bytes(expected), executor.token_bytes(ids))
    block = {"input": [[s.text, s.allow_special] for s in final.segments],
             "session": {"prefix": [[s.text, s.allow_special] for s in result.prefix],
                         "append": [[s.text, s.allow_special] for s in result.append],
                         "turns": len(result.turns), "stateless": result.stateless}}
    block.update({k: located.get(k) for k in ("token_index", "byte_offset", "char_offset", "expected", "actual")})
    block.update({"chars": result.chars, "initial_chars": result.initial_chars, "calls": result.calls,
                  "stopped_on_budget": result.stopped_on_budget})
    return block
