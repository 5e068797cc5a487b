"""Calling an engine: its batch entry point with every failure attributed, never raised.

    encode_outcomes(engine, samples) -> one outcome per sample (a batch that raises is
                                        retried one sample at a time)
    encode_call(engine, samples)     -> one outcome per sample, or the call's own failure
    failure_from(exc)                -> the ``Failure`` an engine's exception is

Used wherever an engine object is called: the in-process executor (and so the isolated
worker) and the fresh replays (``verify.executors.fresh``).
"""

from __future__ import annotations

import traceback
from typing import Sequence

import numpy as np

from verify.engines.base import Engine, as_token_array
from verify.keys import ids_digests
from verify.outcome import Failure, Outcome, Recorded, is_ids
from verify.sample import Sample

# Interrupts are the user's, not the engine's: they end the run.
_NOT_OURS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def failure_from(exc: BaseException) -> Failure:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return Failure("error", type(exc).__name__, f"{exc}{where}")


def encode_outcomes(engine: Engine, samples: Sequence[Sample], on_fallback=None,
                    expected: Sequence[Recorded | None] | None = None) -> list[Outcome]:
    """One outcome per sample: the batch in one call, and when that raises, each sample
    alone so the failure is attributed to the samples that cause it. ``on_fallback(exc)``
    hears of every batch call that raised (a batch API that fails where single calls
    succeed is a bug too, reported in the run notes).

    ``expected[i]``, where given, is the ledger's ``Recorded`` digest and length of the
    reference's ids for ``samples[i]``: where the ids have exactly that digest and length, the
    outcome is that very object (the caller holds what the ids are). An engine with a flat batch
    entry point (``encode_batch_flat``) is then hashed in its one buffer, no array per sample."""
    flat = None
    try:
        if expected is not None and hasattr(engine, "encode_batch_flat"):
            flat = engine.encode_batch_flat(samples)
        if flat is None:
            out = engine.encode_batch(samples)
            if len(out) != len(samples):
                raise ValueError(f"engine returned {len(out)} results for {len(samples)} samples")
            outcomes = [as_token_array(ids) for ids in out]
    except _NOT_OURS:
        raise
    except BaseException as exc:  # pyo3's PanicException is a BaseException: still the engine's failure
        if len(samples) == 1:
            return [failure_from(exc)]
        outcomes = [_encode_one(engine, s) for s in samples]
        if on_fallback is not None and all(isinstance(o, np.ndarray) for o in outcomes):
            on_fallback(exc)
        return outcomes if expected is None else matched(outcomes, expected)
    if flat is not None:
        return matched_flat(*flat, expected)
    return outcomes if expected is None else matched(outcomes, expected)


def matched(outcomes: Sequence[Outcome], expected: Sequence[Recorded | None]) -> list[Outcome]:
    """Each outcome, or ``expected[i]`` itself where the outcome is ids with its digest and length."""
    return [e if e is not None and is_ids(o) and e.matches(o) else o for o, e in zip(outcomes, expected)]


def matched_flat(flat: np.ndarray, bounds: list[int], expected: Sequence[Recorded | None]) -> list[Outcome]:
    """``matched`` over a flat batch: piece ``i`` is ``flat[bounds[i]:bounds[i + 1]]``; only the
    pieces that do not match become arrays (views of the buffer)."""
    spans = list(zip(bounds[:-1], bounds[1:]))
    wanted = [i for i, (e, (a, b)) in enumerate(zip(expected, spans)) if e is not None and e.length == b - a]
    out: list[Outcome | None] = [None] * len(spans)
    for i, digest in zip(wanted, ids_digests(flat, [spans[i] for i in wanted])):
        if digest == expected[i].digest:
            out[i] = expected[i]
    return [flat[a:b] if o is None else o for o, (a, b) in zip(out, spans)]  # type: ignore[misc]


def _encode_one(engine: Engine, sample: Sample) -> Outcome:
    try:
        out = engine.encode_batch([sample])
        if len(out) != 1:
            raise ValueError(f"engine returned {len(out)} results for 1 sample")
        return as_token_array(out[0])
    except _NOT_OURS:
        raise
    except BaseException as exc:
        return failure_from(exc)


def encode_call(engine: Engine, samples: Sequence[Sample]) -> "list[Outcome] | Failure":
    """One call of the engine's batch entry point: its outcomes, or the call's own failure
    (a batch that fails where its samples alone would not is then the finding)."""
    try:
        out = engine.encode_batch(list(samples))
        if len(out) != len(samples):
            raise ValueError(f"engine returned {len(out)} results for {len(samples)} samples")
        return [as_token_array(ids) for ids in out]
    except _NOT_OURS:
        raise
    except BaseException as exc:  # pyo3's PanicException is a BaseException: still the engine's failure
        return failure_from(exc)
