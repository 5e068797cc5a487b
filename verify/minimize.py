"""Shrink a failing sample to a small reproducer.

    minimize(sample, still_fails, budget_s=30.0, max_calls=None) -> MinimizeResult

``still_fails(candidate) -> bool`` is the only thing the minimiser knows about
the failure; an exception raised by it counts as "not failing". The result is
the smallest candidate found for which it held.

Order of candidates ("smaller"): fewer characters, then fewer segments, then
simpler characters position by position, where the simplest characters are
``'a'``, ``'0'``, ``' '`` (in that order) and every other character is ranked by
code point. Every accepted step is strictly smaller in that order, so the search
ends; a canonical "seen" table means no candidate is ever tested twice.

First, when a segment's text is mostly repetition (``verify.run_length.compact``: ``'1' * 24998 +
'\x1c' + '11'``), the minimiser works over its run-length form: a run of one unit with a
count is one element -- runs are dropped, then each count is bisected down to the smallest
that still fails -- so a 10^6-character run costs about 20 calls per run, and a finding
comes back as ``'a'×500`` or ``'1'×24998 + '\x1c' + '1'×2``, not as 25,000 characters.
While the input is still more than ``RUN_CHARS`` characters of runs after that, the
character passes below do not run: a reproducer stays a run, with its characters (a
character replaced in a long run can change which rule the input hits).

Passes, repeated until a whole round changes nothing (or the budget ends):
  1. characters: delta debugging by chunk removal, coarse to fine — drop halves,
     quarters, ... of each segment's text, down to single characters. A bug
     buried in a 1 MB document costs about two predicate calls per halving.
  2. segments: drop whole segments; merge adjacent segments with the same
     ``allow_special``.
  3. simplification: replace a character (first every occurrence of it, then
     each position) by a simpler one: 'a', '0', ' ', then the smallest code
     point of the same general category in its 256-block and below U+3400.

Deterministic for a deterministic predicate: the same input and ``max_calls``
give the same result. ``budget_s`` is wall-clock, so a run stopped by it may
stop at a different point; ``stopped_on_budget`` says so.
"""

from __future__ import annotations

import hashlib
import time
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from verify.sample import Sample, Segment

Segs = tuple[tuple[str, bool], ...]

SIMPLEST = "a0 "  # preferred replacements, simplest first
RUN_CHARS = 256  # a text of runs longer than this (after the run pass) gets only whole-text character passes


@dataclass(frozen=True)
class MinimizeResult:
    sample: Sample
    calls: int  # predicate calls actually made (cache hits not counted)
    seconds: float
    stopped_on_budget: bool  # the time budget or max_calls ended the search early
    reproduced: bool  # the initial sample failed; when False, ``sample`` is the input unchanged
    initial_chars: int

    @property
    def chars(self) -> int:
        return sum(len(s.text) for s in self.sample.segments)


class _Stop(Exception):
    """Budget or call limit reached."""


def char_rank(ch: str) -> tuple[int, int]:
    """Total order on characters: 'a' < '0' < ' ' < everything else by code point."""
    i = SIMPLEST.find(ch)
    return (0, i) if i >= 0 else (1, ord(ch))


def _key(segs: Segs) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    for text, special in segs:
        data = text.encode("utf-8", "surrogatepass")
        h.update(b"\x01" if special else b"\x00")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


class _Oracle:
    def __init__(self, sample_id: str, still_fails: Callable[[Sample], bool], deadline: float,
                 max_calls: int | None):
        self.sample_id = sample_id
        self.still_fails = still_fails
        self.deadline = deadline
        self.max_calls = max_calls
        self.calls = 0
        self.stopped = False
        self.seen: dict[bytes, bool] = {}

    def __call__(self, segs: Segs) -> bool:
        key = _key(segs)
        cached = self.seen.get(key)
        if cached is not None:
            return cached
        if (self.max_calls is not None and self.calls >= self.max_calls) or time.monotonic() >= self.deadline:
            self.stopped = True
            raise _Stop
        self.calls += 1
        try:
            result = bool(self.still_fails(Sample(self.sample_id, tuple(Segment(t, a) for t, a in segs))))
        except Exception:
            result = False
        self.seen[key] = result
        return result


def minimize(sample: Sample, still_fails: Callable[[Sample], bool], *, budget_s: float = 30.0,
             max_calls: int | None = None) -> MinimizeResult:
    start = time.monotonic()
    oracle = _Oracle(sample.id, still_fails, start + budget_s, max_calls)
    current: Segs = tuple((s.text, s.allow_special) for s in sample.segments)
    initial_chars = sum(len(t) for t, _ in current)
    reproduced = False
    try:
        reproduced = oracle(current)
        if reproduced:
            shrinker = _Shrinker(current, oracle)
            try:
                shrinker.run()
            finally:
                current = shrinker.current
    except _Stop:
        pass
    return MinimizeResult(
        sample=Sample(sample.id, tuple(Segment(t, a) for t, a in current)),
        calls=oracle.calls, seconds=time.monotonic() - start, stopped_on_budget=oracle.stopped,
        reproduced=reproduced, initial_chars=initial_chars)


