"""A history: the calls that led an engine to a finding it does not give on a fresh instance.

A finding that reproduces alone on a fresh engine (``verify.executors.fresh``) is a plain
divergence. One that does not depends on state: on calls made before it (a cache, a buffer --
*history*) or on the other inputs of its own batch call (*batch composition*). Either way the
finding keeps the calls that led to it, in order, and is minimised as a sequence of calls:

    History(calls, victim)     calls: tuple of calls, each a tuple of samples (one batch call);
                               victim: (call, element) -- the finding's sample -- or (call, None)
                               when the call itself failed (a batch call that crashes)
    history.to_json() / History.from_json(doc)        the record's ``history`` block
    still_fails(history0, kind, ...) -> predicate      replays on a fresh engine each time
    minimize_history(history, predicate, max_calls=..., budget_s=...) -> HistoryResult

Minimisation keeps the bug it started with: the predicate asks the victim to fail after the
candidate history *and* (for an element victim) to pass alone on a fresh engine -- a
candidate whose victim fails on its own has slipped to another, stateless bug. A worker's
history can be thousands of calls, and a poison is usually recent, so it first looks for the
shortest failing *suffix* (``shortest_suffix``: the last 1, 2, 4, ... calls before the
victim's), then passes, each repeated until nothing shrinks, within ``max_calls`` predicate
calls:

  1. the victim's call: the elements after the victim dropped, then each call before it;
  2. earlier elements: delta debugging by chunks, coarse to fine (identical elements make
     removals that coincide, so a batch of 5,000 equal runs bisects in a few dozen calls);
  3. calls split: every element a call of its own, when the bug does not need a batch;
  4. runs shrunk together: every occurrence of one ``unit × count`` run in every call changed
     at once (a cache keyed on ``' '×N`` needs the poison's run and the victim's to stay
     equal while N is bisected), then each sample's text alone (``verify.minimize``).

The cause this names (``kind``): ``history`` when calls before the victim's call are needed,
``batch`` when only other elements of its own call are, ``stateless`` when neither is (a
flaky or nondeterministic engine: the victim failed alone in the end).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from verify.minimize import minimize
from verify.outcome import Failure, FindingKind, differ
from verify.run_length import compact, from_runs, to_runs
from verify.sample import Sample, Segment

SCHEMA = "verify.history/1"
MAX_CALLS = 400  # predicate calls of one history minimisation (each one or two fresh engines)

Calls = tuple[tuple[Sample, ...], ...]
Victim = tuple[int, "int | None"]


@dataclass(frozen=True)
class History:
    calls: Calls
    victim: Victim

    @property
    def victim_sample(self) -> Sample | None:
        i, j = self.victim
        return None if j is None else self.calls[i][j]

    @property
    def chars(self) -> int:
        return sum(len(seg.text) for call in self.calls for s in call for seg in s.segments)

    @property
    def elements(self) -> int:
        return sum(len(call) for call in self.calls)

    def cause_kind(self) -> str:
        """``history``, ``batch`` or ``stateless`` (see the module docstring)."""
        i, j = self.victim
        if i > 0:
            return "history"
        if len(self.calls[i]) > 1 or j is None:
            return "batch"
        return "stateless"

    def canonical(self) -> tuple:
        return tuple(tuple(s.segments for s in call) for call in self.calls) + (self.victim,)

    # --- the record's form -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Calls as lists of ``[sample, repeat]`` (equal neighbours once), a sample as its segments,
        a long repetitive segment text as runs (``{"runs": [[unit, count], ...]}``)."""
        calls = []
        for call in self.calls:
            out: list[list] = []
            for s in call:
                encoded = [_segment_json(seg) for seg in s.segments]
                if out and out[-1][0] == encoded:
                    out[-1][1] += 1
                else:
                    out.append([encoded, 1])
            calls.append(out)
        return {"schema": SCHEMA, "calls": calls, "victim": list(self.victim),
                "elements": self.elements, "chars": self.chars}

    @classmethod
    def from_json(cls, doc: dict[str, Any], sample_id: str = "history") -> "History":
        calls = []
        for c, call in enumerate(doc["calls"]):
            samples: list[Sample] = []
            for encoded, repeat in call:
                segments = tuple(_segment_from_json(seg) for seg in encoded)
                samples += [Sample(f"{sample_id}:call{c}:{len(samples) + k}", segments) for k in range(int(repeat))]
            calls.append(tuple(samples))
        i, j = doc["victim"]
        return cls(tuple(calls), (int(i), None if j is None else int(j)))

    def describe(self, limit: int = 160) -> str:
        """One line: the calls, the victim marked."""
        from verify.run_length import describe

        parts = []
        for c, call in enumerate(self.calls):
            items = []
            for e, s in enumerate(call):
                text = describe(to_runs(s.text), limit=limit) if len(s.text) > 24 else repr(s.text)
                items.append(("→" if self.victim == (c, e) else "") + text)
            items = _fold_equal(items)
            parts.append(("[" + ", ".join(items) + "]") + ("!" if self.victim == (c, None) else ""))
        return " ; ".join(parts)


