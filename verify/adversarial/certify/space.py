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

MAX_K = 12


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