class _Shrinker:
    def __init__(self, segs: Segs, oracle: _Oracle):
        self.current = segs
        self.oracle = oracle

    def accept(self, candidate: Segs) -> bool:
        if candidate != self.current and self.oracle(candidate):
            self.current = candidate
            return True
        return False

    def with_text(self, j: int, text: str) -> Segs:
        segs = self.current
        return segs[:j] + ((text, segs[j][1]),) + segs[j + 1:]

    def run(self) -> None:
        while True:
            before = self.current
            self.shrink_runs()
            long = self.long_runs()
            if not long:
                self.remove_chunks()
            self.shrink_segments()
            if not long:  # a reproducer of runs keeps its characters: '1'×24998 + '\x1c' + '1'×2
                self.simplify()
            if self.current == before:
                return

    def long_runs(self) -> bool:
        """Still longer than ``RUN_CHARS`` and made of runs: character passes would cost a call per
        character of a run and break the run up, and the run pass has done what they could."""
        from verify.run_length import compact

        return sum(len(t) for t, _ in self.current) > RUN_CHARS and \
            all(len(t) <= RUN_CHARS or compact(t) is not None for t, _ in self.current)

    # 0. runs: drop runs, bisect counts ---------------------------------------------
    def shrink_runs(self) -> None:
        from verify.run_length import compact, from_runs

        for j in range(len(self.current)):
            runs = compact(self.current[j][0])
            if runs is None:
                continue
            changed = True
            while changed:
                changed = False
                k = 0
                while k < len(runs):  # drop a whole run
                    trial = _merged(runs[:k] + runs[k + 1:])
                    if self.accept(self.with_text(j, from_runs(trial))):
                        runs, changed = trial, True
                    else:
                        k += 1
                for k in range(len(runs)):  # the smallest count that still fails (bisected)
                    lo, hi = 0, int(runs[k][1])
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        trial = runs[:k] + [[runs[k][0], mid]] + runs[k + 1:]
                        if self.accept(self.with_text(j, from_runs(trial))):
                            hi, changed = mid, True
                        else:
                            lo = mid
                    runs = runs[:k] + [[runs[k][0], hi]] + runs[k + 1:]

    # 1. delta debugging over characters, coarse to fine ----------------------
    def remove_chunks(self) -> None:
        longest = max((len(t) for t, _ in self.current), default=0)
        size = 1
        while size * 2 <= longest // 2:
            size *= 2
        while size >= 1:
            for j in range(len(self.current)):
                i = 0
                while i < len(self.current[j][0]):
                    text = self.current[j][0]
                    if not self.accept(self.with_text(j, text[:i] + text[i + size:])):
                        i += size
            size //= 2

    # 2. segments ---------------------------------------------------------------
    def shrink_segments(self) -> None:
        j = 0
        while len(self.current) > 1 and j < len(self.current):
            if not self.accept(self.current[:j] + self.current[j + 1:]):
                j += 1
        j = 0
        while j + 1 < len(self.current):
            (a, fa), (b, fb) = self.current[j], self.current[j + 1]
            if not (fa == fb and self.accept(self.current[:j] + ((a + b, fa),) + self.current[j + 2:])):
                j += 1

    # 3. character simplification ---------------------------------------------
    def simplify(self, per_position: bool = True) -> None:
        # every occurrence of a character at once (cheap for long runs), then one position at a time
        for ch in sorted({c for t, _ in self.current for c in t}, key=char_rank):
            for repl in simpler_chars(ch):
                if self.accept(tuple((t.replace(ch, repl), a) for t, a in self.current)):
                    break
        if not per_position:
            return
        for j in range(len(self.current)):
            for i in range(len(self.current[j][0])):
                for repl in simpler_chars(self.current[j][0][i]):
                    text = self.current[j][0]
                    if self.accept(self.with_text(j, text[:i] + repl + text[i + 1:])):
                        break


def _merged(runs: list[list]) -> list[list]:
    """Adjacent runs of the same unit as one."""
    out: list[list] = []
    for unit, count in runs:
        if out and out[-1][0] == unit:
            out[-1] = [unit, out[-1][1] + count]
        else:
            out.append([unit, count])
    return out


@lru_cache(maxsize=None)
def _first_of_category(category: str, lo: int, hi: int) -> str | None:
    for cp in range(lo, hi):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        if unicodedata.category(chr(cp)) == category:
            return chr(cp)
    return None


@lru_cache(maxsize=4096)
def simpler_chars(ch: str) -> tuple[str, ...]:
    """Replacement candidates for ``ch``, simplest first, each strictly simpler than ``ch``."""
    rank = char_rank(ch)
    cp = ord(ch)
    options = list(SIMPLEST)
    if 0xD800 <= cp <= 0xDFFF:
        category = None
    else:
        category = unicodedata.category(ch)
    if category is not None:
        block = cp & ~0xFF
        for found in (_first_of_category(category, block, block + 0x100), _first_of_category(category, 0, 0x3400)):
            if found is not None:
                options.append(found)
    unique = sorted(set(options), key=char_rank)
    return tuple(c for c in unique if char_rank(c) < rank)
