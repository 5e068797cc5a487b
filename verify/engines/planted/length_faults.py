"""Planted length faults: the real reference (tiktoken on cl100k_base) with ONE length fault at
a threshold ``N`` taken from ``$LENGTH_FAULT_N`` (so a test or benchmark can draw it at
random and the sweep is told nothing). Each is a ``python:`` plugin:

    python:verify.engines.planted.length_faults:chunked         N-character chunks encoded apart
    python:verify.engines.planted.length_faults:tie_rule        pre-tokens over N bytes merged in two halves
    python:verify.engines.planted.length_faults:whitespace_cut  past N characters, a cut at N when a
                                                                whitespace-like character is at the cut
    python:verify.engines.planted.length_faults:dropped_token   past N characters, the second chunk's
                                                                first token dropped where two chunks meet

Every text of N characters or fewer (N bytes for the tie rule) encodes exactly as the
reference does, so the first divergent length is N + 1 wherever the fault shows at all
(a chunk size that a run's token period divides is invisible to that run).
"""

from __future__ import annotations

import os
from functools import lru_cache

REFERENCE = "tiktoken:cl100k_base"


def threshold() -> int:
    return int(os.environ["LENGTH_FAULT_N"])


@lru_cache(maxsize=1)
def _reference():
    from verify.engines import build_engine

    return build_engine(REFERENCE)


def encode(text: str) -> list[int]:
    if not text:
        return []
    return _reference().encoding.encode_ordinary(text)  # a new list of ints each call


class _Planted:
    def __init__(self, n: int):
        self.n = n
        _reference()  # loaded with the engine, as a real engine's tables are: a fresh (forked) instance
        # of it starts loaded, rather than reading cl100k's vocabulary again at its first encode


class Chunked(_Planted):
    def encode_batch(self, texts):
        return [sum((encode(t[i:i + self.n]) for i in range(0, len(t), self.n)), []) for t in texts]


class TieRule(_Planted):
    def __init__(self, n: int):
        import regex

        super().__init__(n)
        self.pattern = regex.compile(_reference().encoding._pat_str)

    def encode_batch(self, texts):
        out = []
        for t in texts:
            ids: list[int] = []
            for piece in self.pattern.findall(t):
                data = piece.encode()
                if len(data) > self.n:
                    cut = len(data[:self.n].decode("utf-8", "ignore"))
                    ids += encode(piece[:cut]) + encode(piece[cut:])
                else:
                    ids += encode(piece)
            out.append(ids)
        return out


class WhitespaceCut(_Planted):
    def encode_batch(self, texts):
        n = self.n
        return [encode(t[:n]) + encode(t[n:]) if len(t) > n and (t[n - 1].isspace() or t[n].isspace())
                else encode(t) for t in texts]


class DroppedToken(_Planted):
    def encode_batch(self, texts):
        n = self.n
        return [encode(t) if len(t) <= n else encode(t[:n]) + encode(t[n:])[1:] for t in texts]


FAULTS = {"chunked": Chunked, "tie_rule": TieRule, "whitespace_cut": WhitespaceCut, "dropped_token": DroppedToken}


def chunked():
    return Chunked(threshold())


def tie_rule():
    return TieRule(threshold())


def whitespace_cut():
    return WhitespaceCut(threshold())


def dropped_token():
    return DroppedToken(threshold())
