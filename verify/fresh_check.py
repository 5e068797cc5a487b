"""State is part of every finding: each is run again on a fresh engine before it is committed.

    check = FreshCheck(executors)          # per shard, in the worker; the reference first
    check.confirm(findings)                # before the findings go into the shard's result
    result.extra["fresh"] = check.as_dict()

A finding of a candidate engine (``ids``, ``error`` or ``crash``) is replayed alone on a fresh
instance of that engine (``Executor.fresh_replayer``: a new process that has made no call):

  reproduces   it fails the same way alone: a plain finding (``fields["fresh"] = "reproduces"``);
  passes       it does not: the finding depends on state. Its *history* -- the calls that
               engine made before it in this worker, from its call log (``verify.executors.
               call_log``), its own batch call included -- is replayed on fresh engines from its
               most recent calls backwards (the victim's call, then with the last 1, 2, 4, ...
               before it: ``verify.history.shortest_suffix``) and the shortest that brings the
               finding back is kept in ``fields["history"]`` (``history_reproduced``); when none
               does, all the kept calls are. Triage minimises it as a sequence of calls.

A batch call that failed where every sample alone encodes (``error``, ``BatchCallFailed``)
keeps that call as its history, the call itself the victim: what a replay must show again is
the call failing.

A finding of an engine against itself (``verify check`` without a reference) is checked when
the caller gives the right ids (``expected``: the engine's own on a fresh instance).

A finding that is not checked says why (``"not-checked: ..."``): the reference's own, a
timeout (a replay would cost the timeout again), a session finding (sessions are history by
design), an engine with no fresh instance (a device engine), past ``MAX_PER_SHARD`` distinct
inputs per engine and shard (the first ones are checked), or a finding whose state is as good
as known:

  its signature    a finding of the same first difference (``verify.classify.signature_key``)
                   already reproduced alone for that engine in this shard;
  its engine       ``NO_HISTORY_AFTER`` findings of that engine reproduced alone in this shard
                   and none passed: the engine shows no history here.

A fresh replay costs a new process and the engine's first-call work (tens to hundreds of
milliseconds), so a corpus where every document diverges must not pay one per document; an
engine or a signature whose findings *pass* alone (history) keeps every finding checked. Hunts
whose findings are few and each a probe of its own (the length sweep, the Unicode sweep) check
every one (``FreshCheck(..., sampled=False)``): there a history bug hides among plain findings
of the same first difference (basetenkenizer's result cache among its 25,000-character cuts).
Never counted as verified either way: the finding is committed, only its state is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from verify.classify import signature, signature_key
from verify.findings import Finding
from verify.executors.fresh import NOT_RUN, FreshUnavailable
from verify.history import History, fails_like, shortest_suffix, victim_result
from verify.outcome import Failure, FindingKind, is_ids

BATCH_CALL_FAILED = "BatchCallFailed"

MAX_PER_SHARD = 256  # distinct inputs checked per engine and shard
REPRODUCED_ENOUGH = 1  # findings of one signature that reproduce alone before the rest are not replayed
NO_HISTORY_AFTER = 3  # findings of an engine that reproduce alone, none passing, before the rest are not replayed
CHECKED_KINDS = ("ids", "error", "crash")
REPRODUCES, PASSES = "reproduces", "passes"


@dataclass
class FreshCounts:
    checked: int = 0
    reproduces: int = 0
    passes: int = 0
    history_reproduced: int = 0
    not_checked: dict[str, int] = field(default_factory=dict)

    def skip(self, why: str) -> None:
        self.not_checked[why] = self.not_checked.get(why, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "reproduces": self.reproduces, "passes": self.passes,
                "history_reproduced": self.history_reproduced, "not_checked": dict(self.not_checked)}


class FreshCheck:
    def __init__(self, executors: Sequence, reference: Any | None = None, max_per_shard: int = MAX_PER_SHARD,
                 sampled: bool = True):
        """``executors``: the shard's engines; ``reference``: the executor whose ids are right
        (``executors[0]`` by default; None when there is none, e.g. a self-comparison).
        ``sampled``: False checks every finding (up to ``max_per_shard``), never taking its state
        as known from others' -- for hunts whose findings are few and each a probe of its own
        (the length sweep's cut probes, where one probe's history bug hides among plain ones)."""
        self.by_spec = {ex.spec: ex for ex in executors}
        self.reference = executors[0] if reference is None and executors else reference
        self.max_per_shard = max_per_shard
        self.sampled = sampled
        self.counts = FreshCounts()
        self._seen: dict[tuple[str, tuple], Finding] = {}  # (engine, segments) -> the finding checked, in the shard
        self._checked: dict[str, int] = {}
        # (engine, signature key) -> findings that reproduced alone; (engine, "") counts all of the engine's
        self._reproduced: dict[tuple[str, str], int] = {}
        self._passed: set[str] = set()  # engines with a finding that passed alone (history) in this shard

    def as_dict(self) -> dict[str, Any]:
        return self.counts.as_dict()

    def _why_not(self, finding: Finding, executor, given: bool) -> str | None:
        if finding.kind not in CHECKED_KINDS:
            return f"{finding.kind} findings are not replayed"
        if executor is None:
            return "engine not in this shard"
        whole_call = (finding.fields.get("error") or {}).get("type") == BATCH_CALL_FAILED
        if finding.engine == finding.reference and not given and not whole_call:
            return "a finding of the engine against itself"
        if finding.fields.get("session") or finding.fields.get("history"):
            return "already a stateful finding"
        if getattr(executor, "fresh_replayer", None) is None or executor.fresh_replayer() is None:
            return "the engine has no fresh instance here"
        if self._checked.get(finding.engine, 0) >= self.max_per_shard:
            return f"over {self.max_per_shard} inputs checked for this engine in this shard"
        return None

    def confirm(self, findings: Sequence[Finding], expected: Sequence[Any] | None = None,
                executor: Any = None) -> list[Finding]:
        """Mark every finding with its fresh verdict (and history); returns them, in order.
        ``expected``: the right ids of each finding's sample, when the caller has them (a finding
        of an engine against itself: there is no reference to ask); ``executor``: the one that gave
        them, when its spec does not tell (an engine's twin)."""
        todo: list[tuple[Finding, Any]] = []
        given = {id(f): e for f, e in zip(findings, expected)} if expected is not None else {}
        via = executor
        pending: dict[tuple[str, str], int] = {}  # (engine, signature key) -> checks queued in this call
        for finding in findings:
            executor = via or self.by_spec.get(finding.engine)
            why = self._why_not(finding, executor, id(finding) in given)
            if why is not None:
                finding.fields["fresh"] = f"not-checked: {why}"
                self.counts.skip(why)
                continue
            ident = (finding.engine, finding.sample.segments)
            if ident in self._seen:  # the same input checked already: its verdict and history
                checked = self._seen[ident].fields
                finding.fields.update({k: checked[k] for k in ("fresh", "history") if k in checked})
                continue
            why = self._engine_known(finding.engine, pending)  # before the signature, which costs
            cause = (finding.engine, _signature_of(finding)) if why is None else (finding.engine, "")
            why = why or self._known(cause, pending)
            if why is not None:
                finding.fields["fresh"] = f"not-checked: {why}"
                self.counts.skip(why.split(" (")[0])
                continue
            pending[cause] = pending.get(cause, 0) + 1
            pending[(finding.engine, "")] = pending.get((finding.engine, ""), 0) + 1
            self._checked[finding.engine] = self._checked.get(finding.engine, 0) + 1
            todo.append((finding, executor))
        by_engine: dict[int, list[tuple[Finding, Any]]] = {}
        for finding, executor in todo:
            by_engine.setdefault(id(executor), []).append((finding, executor))
        for engine, items in by_engine.items():
            self._confirm_engine(items, given)
        return list(findings)

    def _known(self, cause: tuple[str, str], pending: dict[tuple[str, str], int]) -> str | None:
        """Why a finding need not be replayed, its state as good as known (see the module
        docstring), or None. ``pending``: the checks queued in this call, counted as if they
        reproduced (the first of each kind is checked, in order)."""
        engine, sig = cause
        if engine in self._passed or not self.sampled:
            return None
        if self._reproduced.get(cause, 0) + pending.get(cause, 0) >= REPRODUCED_ENOUGH:
            return f"a finding of the same first difference reproduced alone in this shard ({sig})"
        return None

    def _engine_known(self, engine: str, pending: dict[tuple[str, str], int]) -> str | None:
        """The engine-wide half of ``_known``, which needs no signature."""
        if engine in self._passed or not self.sampled:
            return None
        if self._reproduced.get((engine, ""), 0) + pending.get((engine, ""), 0) >= NO_HISTORY_AFTER:
            return f"{NO_HISTORY_AFTER} findings of this engine reproduced alone in this shard, none passed"
        return None

    def _expected(self, findings: list[Finding], given: dict[int, Any]) -> list[Any]:
        """The right ids for each ``ids`` finding's sample: the caller's, else the reference's
        (None where not needed)."""
        need = [f.sample for f in findings if f.kind == FindingKind.IDS and id(f) not in given]
        outs = iter(self.reference.encode(need) if need and self.reference is not None else [])
        return [given[id(f)] if id(f) in given else next(outs, None) if f.kind == FindingKind.IDS else None
                for f in findings]

    def _confirm_engine(self, items: list[tuple[Finding, Any]], given: dict[int, Any]) -> None:
        executor = items[0][1]
        replayer = executor.fresh_replayer()
        findings = [f for f, _ in items]
        expected = self._expected(findings, given)
        try:
            alone = replayer.replay_many([[[f.sample]] for f in findings])
        except FreshUnavailable as exc:  # a spawned fresh instance did not load this time
            for finding in findings:
                finding.fields["fresh"] = f"not-checked: {exc}"
                self.counts.skip("a fresh instance did not load")
            return
        histories: list[tuple[Finding, History, Any]] = []
        for finding, exp, result in zip(findings, expected, alone):
            self.counts.checked += 1
            error_type = (finding.fields.get("error") or {}).get("type")
            outcome = result[0] if isinstance(result[0], Failure) else result[0][0]
            whole_call = error_type == BATCH_CALL_FAILED
            if whole_call:  # the call failed, every sample alone encodes: the victim is the call
                verdict = REPRODUCES if isinstance(outcome, Failure) else PASSES
            elif finding.kind == FindingKind.IDS and not (exp is not None and is_ids(exp)):
                verdict = REPRODUCES if exp is None else "not-checked: the reference gave no ids"
            elif fails_like(finding.kind, _type_for(finding.kind, error_type), outcome, exp):
                verdict = REPRODUCES
            else:
                verdict = PASSES
            finding.fields["fresh"] = verdict
            self._seen[(finding.engine, finding.sample.segments)] = finding
            if verdict == REPRODUCES:
                self.counts.reproduces += 1
                for cause in ((finding.engine, _signature_of(finding)), (finding.engine, "")):
                    self._reproduced[cause] = self._reproduced.get(cause, 0) + 1
            elif verdict == PASSES:
                self.counts.passes += 1
                self._passed.add(finding.engine)
                logged = executor.call_log.through(finding.sample, min_size=2 if whole_call else 1)
                if logged is None:
                    finding.fields["history"] = {"missing": "no kept call held this input"}
                    continue
                calls, victim = logged
                history = History(tuple(calls), (victim[0], None) if whole_call else victim)
                histories.append((finding, history, exp))
        for finding, history, exp in histories:  # the shortest recent history that brings the finding back
            error_type = _type_for(finding.kind, (finding.fields.get("error") or {}).get("type"))

            def again(h: History, finding=finding, exp=exp, error_type=error_type) -> bool:
                outcome = victim_result(h, replayer.replay(h.calls))
                if h.victim[1] is None:
                    return isinstance(outcome, Failure) and outcome.type != NOT_RUN.type
                return fails_like(finding.kind, error_type, outcome, exp)

            short = shortest_suffix(history, again)
            self.counts.history_reproduced += short is not None
            kept = short or history
            doc = kept.to_json()
            doc.update(reproduced=short is not None, cause=kept.cause_kind(), calls_logged=len(history.calls),
                       older_calls_dropped=executor.call_log.older_dropped())
            finding.fields["history"] = doc


def _signature_of(finding: Finding) -> str:
    """The finding's first-difference signature (``verify.classify``), as triage would group it."""
    return signature_key(signature({"kind": finding.kind, **finding.fields}, finding.sample.text))


def _type_for(kind: str, error_type: str | None) -> str | None:
    """A crash in a fresh process is named by how it died, not by the worker that restarted:
    only an ``error`` must keep its exception type."""
    return error_type if kind == FindingKind.ERROR else None
