"""The task of ``verify run``: one corpus shard through every engine -- read its records,
batch them, encode with all engines at once (the reference once for every candidate),
compare. A shard of agent traces is replayed session by session (``session_task``).
The result is data (``ShardResult``), committed by the driver; the task writes nothing
itself, so it runs the same in this process, in a worker process, or in a Ray actor."""

from __future__ import annotations

import time
from operator import is_
from typing import TYPE_CHECKING, Sequence

from verify.batches import batched, encode_all
from verify.fresh_check import FreshCheck
from verify.comparison import CachedTokenBytes, Side, compare_batch
from verify.corpora.shards import Shard
from verify.corpora.traces.sources import SessionShard
from verify.counts import Counts
from verify.keys import ids_digest, input_digest
from verify.outcome import Failure, Recorded, is_ids
from verify.pipeline.session_task import run_session_shard
from verify.rundir.result import ShardResult
from verify.rundir.status import shard_heartbeat
from verify.sample import BadRecord, Sample

if TYPE_CHECKING:
    from verify.ledger import PartitionEntries


def encode_with_ledger(executors: Sequence, samples: list[Sample], recorded: "PartitionEntries",
                       result: ShardResult, audit_rate: float = 0.0, audit_seed: int = 0) -> list[list]:
    """Every engine on one batch, the reference only on inputs the ledger has no entry for
    and on the audited hits (``verify.ledger.audited``: a deterministic sample at
    ``audit_rate``). Where a candidate does not match an entry, the reference encodes the
    input again. Whenever the reference's fresh ids do not match the entry (an audited hit,
    or a re-encode), the entry is corrupt: the reference's outcome becomes a
    ``LedgerCorrupt`` failure, so the sample is never counted verified. Fresh ids that
    match stand in for the entry (and locate any difference exactly)."""
    from verify.ledger import audited

    reference, candidates = executors[0], executors[1:]
    keys = [input_digest(s.segments) for s in samples]
    ref_out: list = recorded.find(keys)  # the entry for each hit, then what stands for the reference's ids
    misses = [i for i, entry in enumerate(ref_out) if entry is None]
    audits = [i for i, k in enumerate(keys) if ref_out[i] is not None and audited(k, audit_rate, audit_seed)]
    reference.submit([samples[i] for i in misses + audits])  # one reference call for both
    expected = list(ref_out)  # an isolated candidate's process checks its ids against the entries
    for ex in candidates:
        ex.submit(samples, expected)
    fresh = reference.collect()
    cand_outs = [ex.collect() for ex in candidates]
    for i, outcome in zip(misses, fresh):
        ref_out[i] = outcome
        if is_ids(outcome):
            result.ledger_entries.append((keys[i], bytes.fromhex(ids_digest(outcome)), int(outcome.size)))
    stats = result.ledger_stats
    stats["hits"] = stats.get("hits", 0) + len(samples) - len(misses)
    stats["encoded"] = stats.get("encoded", 0) + len(misses)
    if audits:
        stats["audited"] = stats.get("audited", 0) + len(audits)
        for i, outcome in zip(audits, fresh[len(misses):]):
            ref_out[i] = _checked(ref_out[i], outcome, stats)
    recheck = _stand_in(ref_out, cand_outs)
    if recheck:
        for i, outcome in zip(recheck, reference.encode([samples[i] for i in recheck])):
            ref_out[i] = _checked(ref_out[i], outcome, stats)
    return [ref_out, *cand_outs]


def _stand_in(ref_out: list, cand_outs: list[list]) -> list[int]:
    """Where a candidate's ids match the ledger's entry, those ids stand in for the entry (they
    are the reference's, digest and length for digest and length): each candidate's digest is
    computed once, here (or in its own process, which then answers with the entry itself), and
    the comparison compares arrays. Returns the positions where some candidate's ids do not
    match the entry (the reference encodes those again)."""
    if all(all(map(is_, out, ref_out)) for out in cand_outs):
        return []  # the common batch: every candidate's process answered every entry as matched
    recheck = []
    for i, entry in enumerate(ref_out):
        if not isinstance(entry, Recorded):
            continue
        stand_in, mismatch = None, False
        for out in cand_outs:
            ids = out[i]
            if ids is entry:  # the candidate's own process matched the entry's digest and length
                continue
            if not is_ids(ids):
                continue
            if entry.matches(ids):
                stand_in = ids if stand_in is None else stand_in
            else:
                mismatch = True
        if mismatch:
            recheck.append(i)
        elif stand_in is not None:
            ref_out[i] = stand_in
    return recheck


