"""The task of ``verify shadow``: one shadow shard (a file) compared with the reference.

    shadow_shard(index, shard, executors, context) -> ShardResult     (``ShadowHunt.task``)

``executors[0]`` is the reference, the rest the replay engines ``--engine`` names.
Records stream in file order: requests in batches through the reference, each session
turn by turn as its transcript (``SessionTrace.transcript``, the finding's ``session``
block as ``verify replay`` writes it). A mismatch is replayed on production's tokenizer
where one is here (``verify.shadow.compare``). The result is data, never files:

  records  the findings, in the order today's command wrote them (a batch's bad records,
           then its mismatches) -- under ``--redact`` already through
           ``verify.shadow.redact.redact_record``, and never with a stored input
  extra    ``tokenizers`` (the comparer's per-tokenizer table), ``replay_engines`` (the
           tokenizers replayed, and on what) and ``findings``: per record, in order, what
           the triage needs later and cannot read back from a redacted record -- its
           ``signature`` (computed here, on the full input), the input's length, the
           replay that reproduced it (a spec, or None) and why not (``note``)

Nothing in the extra holds production text beyond what the record itself may keep.
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from typing import Any, Iterator

from verify.batches import batched
from verify.classify import signature
from verify.findings import bad_input_record
from verify.pipeline.session_task import session_fields
from verify.rundir.result import ShardResult
from verify.rundir.status import shard_records
from verify.sample import BadRecord, Sample
from verify.shadow.compare import Item, ReplayEngines, ShadowComparer, mapping_from_json
from verify.shadow.redact import redact_record
from verify.shadow.schema import ShadowRecord, ShadowSession
from verify.shadow.source import ShadowShard

POOL_KEY = "shadow-replay-pool"


def shard_items(records: Iterator, on_bad) -> Iterator[Item]:
    """Requests as they come; a session turn by turn; bad records to ``on_bad``."""
    for record in records:
        if isinstance(record, BadRecord):
            on_bad(record)
        elif isinstance(record, ShadowSession):
            trace = record.trace()
            last = len(record.records) - 1
            for position, turn in enumerate(record.records):
                transcript = trace.transcript(position)
                yield Item(turn, Sample(turn.request_id, transcript.segments), session_fields(trace, position),
                           last_turn=position == last)
        elif isinstance(record, ShadowRecord):
            yield Item(record, record.sample())
        else:
            raise TypeError(f"shadow reader yielded a {type(record).__name__}")


def _batches(items: Iterator[Item], size: int) -> Iterator[list[Item]]:
    pending: deque[Item] = deque()

    def samples():
        for item in items:
            pending.append(item)
            yield item.sample

    for batch in batched(samples(), size):  # batched yields a batch before taking in the next sample
        yield [pending.popleft() for _ in batch]


def _worker_pool(context):
    """The worker's pool for replay engines started on first use (engines/*.toml names),
    closed when the worker's context goes."""
    pool = context.cache.get(POOL_KEY)
    if pool is None:
        from verify.executors.pool import EnginePool

        pool = context.cache[POOL_KEY] = EnginePool(context.setup.engine_options)
        weakref.finalize(context, pool.close)
    return pool


def shadow_shard(index: int, shard: ShadowShard, executors: list, context) -> ShardResult:
    """The hunt's task: every record of one shadow file (see the module docstring)."""
    started = time.monotonic()
    params = context.params
    redact = bool(params["redact"])
    replays = ReplayEngines(mapping_from_json(params["engines"]), executors, lambda: _worker_pool(context))
    comparer = ShadowComparer(executors[0], replays)
    result = ShardResult(index, shard.id, comparer.counts, worker=context.worker)
    triage: list[dict[str, Any]] = []

    def keep(record: dict[str, Any], text: str, replay=None, note: str | None = None, stored=None) -> None:
        result.add_record(record, stored)
        triage.append({"finding_key": record["finding_key"], "signature": signature(record, text),
                       "chars": len(text), "replay": replay.spec if replay is not None else None, "note": note})

    def on_bad(bad: BadRecord) -> None:
        record = bad_input_record(shard.source, bad.position, bad.reason, bad.raw)
        comparer.counts.bad_records += 1
        keep(redact_record(record, None) if redact else record, "")

    for batch in _batches(shard_items(shard_records(shard), on_bad), int(params["batch_size"])):
        for m in comparer.compare(batch, shard.source):
            record, stored = m.finding.to_record()
            if redact:  # the stored input, if any, is dropped: nothing unredacted leaves the worker
                record, stored = redact_record(record, m.finding.sample.segments), None
            keep(record, m.finding.sample.text, m.replay, m.replay_note, stored)
    result.counts.findings = len(result.records)
    result.extra = {"tokenizers": [[*key, dict(tally)] for key, tally in comparer.tokenizers.items()],
                    "replay_engines": dict(replays.used), "findings": triage}
    result.seconds = time.monotonic() - started
    return result
