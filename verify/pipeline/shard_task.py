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
from verify.keys import ids_digest, input_key
from verify.outcome import Failure, Recorded, agree, is_ids
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
    ledger_entries: list[tuple[bytes, bytes, int]] = field(default_factory=list)  # new reference results
    ledger_stats: dict[str, int] = field(default_factory=dict)  # hits, encoded, corrupt


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


def encode_with_ledger(executors: Sequence, samples: list[Sample], recorded: dict[bytes, tuple[bytes, int]],
                       result: ShardResult) -> list[list]:
    """Every engine on one batch, the reference only on inputs the ledger has no entry for.
    Where a candidate does not match an entry, the reference encodes the input again: the
    fresh ids stand (and locate the difference) when they match the entry; when they do not,
    the entry is corrupt and the reference's outcome is a ``LedgerCorrupt`` failure, so the
    sample is never counted verified."""
    reference, candidates = executors[0], executors[1:]
    keys = [bytes.fromhex(input_key(s.segments)) for s in samples]
    misses = [i for i, k in enumerate(keys) if k not in recorded]
    reference.submit([samples[i] for i in misses])
    for ex in candidates:
        ex.submit(samples)
    fresh = reference.collect()
    cand_outs = [ex.collect() for ex in candidates]
    ref_out: list = [None] * len(samples)
    for i, key in enumerate(keys):
        if key in recorded:
            digest, length = recorded[key]
            ref_out[i] = Recorded(digest.hex(), length)
    for i, outcome in zip(misses, fresh):
        ref_out[i] = outcome
        if is_ids(outcome):
            result.ledger_entries.append((keys[i], bytes.fromhex(ids_digest(outcome)), int(outcome.size)))
    stats = result.ledger_stats
    stats["hits"] = stats.get("hits", 0) + len(samples) - len(misses)
    stats["encoded"] = stats.get("encoded", 0) + len(misses)
    recheck = [i for i, r in enumerate(ref_out) if isinstance(r, Recorded)
               and any(is_ids(out[i]) and not agree(r, out[i]) for out in cand_outs)]
    if recheck:
        for i, outcome in zip(recheck, reference.encode([samples[i] for i in recheck])):
            entry = ref_out[i]
            if is_ids(outcome) and not entry.matches(outcome):
                stats["corrupt"] = stats.get("corrupt", 0) + 1
                outcome = Failure("error", "LedgerCorrupt",
                                  f"the ledger records {entry.length} ids with digest {entry.digest} for this input; "
                                  f"the reference now gives {outcome.size} ids with digest {ids_digest(outcome)} "
                                  "(a corrupt ledger, or a reference that changed under the same identity)")
            ref_out[i] = outcome
    return [ref_out, *cand_outs]


def run_shard(index: int, shard: Shard, executors: Sequence, *, batch_size: int = 64,
              strict: bool = False, worker: str = "", ledger=None) -> ShardResult:
    """``executors[0]`` is the reference. ``strict``: a bad record raises ``CorpusError``.
    ``ledger`` (a ``verify.ledger.Ledger`` of the reference): reuse what it recorded.
    A shard of agent traces is replayed session by session (``session_task``)."""
    if shard.kind in ("traces", "agent"):
        from verify.pipeline.session_task import run_session_shard

        return run_session_shard(index, shard, executors, strict=strict, worker=worker)
    started = time.monotonic()
    sides = [Side(ex.spec, ex.token_bytes) for ex in executors]
    result = ShardResult(index, shard.id, Counts(), worker=worker)
    recorded = None
    if ledger is not None:
        from verify.ledger import partition_of

        recorded = ledger.lookup(partition_of(shard.id))
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
        outcomes = encode_all(executors, samples) if recorded is None else \
            encode_with_ledger(executors, samples, recorded, result)
        delta, findings = compare_batch(samples, outcomes, sides, shard.source)
        result.counts.add(delta)
        for finding in findings:
            record, stored = finding.to_record()
            result.records.append(record)
            if stored is not None:
                result.stored_inputs.append(stored)
    result.seconds = time.monotonic() - started
    return result