def _checked(entry: Recorded, outcome, stats: dict[str, int]):
    """The reference's fresh outcome for an input the ledger has ``entry`` for: the ids when
    they match it, a ``LedgerCorrupt`` failure when they do not, a failure as it is."""
    if is_ids(outcome) and not entry.matches(outcome):
        stats["corrupt"] = stats.get("corrupt", 0) + 1
        return Failure("error", "LedgerCorrupt",
                       f"the ledger records {entry.length} ids with digest {entry.digest} for this input; "
                       f"the reference now gives {outcome.size} ids with digest {ids_digest(outcome)} "
                       "(a corrupt ledger, or a reference that changed under the same identity)")
    return outcome


def records_task(index: int, shard: Shard, executors: Sequence, context) -> ShardResult:
    """The run's task (``WorkerSetup.task``): ``context`` (``TaskContext``) gives the batch
    size, ``--strict``, the worker's ledger and, in its params (the plan's options), the
    ledger audit's rate and seed."""
    setup = context.setup
    if isinstance(shard, SessionShard):
        return run_session_shard(index, shard, executors, strict=setup.strict, worker=context.worker)
    from verify.ledger import DEFAULT_AUDIT_RATE

    params = context.params
    rate = params.get("ledger_audit")
    return run_shard(index, shard, executors, batch_size=setup.batch_size, strict=setup.strict,
                     worker=context.worker, ledger=context.ledger,
                     audit_rate=DEFAULT_AUDIT_RATE if rate is None else float(rate),
                     audit_seed=int(params.get("ledger_audit_seed") or 0))


def run_shard(index: int, shard: Shard, executors: Sequence, *, batch_size: int = 64,
              strict: bool = False, worker: str = "", ledger=None, audit_rate: float = 0.0,
              audit_seed: int = 0) -> ShardResult:
    """``executors[0]`` is the reference. ``strict``: a bad record raises ``CorpusError``.
    ``ledger`` (a ``verify.ledger.Ledger`` of the reference): reuse what it recorded, except
    the hits the audit picks (``audit_rate``, ``audit_seed``); its parts that fail their
    checksum are counted in ``ledger_stats["bad_parts"]`` and their inputs encoded again."""
    started = time.monotonic()
    sides = [Side(ex.spec, CachedTokenBytes(ex)) for ex in executors]
    result = ShardResult(index, shard.id, Counts(), worker=worker)
    recorded = None
    if ledger is not None:
        from verify.ledger import partition_of

        bad: list = []
        recorded = ledger.lookup(partition_of(shard.id), bad)
        if bad:  # one partition per shard: each bad part is counted once per attempt
            result.ledger_stats["bad_parts"] = len(bad)
    for side in sides:
        result.counts.engine(side.spec)
    fresh = FreshCheck(executors)  # every finding run again alone on a fresh engine before it is committed
    heart = shard_heartbeat(shard)
    read = 0
    for batch in batched(shard.records(), batch_size):
        read += len(batch)
        samples = []
        for record in batch:
            if isinstance(record, BadRecord):
                result.add_bad_record(shard.source, record, strict)
            else:
                samples.append(record)
        if heart is not None:
            heart.beat(read, result.counts.bytes)
        if not samples:
            continue
        outcomes = encode_all(executors, samples) if recorded is None else \
            encode_with_ledger(executors, samples, recorded, result, audit_rate, audit_seed)
        delta, findings = compare_batch(samples, outcomes, sides, shard.source)
        result.counts.add(delta)
        for finding in fresh.confirm(findings):
            result.add_record(*finding.to_record())
    result.extra["fresh"] = fresh.as_dict()
    result.seconds = time.monotonic() - started
    return result
