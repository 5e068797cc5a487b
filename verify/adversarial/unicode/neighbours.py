"""Vocabulary neighbours: texts that share a vocabulary entry with a code point's bytes.

In byte-level BPE, splitting "a" + X into two pre-tokens changes the ids only if
the vocabulary merges across that boundary -- an entry that is some text followed
by the first bytes of X, or the last bytes of X followed by some text. For every
entry ``t`` and every cut ``t = L + R`` where ``L`` is complete text and ``R`` the
start of a character's UTF-8 (or ``L`` the end of a character and ``R`` complete
text), ``L`` is a left neighbour of every code point whose bytes start with ``R``
(and ``R`` a right neighbour of those ending with ``L``). Placing X right after a
left neighbour (or before a right one) makes that merge possible exactly when X
shares the neighbour's pre-token: the context shows whether X's class joins it.

``NeighbourIndex(tokens).left(cp)`` / ``.right(cp)`` give a few neighbours per code
point, the most specific (longest shared bytes) and earliest-merged (lowest id)
first, at most ``per_class`` from each character class of the neighbour's edge
(letter, digit, space, punctuation, other), so each class question is asked.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from typing import Sequence

MAX_NEIGHBOUR_CHARS = 12


def _edge_class(ch: str) -> str:
    cat = unicodedata.category(ch)
    if ch.isspace():
        return "space"
    return {"L": "letter", "N": "digit", "P": "punct", "S": "punct", "M": "mark"}.get(cat[0], "other")


def _is_char_start(data: bytes) -> bool:
    """``data`` is the first bytes (one or more) of a single UTF-8 character."""
    lead = data[0]
    if lead < 0xC0 or lead > 0xF4:
        return False
    need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return len(data) <= need and all(0x80 <= b <= 0xBF for b in data[1:])


def _is_char_end(data: bytes) -> bool:
    """``data`` is the last bytes of a single UTF-8 character (continuation bytes, or a
    whole multi-byte character)."""
    if all(0x80 <= b <= 0xBF for b in data):
        return 0 < len(data) <= 3
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(text) == 1 and len(data) > 1


def _text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if 0 < len(text) <= MAX_NEIGHBOUR_CHARS else None


CLASSES = ("letter", "space", "punct", "digit", "mark", "other")


class NeighbourIndex:
    def __init__(self, tokens: Sequence[bytes], skip: frozenset[bytes] = frozenset(), per_class: int = 1,
                 per_side: int = 4):
        self.per_class = per_class
        self.per_side = per_side
        left: dict[bytes, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        right: dict[bytes, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        for rank, tok in enumerate(tokens):
            if len(tok) < 2 or tok in skip:
                continue
            for cut in range(1, len(tok)):
                head, tail = tok[:cut], tok[cut:]
                if _is_char_start(tail):
                    text = _text(head)
                    if text is not None:
                        left[tail][_edge_class(text[-1])].append((rank, text))
                if _is_char_end(head):
                    text = _text(tail)
                    if text is not None:
                        right[head][_edge_class(text[0])].append((rank, text))
        keep = per_class * 2  # the earliest merges of each class are enough
        self._left = {k: {c: sorted(v)[:keep] for c, v in by.items()} for k, by in left.items()}
        self._right = {k: {c: sorted(v)[:keep] for c, v in by.items()} for k, by in right.items()}
        self._picked: dict[tuple[int, tuple[bytes, ...]], tuple[str, ...]] = {}

    def left(self, cp: int) -> tuple[str, ...]:
        """Texts to put right before ``cp``."""
        data = chr(cp).encode("utf-8")
        return self._pick(self._left, [data[:j] for j in range(len(data), 0, -1)])

    def right(self, cp: int) -> tuple[str, ...]:
        """Texts to put right after ``cp``."""
        data = chr(cp).encode("utf-8")
        return self._pick(self._right, [data[i:] for i in range(len(data))])

    def _pick(self, index, keys: list[bytes]) -> tuple[str, ...]:
        present = tuple(k for k in keys if k in index)  # most code points share their answer
        memo_key = (id(index), present)
        hit = self._picked.get(memo_key)
        if hit is None:
            hit = self._picked[memo_key] = self._choose(index, present)
        return hit

    def _choose(self, index, keys: tuple[bytes, ...]) -> tuple[str, ...]:
        taken: dict[str, int] = defaultdict(int)
        chosen: list[str] = []
        for key in keys:  # most specific (longest shared bytes) first
            by_class = index.get(key)
            if not by_class:
                continue
            for cls in CLASSES:
                for _, text in by_class.get(cls, ()):
                    if taken[cls] >= self.per_class or len(chosen) >= self.per_side:
                        break
                    if text not in chosen:
                        taken[cls] += 1
                        chosen.append(text)
        return tuple(chosen)
