"""Replaying a committed finding and shrinking it, keeping the bug it started with.

    reproduce(record, sample, reference, executor, budget_s, history=None) -> (block, skip reason)

One finding, on the engines triage (or shadow triage) started. The ``minimized`` block it
returns holds the smaller input and where it now diverges (``minimized_fields``); for a
finding that depends on state (``record["history"]``, ``verify.fresh_check``) the minimised
*history* as well, replayed on a fresh engine at every step (``verify.history``).

Minimisation keeps the bug it started with. A step is accepted only while the candidate still
shows the finding with the same *first-difference signature*: the general categories of the
characters of the first differing tokens (the reference's and the engine's; ``Xb`` for a byte
that is half a character) stay among the original's -- a newline run must not become
``'\\n \\n'``, another bug with a space in it -- and every category but the space of the
reference's first differing token is still in it (a bug at ``'a\\xc3'``, half of ``'aß'``, must
not shrink to ``' i'``, where a space bug of the same engine shows). A
reproducer found on the triage engine (which has seen every earlier step) is replayed on a
fresh engine at the end; when it no longer fails there, minimisation runs again with every
step on a fresh engine, so state left by earlier steps can never make the reproducer.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Callable

from verify.findings import describe_divergence, input_runs
from verify.history import History, fails_like, minimize_history, still_fails as history_still_fails, victim_result
from verify.minimize import MinimizeResult, minimize
from verify.outcome import Failure, FindingKind, differ, is_ids
from verify.sample import Sample

SKIP_NOT_REPRODUCED = "did not reproduce"
SKIP_BUDGET = "budget"
MAX_CALLS = 2000  # predicate calls of one minimisation: deterministic, whatever the machine's load
BATCH_CALL_FAILED = "BatchCallFailed"


def _encode_pair(reference, candidate, sample: Sample) -> tuple[object, object]:
    """Both engines on one sample; isolated workers run in parallel."""
    reference.submit([sample])
    candidate.submit([sample])
    return reference.collect()[0], candidate.collect()[0]


Signature = tuple[frozenset[str], frozenset[str]]  # (the reference's first differing piece, both pieces)


def _categories(piece: bytes) -> frozenset[str]:
    """General categories of a token's characters; ``Xb`` for bytes that are no whole character
    (a byte-level token holding half of one)."""
    text = piece.decode("utf-8", "replace")
    return frozenset("Xb" if ch == "\ufffd" and "\ufffd".encode() not in piece else unicodedata.category(ch)
                     for ch in text)


def _spelled(engine, ids, memo: dict | None):
    """``engine.token_bytes(ids)`` of one id, remembered in ``memo`` (a vocabulary's spelling of an
    id does not change: a minimisation asks for the same few ids thousands of times, each a call
    into an isolated engine's process otherwise)."""
    if memo is None:
        return engine.token_bytes(ids)
    key = (id(engine), int(ids[0]))
    if key not in memo:
        memo[key] = engine.token_bytes(ids)
    return memo[key]


def first_difference_signature(reference, executor, ref_ids, out_ids, memo: dict | None = None) -> Signature | None:
    """The categories of the first differing token: the reference's, and both sides' (None: no pieces)."""
    from verify.token_diff import first_difference

    index = first_difference(ref_ids, out_ids)
    if index is None:
        return None
    expected = _spelled(reference, ref_ids[index:index + 1], memo) if index < ref_ids.size else [b""]
    piece = out_ids[index:index + 1]
    # an engine that cannot decode is usually on the reference's vocabulary: its id spelled by the reference
    actual = (_spelled(executor, piece, memo) or _spelled(reference, piece, memo)) if index < out_ids.size else [b""]
    if not expected or not actual:
        return None
    a, b = _categories(expected[0]), _categories(actual[0])
    return a, a | b


def same_signature(now: Signature, original: Signature) -> bool:
    """``now`` keeps the ``original`` first-difference signature (see the module docstring). A
    difference past the reference's last token (the engine adds tokens at the end: no reference
    piece there) keeps any reference piece's categories."""
    return now[1] <= original[1] and (not now[0] or (original[0] - {"Zs"}) <= now[0])


def still_fails(kind: str, reference, executor, error_type: str | None = None,
                signature: Signature | None = None) -> Callable[[Sample], bool]:
    """The predicate that says a candidate sample still shows the finding: ``ids`` that differ
    (with the first-difference ``signature`` kept, when given), or a failure of the same kind and
    type."""
    if kind == FindingKind.IDS:
        spellings: dict = {}  # the two engines' token spellings, for this predicate's lifetime

        def ids_differ(sample: Sample) -> bool:
            ref, out = _encode_pair(reference, executor, sample)
            if not differ(ref, out):
                return False
            if signature is None:
                return True
            now = first_difference_signature(reference, executor, ref, out, spellings)
            return now is None or same_signature(now, signature)
        return ids_differ

    def fails_alike(sample: Sample) -> bool:
        out = executor.encode([sample])[0]
        return isinstance(out, Failure) and out.kind == kind and (error_type is None or out.type == error_type)
    return fails_alike


def fresh_fails(kind: str, reference, replayer, error_type: str | None = None) -> Callable[[Sample], bool]:
    """``still_fails`` with every candidate on a fresh engine (a new instance per call)."""
    def fails(sample: Sample) -> bool:
        (result,) = replayer.replay([[sample]])
        outcome = result if isinstance(result, Failure) else result[0]
        expected = reference.encode([sample])[0] if kind == FindingKind.IDS else None
        return fails_like(kind, error_type, outcome, expected)
    return fails


def minimized_fields(kind: str, reference, executor, result: MinimizeResult) -> dict[str, Any] | None:
    """The ``minimized`` block: the smaller input and, for ``ids``, where it now diverges.
    ``None`` when a final replay no longer fails (a flaky engine): such an input is no reproducer."""
    sample = result.sample
    block: dict[str, Any] = {"input": [[s.text, s.allow_special] for s in sample.segments],
                             "token_index": None, "byte_offset": None, "char_offset": None,
                             "expected": None, "actual": None}
    runs = input_runs(sample)
    if runs is not None:  # what a person reads: 'a'×500, not 500 characters
        block["input_runs"] = runs
    if kind == FindingKind.IDS:
        ref, out = _encode_pair(reference, executor, sample)
        if not differ(ref, out):
            return None
        located = describe_divergence(sample, ref, out, reference.token_bytes(ref), executor.token_bytes(out))
        block.update({k: located[k] for k in ("token_index", "byte_offset", "char_offset", "expected", "actual")})
    else:
        out = executor.encode([sample])[0]
        if not isinstance(out, Failure):
            return None
        block["error"] = out.as_dict()
    block.update({"chars": result.chars, "initial_chars": result.initial_chars, "calls": result.calls,
                  "stopped_on_budget": result.stopped_on_budget})
    return block


def _signature_of(kind: str, reference, executor, sample: Sample) -> Signature | None:
    if kind != FindingKind.IDS:
        return None
    ref, out = _encode_pair(reference, executor, sample)
    return first_difference_signature(reference, executor, ref, out) if differ(ref, out) else None


def reproduce(record: dict[str, Any], sample: Sample, reference, executor, budget_s: float,
              history: History | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The finding's ``minimized`` block, or ``(None, why)``."""
    kind = record["kind"]
    error_type = (record.get("error") or {}).get("type")
    if history is not None:
        against_self = record.get("engine") == record.get("reference")
        return _reproduce_history(kind, error_type, history, None if against_self else reference, executor, budget_s)
    signature = _signature_of(kind, reference, executor, sample)
    result = minimize(sample, still_fails(kind, reference, executor, error_type, signature), budget_s=budget_s,
                      max_calls=MAX_CALLS)
    if not result.reproduced:
        return None, SKIP_BUDGET if result.stopped_on_budget else SKIP_NOT_REPRODUCED
    replayer = executor.fresh_replayer() if hasattr(executor, "fresh_replayer") else None
    if replayer is not None and not fresh_fails(kind, reference, replayer, error_type)(result.sample):
        # the reproducer needs what earlier steps left in the triage engine: shrink again, every step fresh
        fresh = fresh_fails(kind, reference, replayer, error_type)
        result = minimize(sample, fresh, budget_s=budget_s, max_calls=MAX_CALLS // 4)
        if not result.reproduced:
            return None, SKIP_BUDGET if result.stopped_on_budget else SKIP_NOT_REPRODUCED
    block = minimized_fields(kind, reference, executor, result)
    return (block, None) if block is not None else (None, SKIP_NOT_REPRODUCED)


def _reproduce_history(kind: str, error_type: str | None, history: History, reference, executor,
                       budget_s: float) -> tuple[dict[str, Any] | None, str | None]:
    """``reference`` None: the finding is the engine against itself, whose right ids are its own
    on a fresh instance."""
    replayer = executor.fresh_replayer() if hasattr(executor, "fresh_replayer") else None
    if replayer is None:
        return None, "no fresh instance of the engine to replay its history on"
    expected_cache: dict[tuple, Any] = {}

    def expected_of(victim: Sample) -> Any:
        key = victim.segments
        if key not in expected_cache:
            sample = Sample("expected", victim.segments)
            if reference is not None:
                expected_cache[key] = reference.encode([sample])[0]
            else:
                (alone,) = replayer.replay([[sample]])
                expected_cache[key] = alone if isinstance(alone, Failure) else alone[0]
        return expected_cache[key]

    whole_call = error_type == BATCH_CALL_FAILED or history.victim[1] is None
    if whole_call:  # the call failed as a whole: any failure of the call shows it
        history = History(history.calls, (history.victim[0], None))
        predicate = _call_fails(replayer)
    else:
        predicate = history_still_fails(kind, error_type if kind == FindingKind.ERROR else None, replayer, expected_of)
    result = minimize_history(history, predicate, budget_s=budget_s)
    if not result.reproduced:
        return None, SKIP_BUDGET if result.stopped_on_budget else SKIP_NOT_REPRODUCED
    final = result.history
    replayed = replayer.replay(final.calls)
    outcome = victim_result(final, replayed)
    victim = final.victim_sample
    block: dict[str, Any] = {"input": [[s.text, s.allow_special] for s in (victim or final.calls[final.victim[0]][0])
                                       .segments],
                             "token_index": None, "byte_offset": None, "char_offset": None,
                             "expected": None, "actual": None,
                             "history": {**final.to_json(), "cause": final.cause_kind(),
                                         "described": final.describe()}}
    if victim is not None and kind == FindingKind.IDS and is_ids(outcome):
        expected = expected_of(victim)
        if is_ids(expected) and differ(expected, outcome):
            located = describe_divergence(victim, expected, outcome, (reference or executor).token_bytes(expected),
                                          executor.token_bytes(outcome))
            block.update({k: located[k] for k in ("token_index", "byte_offset", "char_offset", "expected",
                                                  "actual")})
    elif isinstance(outcome, Failure):
        block["error"] = outcome.as_dict()
    block.update({"chars": final.chars, "initial_chars": result.initial_chars, "calls": result.calls,
                  "stopped_on_budget": result.stopped_on_budget})
    return block, None


def _call_fails(replayer) -> Callable[[History], bool]:
    """For a batch call that failed as a whole: the call fails again (raised, crashed or hung)."""
    def fails(history: History) -> bool:
        results = replayer.replay(history.calls)
        return isinstance(results[history.victim[0]], Failure) and results[history.victim[0]] is not None and \
            results[history.victim[0]].type != "NotRun"
    return fails
