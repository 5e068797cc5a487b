"""A wrong split rule on one atom sequence: the real reference, except that a text whose atoms
(``verify certify``'s alphabet of the reference's pattern) contain ``seq`` contiguously is cut
after the first character of its first occurrence and the two parts encoded apart -- a scanner
that breaks one pre-token where the pattern does not. It plugs in as a Python engine:

    python:verify.adversarial.certify.planted:planted?reference=tiktoken:cl100k_base&seq=3.0.6.2

``observable(reference, seq, reps)`` says whether the fault shows on the sequence's own
strings (a cut where the reference cuts anyway changes nothing): recall is measured on the
draws where it does, and is undefined where it does not.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from verify.adversarial.certify.atoms import alphabet_of
from verify.alphabet import atom_table
from verify.config import parse_spec
from verify.adversarial.certify.space import Space
from verify.engines.registry import build_engine
from verify.sample import Sample

DEFAULT_REFERENCE = "tiktoken:cl100k_base"


@lru_cache(maxsize=2)
def _table(reference: str) -> np.ndarray:
    return atom_table(alphabet_of(parse_spec(reference)))


@lru_cache(maxsize=2)
def _engine(reference: str):
    return build_engine(reference)


def _encode(reference: str, texts: list[str]) -> list[list[int]]:
    samples = [Sample.plain(str(i), t) for i, t in enumerate(texts)]
    return [ids.tolist() for ids in _engine(reference).encode_batch(samples)]


def first_occurrence(atoms: list[int], seq: tuple[int, ...]) -> int:
    n = len(seq)
    return next((i for i in range(len(atoms) - n + 1) if tuple(atoms[i:i + n]) == seq), -1)


def split_encode(reference: str, seq: tuple[int, ...], text: str) -> list[int]:
    at = first_occurrence([int(_table(reference)[ord(c)]) for c in text], seq) if seq else -1
    if at < 0:
        return _encode(reference, [text])[0]
    head, tail = _encode(reference, [text[:at + 1], text[at + 1:]])
    return head + tail


def observable(reference: str, seq: tuple[int, ...], reps: int) -> bool:
    """Whether the cut changes the ids of one of the strings certify makes of ``seq`` itself."""
    alpha = alphabet_of(parse_spec(reference))
    space = Space(tuple(map(tuple, alpha.representatives(reps))), len(seq))
    texts = [text for _, text in space.texts(seq)]
    return any(split_encode(reference, seq, t) != ids for t, ids in zip(texts, _encode(reference, texts)))


class AtomSplit:
    name = "atom-split"
    version = "1"

    def __init__(self, reference: str, seq: tuple[int, ...]):
        self.reference, self.seq = reference, seq

    def encode_batch(self, texts):
        return [split_encode(self.reference, self.seq, t) for t in texts]


def planted(seq: str = "", reference: str = DEFAULT_REFERENCE) -> AtomSplit:
    """``seq``: atom indices joined by dots (``3.0.6``); empty: the reference unchanged."""
    return AtomSplit(reference, tuple(int(x) for x in seq.split(".")) if seq else ())
