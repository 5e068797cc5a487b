"""The enumerated space: every string of 1..k atoms, each filled with representatives.

An **atom string** of length L is a tuple of atom indices; they are numbered in length
order, then lexicographically (index ``t`` in ``[0, A**L)``: its base-A digits, the first
atom most significant), so a shard is a range of one length and the first counterexample
of a bug is one of the fewest atoms.

**Representatives: a covering of adjacent pairs.** Atom ``i`` has ``r_i`` representatives.
The strings of one atom string are indexed by ``(a, b)`` with ``a < Ae`` (the most
representatives on an even position) and ``b < Ao`` (on an odd one): an even position
``p`` takes representative ``a mod r_p``, an odd one ``b mod r_p``. Every adjacent pair of
positions is one even and one odd, so for each pair ``(x, y)`` of its representatives
``(a, b) = (x, y)`` (or ``(y, x)``) gives both at once: every pair of adjacent atoms is
tried with every pair of their representatives, in ``Ae * Ao`` strings, all distinct (the
position with ``Ae`` representatives tells two ``a`` apart). With two representatives
per atom that is at most 4 strings per atom string, not ``2**L``.

``strings(L)`` counts them without listing: the atom strings whose even positions have at
most ``m`` representatives number ``c(m) ** (even positions)``, so the sum over ``m`` of
``m * (c(m)**n - c(m-1)**n)`` is the even positions' share, the odd ones' likewise, and
the count is their product.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

MAX_K = 12
_VECTOR_MAX = 2 ** 62  # atom-string indexes below this are computed as int64 arrays


@dataclass(frozen=True)
class Space:
    reps: tuple[tuple[str, ...], ...]  # per atom, its representatives (one-character strings)
    k: int

    @property
    def atoms(self) -> int:
        return len(self.reps)

    def atom_strings(self, length: int) -> int:
        return self.atoms ** length

    def strings(self, length: int) -> int:
        """How many strings of ``length`` atoms are enumerated."""
        evens, odds = (length + 1) // 2, length // 2
        return _share(self._counts(), evens) * _share(self._counts(), odds)

    def total(self, k: int | None = None) -> int:
        return sum(self.strings(n) for n in range(1, (self.k if k is None else k) + 1))

    def _counts(self) -> list[int]:
        """c[m]: atoms with at most m representatives (m from 0)."""
        top = max(len(r) for r in self.reps)
        return [sum(len(r) <= m for r in self.reps) for m in range(top + 1)]

    def digits(self, length: int, index: int) -> tuple[int, ...]:
        out = []
        for _ in range(length):
            index, d = divmod(index, self.atoms)
            out.append(d)
        return tuple(reversed(out))

    def texts(self, atoms: Sequence[int]) -> Iterator[tuple[int, str]]:
        """``(assignment, text)`` of every string of the atom string ``atoms``, in order."""
        reps = [self.reps[a] for a in atoms]
        ae = max(len(r) for r in reps[0::2])
        ao = max((len(r) for r in reps[1::2]), default=1)
        for b in range(ao):
            for a in range(ae):
                yield b * ae + a, "".join(r[(a if p % 2 == 0 else b) % len(r)] for p, r in enumerate(reps))


    def block(self, length: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """``(atom string index, assignment, text)`` of every string of the atom strings
        ``start..stop-1`` of ``length``, ordered as ``texts`` orders them: the code points of
        a whole range as one array, made into strings by NumPy (UCS-4 rows viewed as ``U``
        strings) -- a shard's strings cost a few array operations, not a Python step each."""
        if self.atoms ** length >= _VECTOR_MAX:  # beyond int64: the same strings, one at a time
            rows = [(t, j, text) for t in range(start, stop) for j, text in self.texts(self.digits(length, t))]
            return (np.array([r[0] for r in rows], dtype=object), np.array([r[1] for r in rows], dtype=np.int64),
                    [r[2] for r in rows])
        t = np.arange(start, stop, dtype=np.int64)
        digits = np.empty((t.size, length), dtype=np.int64)
        rest = t.copy()
        for p in range(length - 1, -1, -1):
            rest, digits[:, p] = np.divmod(rest, self.atoms)
        sizes, table = self._tables()
        ae = sizes[digits[:, 0::2]].max(axis=1)
        ao = sizes[digits[:, 1::2]].max(axis=1) if length > 1 else np.ones(t.size, dtype=np.int64)
        top = table.shape[1]
        index, assignment, codes = [], [], []
        for b in range(top):
            for a in range(top):
                rows = np.flatnonzero((a < ae) & (b < ao))
                if not rows.size:
                    continue
                d = digits[rows]
                chosen = np.where(np.arange(length) % 2 == 0, a, b)  # the representative per position
                codes.append(table[d, chosen])
                index.append(rows)
                assignment.append(b * ae[rows] + a)
        rows, j = np.concatenate(index), np.concatenate(assignment)
        order = np.lexsort((j, rows))
        rows, j, cps = rows[order], j[order], np.ascontiguousarray(np.concatenate(codes)[order])
        texts = cps.view(np.dtype(("U", length))).reshape(-1).tolist()
        for i in np.flatnonzero(cps[:, -1] == 0):  # NumPy drops trailing NULs from a U string
            texts[i] = "".join(map(chr, cps[i]))
        return t[rows], j, texts

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Representatives per atom, and the code point of atom ``i``'s representative ``r mod
        its count`` at ``[i, r]``."""
        sizes = np.array([len(r) for r in self.reps], dtype=np.int64)
        top = int(sizes.max())
        table = np.array([[ord(r[x % len(r)]) for x in range(top)] for r in self.reps], dtype=np.uint32)
        return sizes, table


def _share(counts: list[int], positions: int) -> int:
    if positions == 0:
        return 1
    return sum(m * (counts[m] ** positions - counts[m - 1] ** positions) for m in range(1, len(counts)))


def k_for(space_reps: Sequence[Sequence[str]], strings: int) -> int:
    """The largest k (at least 1, at most ``MAX_K``) whose space has at most ``strings`` strings."""
    k = 1
    while k < MAX_K and Space(tuple(map(tuple, space_reps)), k + 1).total() <= strings:
        k += 1
    return k
