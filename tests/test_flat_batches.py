"""A library's flat batch result (one buffer of ids and its offsets) checked against the ledger
where it lies: ``Adapter.encode_batch_flat`` makes exactly the call ``encode_batch`` makes, and
``encode_outcomes`` with the ledger's expected digests answers the entry itself exactly where the
ids have its digest and length -- the same outcomes as without the flat buffer, never a match the
ids do not have."""

from __future__ import annotations

import random

import numpy as np
import pytest

from verify.engines.base import Adapter, Capabilities
from verify.executors.engine_calls import encode_outcomes
from verify.keys import ids_digest
from verify.outcome import Failure, Recorded
from verify.sample import Sample, Segment

TEXTS = ["", "hello world", "naïve café — 日本語のテキスト", "  \n\t x", "1234567890" * 50, "🙂" * 7,
         "a" * 3000]


class Flat(Adapter):
    """A byte-level engine behind a flat batch entry point; ``wrong``: texts whose last id it drops;
    ``raises``: a text its batch call raises on (one at a time it answers)."""

    adapter_name = "flat-test"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=False, entry_points=("batch",))
    flat_batch = True

    def __init__(self, wrong=(), raises=None):
        super().__init__("bytes")
        self.wrong, self.raises, self.calls = set(wrong), raises, []

    def _ids(self, text):
        ids = list(text.encode("utf-8"))
        return ids[:-1] if text in self.wrong and ids else ids

    def encode_many_flat(self, texts, allow_special):
        self.calls.append(len(texts))
        if self.raises is not None and self.raises in texts and len(texts) > 1:
            raise RuntimeError("the batch call overran a buffer")
        pieces = [self._ids(t) for t in texts]
        offsets = np.concatenate(([0], np.cumsum([len(p) for p in pieces])))
        return np.array([i for p in pieces for i in p], dtype=np.uint32), offsets


def entries_for(texts, corrupt=()):
    """The ledger's entries for the right (byte) ids; ``corrupt``: positions recorded wrong."""
    out = []
    for i, text in enumerate(texts):
        right = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint32)
        out.append(Recorded("0" * 32 if i in corrupt else ids_digest(right), right.size))
    return out


def test_a_flat_batch_is_the_call_encode_batch_makes_and_only_for_one_kind_of_segment():
    engine = Flat()
    samples = [Sample.plain(str(i), t) for i, t in enumerate(TEXTS)]
    flat, bounds = engine.encode_batch_flat(samples)
    pieces = [flat[a:b].tolist() for a, b in zip(bounds[:-1], bounds[1:])]
    assert pieces == [a.tolist() for a in engine.encode_batch(samples)] == [list(t.encode()) for t in TEXTS]
    assert engine.calls == [len(TEXTS), len(TEXTS)]  # one call each way
    special = [*samples, Sample.from_segments("s", [("<|endoftext|>", True)])]
    two = [*samples, Sample.from_segments("t", [Segment("a", False), Segment("b", False)])]
    assert engine.encode_batch_flat(special) is None and engine.encode_batch_flat(two) is None

    class Routed(Flat):  # an adapter that routes its own calls is asked through them
        def encode_texts(self, texts, allow_special):
            return super().encode_texts(texts, allow_special)

    assert Routed().encode_batch_flat(samples) is None


def test_expected_entries_are_answered_exactly_where_the_ids_have_them():
    rng = random.Random()
    texts = [rng.choice(TEXTS) + rng.choice(TEXTS) for _ in range(rng.randint(20, 60))]
    samples = [Sample.plain(str(i), t) for i, t in enumerate(texts)]
    wrong = {t for t in set(texts) if t and rng.random() < 0.3}  # the engine drops a last id on these
    corrupt = {i for i in range(len(texts)) if rng.random() < 0.2}  # the ledger is wrong on these
    missing = {i for i in range(len(texts)) if rng.random() < 0.2}  # and has nothing for these
    expected = [None if i in missing else e for i, e in enumerate(entries_for(texts, corrupt))]
    flat = encode_outcomes(Flat(wrong), samples, expected=expected)
    arrays = encode_outcomes(Flat(wrong), samples)
    for i, (got, ids) in enumerate(zip(flat, arrays)):
        if i not in missing and i not in corrupt and texts[i] not in wrong:
            assert got is expected[i]
        else:
            assert isinstance(got, np.ndarray) and got.tolist() == ids.tolist()
    nothing = encode_outcomes(Flat(wrong), samples, expected=[None] * len(samples))  # no entry: every id array
    assert [o.tolist() for o in nothing] == [ids.tolist() for ids in arrays]


def test_a_flat_batch_call_that_raises_is_retried_one_sample_at_a_time():
    samples = [Sample.plain(str(i), t) for i, t in enumerate(["ab", "boom", "cd"])]
    engine = Flat(raises="boom")
    out = encode_outcomes(engine, samples, expected=entries_for(["ab", "boom", "cd"]))
    assert out[0] is not None and isinstance(out[0], Recorded) and isinstance(out[2], Recorded)
    assert isinstance(out[1], Recorded)  # alone, it answers: the batch call was the failure
    assert engine.calls[0] == 3 and engine.calls[1:] == [1, 1, 1]
    out = encode_outcomes(Flat(raises="ab"), samples[:1] * 2, expected=entries_for(["ab"]) * 2)
    assert all(isinstance(o, Recorded) for o in out)  # alone it answers: a raising batch is no mismatch

    class Always(Flat):
        def encode_many_flat(self, texts, allow_special):
            raise RuntimeError("always")

    out = encode_outcomes(Always(), samples[:1], expected=entries_for(["ab"]))
    assert isinstance(out[0], Failure) and out[0].type == "RuntimeError"


def test_gigatoken_answers_the_same_through_its_flat_buffer():
    pytest.importorskip("gigatoken")
    from verify.engines import build_engine

    candidate, reference = build_engine("gigatoken:cl100k_base"), build_engine("tiktoken:cl100k_base")
    rng = random.Random()
    samples = [Sample.plain(str(i), rng.choice(TEXTS)[rng.randint(0, 5):] * rng.randint(1, 3)) for i in range(50)]
    right = reference.encode_batch(samples)
    changed = set(rng.sample([i for i, ids in enumerate(right) if ids.size], 10))  # recorded a last id short
    expected = [Recorded(ids_digest(ids[:-1] if i in changed else ids), ids.size - (i in changed))
                for i, ids in enumerate(right)]
    out = encode_outcomes(candidate, samples, expected=expected)
    assert candidate.entry_notes()["entry_points_ran"]["batch"]["calls"] >= 1
    for i, (got, ids) in enumerate(zip(out, right)):
        if i in changed:
            assert isinstance(got, np.ndarray) and got.tolist() == ids.tolist()
        else:
            assert got is expected[i]
