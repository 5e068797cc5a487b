"""Batches across the isolated engine's process boundary: ids come back exactly, and with the
ledger's expected digests, ids that match are answered 'matched' instead of sent -- the caller
gets its own ``Recorded`` object back -- while every id that differs still crosses whole."""

import numpy as np
import pytest

from verify.engines.base import checked_flat
from verify.executors.engine_calls import encode_outcomes
from verify.executors.wire import MATCHED, pack_expected, pack_outcomes, unpack_expected, unpack_outcomes
from verify.keys import ids_digest
from verify.outcome import SKIPPED, Failure, Recorded
from verify.sample import Sample


def test_ids_failures_and_skips_come_back_exactly_in_order():
    outcomes = [np.array([5, 6], dtype=np.uint32), Failure("error", "E", "m"), np.zeros(0, dtype=np.uint32),
                SKIPPED, np.array([2**32 - 1], dtype=np.uint32)]
    back = unpack_outcomes(pack_outcomes(outcomes))
    assert [o.tolist() if isinstance(o, np.ndarray) else o for o in back] == \
        [[5, 6], outcomes[1], [], SKIPPED, [2**32 - 1]]


class Fixed:
    """An engine that answers each sample ``i`` (its id) with ``ids[i]``; ``flat``: through a flat
    batch entry point (one buffer and its offsets), as gigatoken's adapter does."""

    def __init__(self, ids, flat: bool):
        self.ids = ids
        if flat:
            self.encode_batch_flat = self._flat

    def encode_batch(self, samples):
        return [self.ids[int(s.id)] for s in samples]

    def _flat(self, samples):
        pieces = self.encode_batch(samples)
        bounds = np.concatenate(([0], np.cumsum([p.size for p in pieces]))).tolist()
        return checked_flat(np.concatenate(pieces), bounds, len(pieces))


@pytest.mark.parametrize("flat", [False, True], ids=["arrays", "flat-buffer"])
def test_only_ids_with_the_expected_digest_and_length_stay_behind(flat):
    rng = np.random.default_rng()
    ids = [rng.integers(0, 2**32, size=int(rng.integers(0, 50)), dtype=np.uint32) for _ in range(6)]
    other = ids[3].copy()
    if other.size:
        other[rng.integers(0, other.size)] ^= 1  # one id changed: same length, another digest
    expected = [Recorded(ids_digest(ids[0]), ids[0].size), None, Recorded(ids_digest(ids[2]), ids[2].size + 1),
                Recorded(ids_digest(other), other.size), Recorded(ids_digest(ids[4]), ids[4].size), None]
    samples = [Sample.plain(str(i), "x") for i in range(6)]
    # in the engine's process: the engine's ids checked against what the caller sent
    outcomes = encode_outcomes(Fixed(ids, flat), samples, expected=unpack_expected(pack_expected(expected)))
    lengths, buffer, others = reply = pack_outcomes(outcomes)
    matched = [i for i, n in enumerate(lengths.tolist()) if n == MATCHED]
    assert matched == ([0, 3, 4] if not ids[3].size else [0, 4])  # an empty array has one digest
    assert buffer.size == sum(ids[i].size for i in range(6) if i not in matched)
    back = unpack_outcomes(reply, expected)
    for i, outcome in enumerate(back):
        if i in matched:
            assert outcome is expected[i]  # the caller's own entry, not a copy
        else:
            assert isinstance(outcome, np.ndarray) and np.array_equal(outcome, ids[i])


def test_a_matched_answer_nothing_was_expected_of_is_refused():
    one = np.array([1], dtype=np.uint32)
    reply = pack_outcomes(encode_outcomes(Fixed([one], flat=True), [Sample.plain("0", "x")],
                                          expected=[Recorded(ids_digest(one), 1)]))
    with pytest.raises(ValueError, match="nothing was expected"):
        unpack_outcomes(reply)
