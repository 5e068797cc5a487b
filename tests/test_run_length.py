"""The run-length form of long inputs (``verify.run_length``): what a finding shows instead of
25,000 characters. zstd turns most texts down before zlib's gate is asked; it never turns down
one that zlib's gate lets through to runs worth reading (the records stay what they were)."""

from __future__ import annotations

import random
import zlib

from hypothesis import given, settings, strategies as st

from verify.run_length import MIN_CHARS, MIN_RATIO, compact, describe, from_runs, to_runs

ALPHABET = "ab \n1xyz\u65e5\u672c\u00e9\U0001F600\t.,\x1c"


def zlib_gate_only(text: str) -> list | None:
    """``compact`` before the zstd gate: zlib's gate, then the runs when they are MIN_RATIO times shorter."""
    data = text.encode("utf-8", "surrogatepass")
    if len(text) < MIN_CHARS or len(zlib.compress(data, 1)) * MIN_RATIO * 2 > len(data):
        return None
    runs = to_runs(text)
    written = sum(len(unit) for unit, _ in runs) + 8 * len(runs)
    return runs if written * MIN_RATIO <= len(text) else None


def repetitive_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 12)):
        if rng.random() < 0.3:
            parts.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 40))))
        else:
            unit = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 16)))
            parts.append(unit * rng.randint(2, 3000 // len(unit)))
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_the_zstd_gate_never_turns_down_a_text_the_zlib_gate_gives_runs(seed):
    text = repetitive_text(random.Random(seed))
    assert compact(text) == zlib_gate_only(text)


def test_runs_rebuild_the_text_and_read_as_repetition():
    text = "1" * 24998 + "\x1c" + "11"
    runs = compact(text)
    assert runs == [["1", 24998], ["\x1c", 1], ["1", 2]] and from_runs(runs) == text
    assert describe(runs) == "'1'×24998 + '\\x1c' + '1'×2"
    assert compact("prose that does not repeat itself, as most documents do not. " * 1) is None
