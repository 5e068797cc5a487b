"""Which planted changes are observable at all: a large randomised battery of contexts.

A class change of a code point is invisible wherever it moves no pre-token boundary
that a merge or a vocabulary entry crosses. To measure a sweep's recall honestly,
the denominator is the set of changed code points that SOME context reveals: for
each code point, every fixed hostile piece next to it, and ``contexts`` random texts
built around it (one to three copies of it among random vocabulary tokens, letters, digits and digit runs, spaces, tabs and
newlines, punctuation, marks, other scripts, emoji), encoded by the reference and
the planted engine. A code point is observable when any of its texts encode
differently. The battery shares nothing with the sweep's contexts.
"""

from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from verify.outcome import agree
from verify.sample import Sample

_FIXED = (
    "a", "b", "z", "e", "s", "t", "A", "Z", "the", "ing", "The", "0", "1", "7", "12", "123", "1234", "2024",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", "\r", ".", ",", "!", "?", "'", "\"", "(", ")", "-", "_", "/",
    ":", ";", "...", "'s", "'t", "'re", " a", " the", " 1", "é", "ß", "ж", "日", "本", "ا", "क", "\u094d", "ก",
    "\u0301", "\u0308", "\u200d", "😀", "👍", "€", "°", "™", "—", "“", "”", "ı", "İ", "ǅ", "ʰ", "ー", "々",
)


def _pieces(tokens: Sequence[bytes], rng: random.Random, count: int = 3000) -> list[str]:
    """Fixed hostile pieces plus decodable vocabulary tokens picked at random."""
    pool = list(_FIXED)
    tries = 0
    while len(pool) < len(_FIXED) + count and tries < count * 20:
        tries += 1
        tok = tokens[rng.randrange(len(tokens))]
        if not tok:
            continue
        try:
            pool.append(tok.decode("utf-8"))
        except UnicodeDecodeError:
            continue
    return pool


def battery(cp: int, pool: Sequence[str], rng: random.Random, n: int) -> list[str]:
    """Every fixed hostile piece right before, right after and around the code point (a
    contraction or a digit right after it is what reveals many whitespace changes), then
    ``n`` random texts."""
    ch = chr(cp)
    out = [text for piece in _FIXED for text in (piece + ch, ch + piece, piece + ch + piece)]
    for _ in range(n):
        left = "".join(rng.choice(pool) for _ in range(rng.choice((0, 1, 1, 2, 3))))
        right = "".join(rng.choice(pool) for _ in range(rng.choice((0, 1, 1, 2, 3))))
        middle = ch * rng.choice((1, 1, 1, 2, 3))
        if rng.random() < 0.2:
            middle = ch + rng.choice(pool) + ch
        out.append(left + middle + right)
    return out


def observable(reference, candidate, code_points: Sequence[int], tokens: Sequence[bytes], *,
               contexts: int = 200, seed: int = 0, special: Sequence[str] = ()) -> np.ndarray:
    """The code points (of ``code_points``) on which some battery text encodes differently
    on the two executors. Texts holding a special-token literal are left out."""
    rng = random.Random(seed)
    pool = [p for p in _pieces(tokens, rng) if not any(s in p for s in special)]
    seen: list[int] = []
    batch: list[tuple[int, str]] = []

    def flush() -> None:
        samples = [Sample.plain(f"U+{cp:04X}#{i}", text) for i, (cp, text) in enumerate(batch)]
        ref, cand = reference.encode(samples), candidate.encode(samples)
        hit = {cp for (cp, _), a, b in zip(batch, ref, cand) if not agree(a, b)}
        seen.extend(sorted(hit - set(seen)))
        batch.clear()

    for cp in code_points:
        texts = [t for t in battery(int(cp), pool, rng, contexts) if not any(s in t for s in special)]
        batch.extend((int(cp), t) for t in texts)
        if len(batch) >= 20_000:
            flush()
    if batch:
        flush()
    return np.asarray(sorted(set(seen)), dtype=np.int64)