def _fold_equal(items: list[str]) -> list[str]:
    out: list[list] = []
    for item in items:
        if out and out[-1][0] == item:
            out[-1][1] += 1
        else:
            out.append([item, 1])
    return [item if n == 1 else f"{item} ×{n}" for item, n in out]


def _segment_json(seg: Segment) -> list:
    runs = compact(seg.text) if len(seg.text) >= 64 else None
    return [{"runs": runs} if runs is not None else seg.text, seg.allow_special]


def _segment_from_json(doc: list) -> Segment:
    text, allow = doc
    if isinstance(text, dict):
        text = from_runs(text["runs"])
    return Segment(text, bool(allow))


# --- replay ---------------------------------------------------------------------------------------

def victim_result(history: History, results: list) -> Any:
    """The victim's outcome (or its call's failure) in a replay's results."""
    i, j = history.victim
    call = results[i]
    if isinstance(call, Failure) or j is None:
        return call
    return call[j]


def fails_like(kind: str, error_type: str | None, outcome: Any, expected: Any) -> bool:
    """Whether ``outcome`` shows the finding: ids that differ from the reference's ``expected``
    ids (``kind`` ids), or a failure of the same kind and type."""
    if kind == FindingKind.IDS:
        return differ(expected, outcome)
    return isinstance(outcome, Failure) and outcome.kind == kind and (error_type is None or outcome.type == error_type)


def still_fails(kind: str, error_type: str | None, replayer, expected_of: Callable[[Sample], Any]
                ) -> Callable[[History], bool]:
    """The predicate: the victim fails after the history on a fresh engine, and (an element
    victim) passes alone on another -- never a stateless bug in its place."""
    def fails(history: History) -> bool:
        victim = history.victim_sample
        expected = expected_of(victim) if kind == FindingKind.IDS and victim is not None else None
        sequences = [history.calls]
        if victim is not None and (history.victim[0] > 0 or len(history.calls[0]) > 1):
            sequences.append(((victim,),))
        results = replayer.replay_many(sequences)
        if not fails_like(kind, error_type, victim_result(history, results[0]), expected):
            return False
        return len(results) == 1 or not fails_like(kind, error_type, results[1][0][0], expected)
    return fails


# --- minimisation ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class HistoryResult:
    history: History
    calls: int  # predicate calls made
    seconds: float
    stopped_on_budget: bool
    reproduced: bool
    initial_elements: int
    initial_chars: int


class _Stop(Exception):
    pass


