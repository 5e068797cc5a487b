"""One shard of agent traces, replayed turn by turn: every turn's ids from each engine
must equal the reference's from-scratch encode of the whole transcript so far.

Stateful candidates (``capabilities.sessions``) append each turn to a session of
their own (``Executor.session_append``) and the transcript's ids are rebuilt from the
updates; a stateless candidate encodes the whole transcript every turn. The
reference always encodes the whole transcript from scratch. Each turn is one
sample in the counts (its appended characters in ``chars``). A difference is an
``ids`` finding carrying the session: its id, the turn, how many turns and
characters came before (the prefix) and its key, the append, the engine's update
(``replace_from`` and what it reports about the step); the first one per session
and engine is written, later turns are counted. A failure (error, crash, timeout)
ends that engine's session there: the finding names the session and turn, its
remaining turns count as skipped for it, and the rest of the shard goes on.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from verify.comparison import sample_size
from verify.session_trace import coalesce
from verify.counts import Counts, worst
from verify.engines.sessions import apply_update
from verify.findings import Finding, describe_divergence, describe_failure
from verify.keys import input_key
from verify.outcome import REFERENCE_FAILED, SESSION_ENDED, SKIPPED, Failure, Skipped, agree, is_ids, state_of
from verify.rundir.result import ShardResult
from verify.rundir.status import shard_records
from verify.sample import BadRecord, Sample

SESSION_SOURCE_FIELD = "session"


def run_session_shard(index: int, shard, executors: Sequence, *, strict: bool = False,
                      worker: str = "") -> ShardResult:
    started = time.monotonic()
    result = ShardResult(index, shard.id, Counts(), worker=worker)
    for ex in executors:
        result.counts.engine(ex.spec)
    for record in shard_records(shard):
        if isinstance(record, BadRecord):
            result.add_bad_record(shard.source, record, strict)
            continue
        replay_session(record, executors, result, shard.source)
    result.seconds = time.monotonic() - started
    return result


def session_fields(trace, position: int, update=None) -> dict:
    turn = trace.turns[position]
    prefix = coalesce(seg for t in trace.turns[:position] for seg in t.segments)
    fields = {"id": trace.id, "turn": turn.index, "turns": position + 1,
              "turn_chars": [t.chars for t in trace.turns[:position + 1]],  # splits the input back into turns
              "prefix_key": input_key(prefix), "prefix_chars": sum(len(s.text) for s in prefix),
              "append": [[s.text, s.allow_special] for s in turn.segments]}
    if update is not None:
        fields["update"] = {"replace_from": int(update.replace_from), "notes": update.notes}
    return fields


def replay_session(trace, executors: Sequence, result: ShardResult, source: str | None) -> None:
    reference, candidates = executors[0], list(executors[1:])
    key = f"{trace.id}@{result.index}"
    stateful = [ex.capabilities.sessions for ex in candidates]
    alive = [True] * len(candidates)
    ids = [np.zeros(0, dtype=np.uint32) for _ in candidates]
    reported = [False] * len(candidates)
    ended: dict[int, str] = {}  # candidate -> why its session ended (the reason its later turns are skipped)
    for ci, ex in enumerate(candidates):
        if stateful[ci]:
            opened = ex.open_session(key)
            if isinstance(opened, Failure):
                alive[ci] = False
                ended[ci] = SESSION_ENDED
                _failure(result, ex, reference, trace.transcript(0), opened, session_fields(trace, 0), source)
                reported[ci] = True
    try:
        for position, turn in enumerate(trace.turns):
            sample = trace.transcript(position)
            reference.submit([sample])  # isolated: the reference encodes while the sessions append
            outs: list = []
            updates: list = []
            for ci, ex in enumerate(candidates):
                if not alive[ci]:
                    outs.append(None)
                    updates.append(None)
                elif stateful[ci] and not ex.capabilities.special_tokens and \
                        any(seg.allow_special for seg in turn.segments):
                    # it cannot take this turn, so no later turn is comparable: skipped from here on
                    alive[ci] = False
                    ended[ci] = SKIPPED.reason
                    outs.append(SKIPPED)
                    updates.append(None)
                elif stateful[ci]:
                    update = ex.session_append(key, turn.segments)
                    updates.append(update if not isinstance(update, Failure) else None)
                    if isinstance(update, Failure):
                        outs.append(update)
                    else:
                        try:
                            ids[ci] = apply_update(ids[ci], update)
                            outs.append(ids[ci])
                        except ValueError as exc:
                            outs.append(Failure("error", "BadUpdate", str(exc)))
                else:
                    outs.append(ex.encode([sample])[0])
                    updates.append(None)
            (ref,) = reference.collect()
            _account(result, trace, position, sample, reference, candidates, ref, outs, updates, alive, reported, ended,
                     source)
    finally:
        for ci, ex in enumerate(candidates):
            if stateful[ci]:
                ex.close_session(key)


def _account(result, trace, position, sample, reference, candidates, ref, outs, updates, alive, reported, ended,
             source) -> None:
    c = result.counts
    chars, nbytes = sample_size(Sample(sample.id, trace.turns[position].segments))
    c.samples += 1
    c.chars += chars
    c.bytes += nbytes
    ref_state = state_of(ref)
    c.engine(reference.spec)[ref_state] += 1
    if is_ids(ref):
        c.tokens += int(ref.size) if position == len(trace.turns) - 1 else 0
    elif isinstance(ref, Failure):
        _failure(result, reference, reference, sample, ref, session_fields(trace, position), source)
    sample_state = ref_state
    for ci, (ex, out) in enumerate(zip(candidates, outs)):
        if out is None:
            state = "skipped"  # its session ended earlier: at a failure, or at a turn it cannot take
            c.skip_reason(ex.spec, ended.get(ci, SESSION_ENDED))
        elif isinstance(out, Failure):
            state = out.kind
            alive[ci] = False
            ended[ci] = SESSION_ENDED
            if not reported[ci]:
                _failure(result, ex, reference, sample, out, session_fields(trace, position), source)
                reported[ci] = True
        elif not is_ids(out):
            state = state_of(out)  # skipped: e.g. special segments for an engine without special tokens
            if isinstance(out, Skipped):
                c.skip_reason(ex.spec, out.reason)
        elif not is_ids(ref):
            state = "skipped"
            c.skip_reason(ex.spec, REFERENCE_FAILED)
        elif agree(ref, out):
            state = "verified"
        else:
            state = "diverged"
            if not reported[ci]:
                fields = describe_divergence(sample, ref, out, reference.token_bytes(ref), ex.token_bytes(out))
                fields[SESSION_SOURCE_FIELD] = session_fields(trace, position, updates[ci])
                _write(result, Finding(ex.spec, reference.spec, sample, "ids", source, fields,
                                       detail=f"{trace.id}#{trace.turns[position].index}"))
                reported[ci] = True
        c.engine(ex.spec)[state] += 1
        sample_state = worst(sample_state, state)
    c.states[sample_state] += 1


def _failure(result, engine, reference, sample, failure, session_fields, source) -> None:
    fields = {**describe_failure(failure), SESSION_SOURCE_FIELD: session_fields}
    _write(result, Finding(engine.spec, reference.spec, sample, failure.kind, source, fields,
                           detail=f"{session_fields['id']}#{session_fields['turn']}"))


def _write(result: ShardResult, finding: Finding) -> None:
    result.add_record(*finding.to_record())
    result.counts.findings += 1
