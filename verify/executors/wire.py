"""Batches across a process boundary in a few flat objects, not one object per sample.

An isolated engine's worker gets each batch by pipe and sends its ids back. Pickling a
list of ``Sample``s and a list of id arrays costs about 13 µs per sample and engine --
as much as encoding them. Packed, a batch is four lists and a reply is one ``uint32``
buffer with the lengths (failures and skips apart, by index), so the cost is a few
microseconds per sample and the ids keep their exact values and order.

    payload = pack_samples(samples)        unpack_samples(payload) == samples
    reply = pack_outcomes(outcomes)        unpack_outcomes(reply) == outcomes

With the ledger, the caller sends what it expects of each sample (``pack_expected``: the
recorded digest and length); ids that match are answered ``MATCHED`` instead of sent, and
``unpack_outcomes`` gives back the caller's own ``Recorded`` object for them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from verify.engines.base import TOKEN_DTYPE
from verify.outcome import Outcome, Recorded, is_ids
from verify.sample import Sample, Segment


def pack_samples(samples: Sequence[Sample]) -> tuple:
    ids = [s.id for s in samples]
    counts = [len(s.segments) for s in samples]
    texts = [seg.text for s in samples for seg in s.segments]
    flags = bytes(seg.allow_special for s in samples for seg in s.segments)
    return ids, counts, texts, flags


def unpack_samples(payload: tuple) -> list[Sample]:
    ids, counts, texts, flags = payload
    out, at = [], 0
    for sample_id, n in zip(ids, counts):
        out.append(Sample(sample_id, tuple(Segment(texts[at + j], bool(flags[at + j])) for j in range(n))))
        at += n
    return out


MATCHED = -2  # a reply's length for ids that had the digest and length expected of them (not sent)


def pack_expected(expected: Sequence[Recorded | None]) -> list[tuple[str, int] | None]:
    """What the engine's process needs of each expected outcome: digest and length."""
    return [None if e is None else (e.digest, e.length) for e in expected]


def unpack_expected(packed: Sequence[tuple[str, int] | None] | None) -> list[Recorded | None] | None:
    """``pack_expected``'s digests and lengths as ``Recorded`` again, in the engine's process."""
    return None if packed is None else [None if e is None else Recorded(e[0], e[1]) for e in packed]


def pack_outcomes(outcomes: Sequence[Outcome]) -> tuple:
    """``(lengths, buffer, others)``: the ids of every outcome that is ids, concatenated;
    ``lengths[i]`` is -1 where outcome ``i`` is a failure or a skip (kept in ``others``), and
    ``MATCHED`` where it is a ``Recorded``: the engine's ids had exactly the digest and length
    expected of them (``encode_outcomes``), so they are not sent, the caller holds what they are."""
    lengths = np.full(len(outcomes), -1, dtype=np.int64)
    arrays, others = [], {}
    for i, outcome in enumerate(outcomes):
        if isinstance(outcome, Recorded):
            lengths[i] = MATCHED
        elif is_ids(outcome):
            arrays.append(outcome)
            lengths[i] = outcome.size
        else:
            others[i] = outcome
    buffer = np.concatenate(arrays).astype(TOKEN_DTYPE, copy=False) if arrays else np.zeros(0, dtype=TOKEN_DTYPE)
    return lengths, buffer, others


def unpack_outcomes(reply: tuple, expected: Sequence[Recorded | None] | None = None) -> list[Outcome]:
    """The outcomes ``pack_outcomes`` packed: each id array a view of the one buffer, and where
    the ids matched what was expected, the expected ``Recorded`` object itself."""
    lengths, buffer, others = reply
    sizes = np.where(lengths < 0, 0, lengths)
    bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()
    out: list[Outcome] = []
    for i, n in enumerate(lengths.tolist()):
        if n == MATCHED:
            if expected is None or expected[i] is None:
                raise ValueError("the engine's process answered 'matched' for an outcome nothing was expected of")
            out.append(expected[i])
        elif n < 0:
            out.append(others[i])
        else:
            out.append(buffer[bounds[i]:bounds[i + 1]])  # slicing: np.split costs 2 µs per piece
    return out