class _Search:
    def __init__(self, history: History, predicate: Callable[[History], bool], max_calls: int, deadline: float):
        self.current = history
        self.predicate, self.max_calls, self.deadline = predicate, max_calls, deadline
        self.calls = 0
        self.stopped = False
        self.seen: dict[tuple, bool] = {}

    def test(self, candidate: History) -> bool:
        key = candidate.canonical()
        if key in self.seen:
            return self.seen[key]
        if self.calls >= self.max_calls or time.monotonic() >= self.deadline:
            self.stopped = True
            raise _Stop
        self.calls += 1
        try:
            result = bool(self.predicate(candidate))
        except Exception:
            result = False
        self.seen[key] = result
        return result

    def accept(self, candidate: History) -> bool:
        if candidate.canonical() != self.current.canonical() and self.test(candidate):
            self.current = candidate
            return True
        return False

    # 1. the victim's call, and whole calls before it ---------------------------------------------
    def trim_calls(self) -> None:
        h = self.current
        i, j = h.victim
        if j is not None and j + 1 < len(h.calls[i]):
            self.accept(History(h.calls[:i] + (h.calls[i][:j + 1],), (i, j)))
        else:
            self.accept(History(h.calls[:i + 1], h.victim))
        c = 0
        while c < self.current.victim[0]:
            h = self.current
            i, j = h.victim
            if not self.accept(History(h.calls[:c] + h.calls[c + 1:], (i - 1, j))):
                c += 1

    # 2. earlier elements by chunks -----------------------------------------------------------------
    def remove_elements(self) -> None:
        flat = _flatten(self.current)
        size = 1
        while size * 2 <= max(1, len(flat) // 2):
            size *= 2
        while size >= 1:
            at = 0
            while True:
                flat = _flatten(self.current)
                others = [k for k, (_, _, is_victim) in enumerate(flat) if not is_victim]
                if at >= len(others):
                    break
                drop = set(others[at:at + size])
                if not self.accept(_rebuild(flat, drop)):
                    at += size
            size //= 2

    # 3. every element its own call -------------------------------------------------------------------
    def split_calls(self) -> None:
        h = self.current
        if all(len(call) == 1 for call in h.calls) or h.victim[1] is None:
            return
        calls, victim = [], None
        for c, call in enumerate(h.calls):
            for e, s in enumerate(call):
                if (c, e) == h.victim:
                    victim = (len(calls), 0)
                calls.append((s,))
        self.accept(History(tuple(calls), victim))

    # 4. runs together, then each text ------------------------------------------------------------------
    def shrink_runs_together(self) -> None:
        for unit, count in sorted(_shared_runs(self.current), key=lambda r: (-r[1] * len(r[0]), r[0])):
            lo, hi = 0, count  # hi fails (the current count); find the smallest that still does
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if self.accept(_with_run_count(self.current, unit, hi, mid)):
                    hi = mid
                else:
                    lo = mid

    def shrink_texts(self) -> None:
        h = self.current
        for c in range(len(h.calls)):
            for e in range(len(h.calls[c])):
                if c >= len(self.current.calls) or e >= len(self.current.calls[c]):
                    continue
                sample = self.current.calls[c][e]

                def with_sample(s: Sample, c=c, e=e) -> History:
                    cur = self.current
                    call = cur.calls[c][:e] + (Sample(sample.id, s.segments),) + cur.calls[c][e + 1:]
                    return History(cur.calls[:c] + (call,) + cur.calls[c + 1:], cur.victim)

                budget = max(0.0, self.deadline - time.monotonic())
                left = self.max_calls - self.calls
                if left <= 0 or budget <= 0:
                    self.stopped = True
                    raise _Stop
                result = minimize(sample, lambda s: self.test(with_sample(s)), budget_s=budget, max_calls=left)
                if result.reproduced and result.sample.segments != sample.segments:
                    self.current = with_sample(result.sample)

    def run(self) -> None:
        while True:
            before = self.current.canonical()
            self.trim_calls()
            self.remove_elements()
            self.split_calls()
            self.shrink_runs_together()
            self.shrink_texts()
            if self.current.canonical() == before:
                return


def suffixes(history: History) -> list[History]:
    """The history's suffixes, shortest first: the victim's call (cut after the victim) alone, then
    with the last 1, 2, 4, ... calls before it, then the whole history."""
    i, j = history.victim
    own = history.calls[i] if j is None else history.calls[i][:j + 1]
    out: list[History] = []
    k = 0
    while True:
        start = max(0, i - k)
        out.append(History(history.calls[start:i] + (own,), (i - start, j)))
        if start == 0:
            break
        k = 1 if k == 0 else k * 2
    if own != history.calls[i] or len(history.calls) > i + 1:
        out.append(History(history.calls[:i + 1], history.victim))
    return out


def shortest_suffix(history: History, fails: Callable[[History], bool]) -> History | None:
    """The shortest suffix of ``history`` that still fails (``suffixes`` order), or None."""
    for candidate in suffixes(history):
        if fails(candidate):
            return candidate
    return None


def minimize_history(history: History, predicate: Callable[[History], bool], *, max_calls: int = MAX_CALLS,
                     budget_s: float = 120.0) -> HistoryResult:
    started = time.monotonic()
    search = _Search(history, predicate, max_calls, started + budget_s)
    reproduced = False
    try:
        short = shortest_suffix(history, search.test)  # every suffix is a smaller history: tried first
        reproduced = short is not None
        if reproduced:
            search.current = short
            search.run()
    except _Stop:
        pass
    return HistoryResult(search.current, search.calls, time.monotonic() - started, search.stopped, reproduced,
                         history.elements, history.chars)


def _flatten(h: History) -> list[tuple[int, Sample, bool]]:
    return [(c, s, (c, e) == h.victim) for c, call in enumerate(h.calls) for e, s in enumerate(call)]


def _rebuild(flat: list[tuple[int, Sample, bool]], drop: set[int]) -> History:
    """The calls without the dropped elements (an emptied call goes; a failed call's victim is the call)."""
    calls: list[list[Sample]] = []
    victim: Victim | None = None
    last_call = None
    for k, (c, s, is_victim) in enumerate(flat):
        if k in drop:
            continue
        if c != last_call:
            calls.append([])
            last_call = c
        if is_victim:
            victim = (len(calls) - 1, len(calls[-1]))
        calls[-1].append(s)
    if victim is None:  # the victim is a whole call: it is the last call kept
        victim = (len(calls) - 1, None)
    return History(tuple(tuple(call) for call in calls), victim)


def _shared_runs(h: History) -> set[tuple[str, int]]:
    """The ``(unit, count)`` runs (count > 1) of every segment text of the history."""
    out: set[tuple[str, int]] = set()
    for call in h.calls:
        for s in call:
            for seg in s.segments:
                if len(seg.text) > 1:
                    out.update((u, n) for u, n in to_runs(seg.text) if n > 1)
    return out


def _with_run_count(h: History, unit: str, count: int, new: int) -> History:
    """Every ``unit × count`` run of every text as ``unit × new``."""
    def change(text: str) -> str:
        runs = to_runs(text)
        if not any(u == unit and n == count for u, n in runs):
            return text
        return from_runs([[u, new if (u == unit and n == count) else n] for u, n in runs])

    calls = tuple(tuple(Sample(s.id, tuple(Segment(change(seg.text), seg.allow_special) for seg in s.segments))
                        for s in call) for call in h.calls)
    return History(calls, h.victim)


def samples_of(segments_list: Sequence[Sequence[tuple[str, bool]]], sample_id: str = "call") -> tuple[Sample, ...]:
    return tuple(Sample.from_segments(f"{sample_id}:{k}", segs) for k, segs in enumerate(segments_list))
