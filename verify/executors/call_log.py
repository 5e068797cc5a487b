"""The calls an executor made, most recent last, within a bound: what a history finding keeps.

A finding that does not reproduce on a fresh engine depends on what the engine saw before
(``verify.history``). Those earlier calls exist only in the worker that made them, so every
executor logs its encode calls here as it makes them: each entry is one call (the samples of
one batch, in order). The log is bounded twice -- ``MAX_CALLS`` calls and ``MAX_CHARS``
characters (each sample counted ``SAMPLE_OVERHEAD_CHARS`` more), the oldest dropped first, the
newest call always kept -- so its memory does not grow with the corpus; a history whose
poison lies further back is reported as such.

    log.record(samples)                 -> the call's sequence number
    log.through(sample) -> (calls, (i, j)) the kept calls up to the latest that held ``sample``
                                         (compared by identity, then by segments), and where
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from verify.sample import Sample

MAX_CALLS = 4096
MAX_CHARS = 8_000_000
# what a kept sample costs besides its text (the Sample, its id, its segment tuple), in characters:
# a log of millions of 4-character strings (verify certify) would otherwise hold ~600 MB in 8M characters
SAMPLE_OVERHEAD_CHARS = 100


def _chars(samples: Sequence[Sample]) -> int:
    return sum(len(seg.text) for s in samples for seg in s.segments) + SAMPLE_OVERHEAD_CHARS * len(samples)


class CallLog:
    def __init__(self, max_calls: int = MAX_CALLS, max_chars: int = MAX_CHARS):
        self.max_calls, self.max_chars = max_calls, max_chars
        self._calls: deque[tuple[int, tuple[Sample, ...], int]] = deque()  # (sequence, samples, chars)
        self._chars = 0
        self.sequence = 0  # calls recorded so far (dropped ones included)
        self.dropped = 0

    def record(self, samples: Sequence[Sample]) -> int:
        self.sequence += 1
        chars = _chars(samples)
        self._calls.append((self.sequence, tuple(samples), chars))
        self._chars += chars
        while len(self._calls) > 1 and (len(self._calls) > self.max_calls or self._chars > self.max_chars):
            _, _, old = self._calls.popleft()
            self._chars -= old
            self.dropped += 1
        return self.sequence

    def through(self, sample: Sample, min_size: int = 1) -> tuple[list[tuple[Sample, ...]], tuple[int, int]] | None:
        """The kept calls from the oldest to the latest call that held ``sample`` (and at least
        ``min_size`` samples: the batch call, not a sample's later call alone) and the victim's
        ``(call, element)`` there; None when no kept call held it."""
        calls = list(self._calls)
        for match in (lambda s: s is sample, lambda s: s.segments == sample.segments):
            for at in range(len(calls) - 1, -1, -1):
                samples = calls[at][1]
                if len(samples) < min_size:
                    continue
                for j, s in enumerate(samples):
                    if match(s):
                        return [c[1] for c in calls[:at + 1]], (at, j)
        return None

    def older_dropped(self) -> bool:
        """Whether calls older than the kept ones were made (a history may need them)."""
        return self.dropped > 0

    def clear(self) -> None:
        self._calls.clear()
        self._chars = 0
