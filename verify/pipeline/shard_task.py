"""One shard through every engine: read its records, batch them, encode with all
engines at once, compare. The result is data (``ShardResult``), committed by the
driver; the task writes nothing itself, so it runs the same in this process, in a
worker process, or in a Ray actor on another machine."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from verify.comparison import Side, compare_batch
from verify.corpora.shards import Shard
from verify.counts import Counts
from verify.errors import CorpusError
from verify.findings import bad_input_record
from verify.sample import BadRecord, Sample

MAX_BATCH_CHARS = 1 << 20


@dataclass
class ShardResult:
    index: int  # the shard's position in the plan
    shard_id: str
    counts: Counts
    records: list[dict] = field(default_factory=list)  # finding records, in corpus order
    stored_inputs: list[tuple[str, str]] = field(default_factory=list)  # (inputs/KEY.json, payload)
    seconds: float = 0.0
    worker: str = ""


def batched(records: Iterable[Sample | BadRecord], max_samples: int = 64,
            max_chars: int = MAX_BATCH_CHARS) -> Iterator[list[Sample | BadRecord]]:
    """Consecutive records in batches of at most ``max_samples`` samples and about
    ``max_chars`` characters (one larger sample makes a batch of its own)."""
    batch: list[Sample | BadRecord] = []
    samples = chars = 0
    for record in records:
        size = sum(len(s.text) for s in record.segments) if isinstance(record, Sample) else 0
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


def run_shard(index: int, shard: Shard, executors: Sequence, *, batch_size: int = 64,
              strict: bool = False, worker: str = "") -> ShardResult:
    """``executors[0]`` is the reference. ``strict``: a bad record raises ``CorpusError``."""
    started = time.monotonic()
    sides = [Side(ex.spec, ex.token_bytes) for ex in executors]
    result = ShardResult(index, shard.id, Counts(), worker=worker)
    for side in sides:
        result.counts.engine(side.spec)
    for batch in batched(shard.records(), batch_size):
        samples = []
        for record in batch:
            if isinstance(record, BadRecord):
                if strict:
                    raise CorpusError(f"{record.position}: {record.reason}")
                result.records.append(bad_input_record(shard.source, record.position, record.reason, record.raw))
                result.counts.bad_records += 1
                result.counts.findings += 1
            else:
                samples.append(record)
        if not samples:
            continue
        delta, findings = compare_batch(samples, encode_all(executors, samples), sides, shard.source)
        result.counts.add(delta)
        for finding in findings:
            record, stored = finding.to_record()
            result.records.append(record)
            if stored is not None:
                result.stored_inputs.append(stored)
    result.seconds = time.monotonic() - started
    return result
