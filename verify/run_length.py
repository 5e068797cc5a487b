"""Texts as runs: the compact form a person can read and the exact text rebuilds from.

A long input that breaks an engine is usually a repetition -- ``'1' * 25001``, or
``'1' * 24998 + '\\x1c' + '11'`` -- and a 25,000-character record or report cell says
nothing a person can read. ``to_runs`` writes a text as ``[[unit, count], ...]``: each
unit a string of one to ``MAX_UNIT`` characters repeated ``count`` times, found greedily
(the shortest unit that repeats longest at each position); ``from_runs`` rebuilds the
exact text. ``describe`` spells it ``'1'×24998 + '\\x1c' + '1'×2``.

    runs = to_runs("1" * 24998 + "\\x1c" + "11")   # [["1", 24998], ["\\x1c", 1], ["1", 2]]
    assert from_runs(runs) == "1" * 24998 + "\\x1c" + "11"
    compact(text)   # the runs when they are much shorter than the text, else None
"""

from __future__ import annotations

import threading
import zlib
from typing import Iterable, Sequence

import zstandard

MAX_UNIT = 16  # the longest repeated unit looked for
MIN_CHARS = 64  # shorter texts are shown as they are
MIN_RATIO = 4  # the runs must be this many times shorter than the text (in characters) to be worth it

Runs = list[list]  # [[unit, count], ...]

_local = threading.local()  # a zstd context per thread (one is not safe to share)


def _zstd_size(data: bytes) -> int:
    compressor = getattr(_local, "zstd", None)
    if compressor is None:
        compressor = _local.zstd = zstandard.ZstdCompressor(level=1)
    return len(compressor.compress(data))


def _repeats(text: str, at: int, width: int) -> int:
    """How many times ``text[at:at + width]`` repeats from ``at`` (at least 1)."""
    unit = text[at:at + width]
    count, i = 1, at + width
    while text.startswith(unit, i):
        count += 1
        i += width
    return count


def to_runs(text: str, max_unit: int = MAX_UNIT, give_up_after: int | None = None) -> Runs | None:
    """Greedy run-length form: at each position the unit (1..max_unit characters) that covers
    the most characters by repetition, the shortest of equals; single characters that do
    not repeat are merged into one literal run (count 1). ``give_up_after``: None as soon as
    more than that many runs are written (the caller wants a short form or none)."""
    out: Runs = []
    i, n = 0, len(text)
    while i < n:
        if give_up_after is not None and len(out) > give_up_after:
            return None
        best_width, best_count = 1, _repeats(text, i, 1)
        for width in range(2, min(max_unit, n - i) + 1):
            count = _repeats(text, i, width)
            if count > 1 and count * width > best_count * best_width:
                best_width, best_count = width, count
        if best_count == 1:
            if out and out[-1][1] == 1 and len(out[-1][0]) < 64:  # a literal stretch: one run
                out[-1][0] += text[i]
            else:
                out.append([text[i], 1])
            i += 1
            continue
        out.append([text[i:i + best_width], best_count])
        i += best_width * best_count
    return out


def from_runs(runs: Iterable[Sequence]) -> str:
    return "".join(str(unit) * int(count) for unit, count in runs)


def compact(text: str) -> Runs | None:
    """The runs of ``text`` when they are worth reading instead of it, else None. Text that does
    not compress twice as well as the runs must (zlib, at C speed) is not repetition -- prose
    and code compress 3-5x, runs of a few units 50x and more --: no run-length pass over it,
    which costs a Python loop per character. The runs are a form to read; a text without them
    is kept as it is, so this gate decides presentation only."""
    if len(text) < MIN_CHARS:
        return None
    data = text.encode("utf-8", "surrogatepass")
    # zstd first, at a ratio half zlib's bar: three times zlib's speed, and every finding of a
    # run where every document diverges comes through here (prose: 0.022 CPU s per MB with zlib
    # alone). A text with runs worth reading compresses far past it (tests/test_run_length.py)
    if _zstd_size(data) * MIN_RATIO > len(data):
        return None
    if len(zlib.compress(data, 1)) * MIN_RATIO * 2 > len(data):
        return None
    runs = to_runs(text, give_up_after=len(text) // (8 * MIN_RATIO))  # each run costs 8 or more
    if runs is None:
        return None
    written = sum(len(unit) for unit, _ in runs) + 8 * len(runs)
    return runs if written * MIN_RATIO <= len(text) else None


def describe(runs: Iterable[Sequence], limit: int = 200) -> str:
    """``'1'×24998 + '\\x1c' + '1'×2`` (Python literals, so every invisible character shows)."""
    parts = []
    for unit, count in runs:
        parts.append(repr(unit) if int(count) == 1 else f"{unit!r}×{int(count)}")
    text = " + ".join(parts)
    return text if len(text) <= limit else text[:limit - 1] + "…"
