"""Samples in batches, and one batch through several engines at once.

    batched(records, max_samples, max_chars)   consecutive records in bounded batches
    encode_all(executors, samples)             submit to every executor, then collect
    pipelined(executors, batches)              the next batch submitted before this one is handed out
"""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

from verify.sample import BadRecord, Sample

MAX_BATCH_CHARS = 1 << 20


def batched(records: Iterable[Sample | BadRecord], max_samples: int = 64,
            max_chars: int = MAX_BATCH_CHARS) -> Iterator[list[Sample | BadRecord]]:
    """Consecutive records in batches of at most ``max_samples`` samples and about
    ``max_chars`` characters (one larger sample makes a batch of its own)."""
    batch: list[Sample | BadRecord] = []
    samples = chars = 0
    for record in records:
        if isinstance(record, Sample):
            segments = record.segments
            size = len(segments[0].text) if len(segments) == 1 else sum(len(s.text) for s in segments)
        else:
            size = 0
        if samples and (samples >= max_samples or chars + size > max_chars):
            yield batch
            batch, samples, chars = [], 0, 0
        batch.append(record)
        if isinstance(record, Sample):
            samples += 1
            chars += size
    if batch:
        yield batch


def encode_all(executors: Sequence, samples: list[Sample]) -> list[list]:
    """Every engine on one batch: submit to all first, then collect (isolated workers overlap)."""
    for ex in executors:
        ex.submit(samples)
    return [ex.collect() for ex in executors]


def pipelined(executors: Sequence, batches: Iterable[list[Sample]]) -> Iterator[tuple[list[Sample], list[list]]]:
    """``(batch, outcomes per executor)``, the next batch submitted before the current one is
    handed out: isolated workers encode it while the caller compares this one."""
    pending: list[Sample] | None = None
    for samples in batches:
        outcomes = [ex.collect() for ex in executors] if pending is not None else None
        for ex in executors:
            ex.submit(samples)
        if pending is not None:
            yield pending, outcomes
        pending = samples
    if pending is not None:
        yield pending, [ex.collect() for ex in executors]
