"""The ``stress`` check of ``verify check``: the serving shapes of ``verify.adversarial.stress.shapes``
on one engine, against its own single calls and -- when ``verify check`` has one -- the reference.

  big batch   ONE call with each of ``stress.BIG_BATCH_SIZES`` samples (the first size whatever
              the budget, the others while it lasts): every sample's ids must
              be its single-call ids (one single call per distinct text: the 100,000-sample batch
              repeats the 16,384 texts). A batch call that raised, or crashed or hung the worker,
              while every sample alone encodes is an ``error`` finding ``BatchCallFailed``.
  families    ONE call per homogeneous batch of one length family (``stress.family_batches``:
              digit, letter, whitespace, newline, CJK and emoji runs of 10 to 10^4 characters,
              10^3 to 10^5 of them) through the engine's batch entry point: every element must
              have the right ids (the reference's, else the engine's own on a fresh instance);
              a failed call is ``BatchCallFailed``. Each finding keeps its batch call as its
              history (``verify.fresh_check``), which triage shrinks to the smallest batch that
              still fails: about K elements of about L characters.
  state       ``verify.adversarial.stress.state``: each victim (a run of one class at and around
              powers of two and the known thresholds) encoded after poison inputs of its family
              (the run followed by a character of each other class), in single calls and inside
              one batch, against its right ids: a difference is a ``history`` finding whose
              calls triage shrinks to the poison and the victim.
  thresholds  every input of ``stress.threshold_plan`` until the time budget ends: it encodes
              without error (a failure is a finding), and obeys *repetition*. The first input of
              each (cut, unit, phase, position) group also encodes again to the same ids
              (``repeat``), gives them on the warm engine (``history``) and, for byte-level
              decoders, decodes to its own bytes (``roundtrip``).

Each phase checks its first unit (a big batch, a family batch, a victim, a threshold input)
whatever the budget: a verdict does not rest on the machine's load, and no phase runs nothing
for lack of time; the budget bounds the rest (``ended: "time"`` says where it stopped).

Repetition. A threshold input is a head ``H`` (up to the first whole unit), a block ``B``
(the unit ``r`` times) repeated ``K`` times, and a tail ``T`` holding the probe:
``H + B^K + T``. Its ids must be ``X + M^(K-2) + Y``, where the engine itself gives
``X + Y`` for ``H + B^2 + T`` and ``X + M + Y`` for ``H + B^3 + T`` (``M`` is what one more
block adds), confirmed by ``X + M^3 + Y`` for ``H + B^5 + T``. An engine whose segmentation
is local (regex pre-tokenizers, whitespace-split SentencePiece) obeys it at any length; one
that cuts a long input into chunks and encodes them apart does not. ``r`` is the first of
``BLOCKS`` that fits the short inputs; when none does, the property does not apply to the
input (counted as ``not_applicable``; after ``GIVE_UP`` such inputs of a unit that never
fitted, it is not tried for that unit again).

With a reference, every threshold input's ids must also be the reference's (property
``reference``), and a big-batch finding is written against the reference, so triage can shrink
it.

Findings have ``check: "stress"``, a ``property`` and the sample's recipe (``stress``);
at most ``MAX_FINDINGS`` are written per property, every violation is counted
(``CheckCounts`` under ``stress``), and every stress sample ends in one tally state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verify.adversarial.stress import shapes as stress
from verify.adversarial.stress.state import state_plan
from verify.adversarial.checks.metamorphic import MetamorphicChecker
from verify.adversarial.stress.calls import CachedTokenBytes, CallWatch
from verify.findings import describe_divergence, describe_failure
from verify.outcome import Failure, Outcome, agree, is_ids
from verify.sample import Sample

CHECK = "stress"
DEFAULT_BUDGET_S = 60.0
MAX_FINDINGS = 5  # written per property; the rest are counted
BLOCKS = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # unit repetitions tried as the block B
GIVE_UP = 6  # inputs of one unit on which no block fitted before the property is no longer tried for it
PHASES = ("batches", "families", "state", "thresholds")


def empty_notes(report: dict[str, Any], batch_sizes: tuple[int, ...] = stress.BIG_BATCH_SIZES) -> list[str]:
    """What a stress report says the budget left unchecked: a phase that was planned and ran nothing."""
    notes = []
    if "batches" in report and batch_sizes and not report["batches"]:
        notes.append("the stress budget left no time for a big batch: 0 batches checked (raise --stress-budget)")
    families = report.get("families")
    if families is not None and families["planned"] and not families["batches"]:
        notes.append("the stress budget left no time for a family batch: 0 family batches checked "
                     "(raise --stress-budget)")
    state = report.get("state")
    if state is not None and state["planned"] and not state["groups"]:
        notes.append("the stress budget left no time for the state hunt: 0 victims checked (raise --stress-budget)")
    threshold = report.get("threshold")
    if threshold is not None and threshold["planned"]["inputs"] and not threshold["inputs"]:
        notes.append("the stress budget left no time for a threshold input: 0 inputs checked "
                     "(raise --stress-budget)")
    return notes


@dataclass
class StressCheck:
    checker: MetamorphicChecker
    budget_s: float = DEFAULT_BUDGET_S
    cuts: tuple[int, ...] | None = None
    state_limit: int | None = None  # victim groups of the state phase (None: the plan's default)
    batch_sizes: tuple[int, ...] = stress.BIG_BATCH_SIZES
    written: dict[str, int] = field(default_factory=dict)  # property -> findings written
    violations: dict[str, int] = field(default_factory=dict)  # property -> violations counted
    report: dict[str, Any] = field(default_factory=dict)
    _blocks: dict[tuple[str, int], int] = field(default_factory=dict)  # (unit, phase) -> r that fitted
    _misses: dict[tuple[str, int], int] = field(default_factory=dict)  # (unit, phase) -> inputs nothing fitted

    @property
    def fresh(self):
        return self.checker.fresh

    # --- findings -----------------------------------------------------------------------
    @property
    def reference(self):
        return self.checker.reference

    def _emit(self, sample: Sample, prop: str, kind: str, fields: dict[str, Any], against=None,
              expected: Any = None) -> None:
        self.violations[prop] = self.violations.get(prop, 0) + 1
        if self.written.get(prop, 0) >= MAX_FINDINGS:
            return
        self.written[prop] = self.written.get(prop, 0) + 1
        self.checker.emit(sample, kind, CHECK, {"property": prop, **fields}, detail=f"{CHECK}:{prop}",
                          engine=self.fresh.spec, reference=against.spec if against is not None else None,
                          expected=expected)

    def _fail(self, sample: Sample, prop: str, outcome: Outcome, recipe: dict) -> None:
        if not isinstance(outcome, Failure):  # Skipped: nothing asked, nothing to check
            self.checker.mark(sample, "skipped")
            return
        self.checker.counts.errors += 1
        self.checker.mark(sample, outcome.kind)
        self._emit(sample, prop, outcome.kind, {**describe_failure(outcome), "stress": recipe})

    def _compare(self, sample: Sample, prop: str, expected: np.ndarray, actual: Outcome, recipe: dict,
                 pieces: CachedTokenBytes, against=None, own: bool = False, **extra) -> None:
        """``actual`` against ``expected`` -- the ids of ``against`` (the reference), else the engine's
        own (``own``: its right ids, taken on a fresh instance: a finding is checked fresh too)."""
        if not is_ids(actual):
            self._fail(sample, prop, actual, recipe)
            return
        self.checker.counts.checked[CHECK] += 1
        if agree(expected, actual):
            return
        self.checker.counts.violations[CHECK] += 1
        self.checker.mark(sample, "diverged")
        ref_pieces = against.token_bytes(expected) if against is not None else pieces(expected)
        fields = describe_divergence(sample, expected, actual, ref_pieces, pieces(actual))
        self._emit(sample, prop, "ids", {**fields, "stress": recipe, **extra}, against=against,
                   expected=expected if own and against is None else None)

    def right_ids(self, samples: list[Sample]) -> tuple[list[Outcome], Any]:
        """The right ids of ``samples``: the reference's (and the reference), else the engine's own,
        each on a fresh instance (and None)."""
        if self.reference is not None:
            return self.reference.encode(samples), self.reference
        return self.checker.fresh_baselines(samples), None

    # --- the check ---------------------------------------------------------------------
    def run(self, phases: tuple[str, ...] = PHASES) -> dict[str, Any]:
        """The phases asked for (both by default; ``verify check`` on the pipeline runs each as a
        shard of its own), each bounded by the budget from now. A phase the budget left empty
        says so in ``notes``: a check that ran nothing never passes silently."""
        started = time.monotonic()
        deadline = started + self.budget_s
        before = self.checker.counts.samples
        pieces = CachedTokenBytes(self.fresh)
        self.report = {}
        if "batches" in phases:
            self.report["batches"] = []
            self._batches(pieces, deadline)
        if "families" in phases:
            self.report["families"] = {"planned": len(stress.family_batches()), "batches": [], "ended": "done"}
            self._families(pieces, deadline)
        if "state" in phases:
            self.report["state"] = {"planned": sum(1 for _ in state_plan(self.state_limit)), "groups": 0,
                                    "calls": 0, "ended": "done"}
            self._state(pieces, deadline)
        if "thresholds" in phases:
            self.report["threshold"] = {"planned": stress.plan_size(self.cuts), "inputs": 0, "chars": 0,
                                        "not_applicable": 0, "ended": "done"}
            self._thresholds(pieces, deadline)
        self.report.update(seconds=round(time.monotonic() - started, 3), violations=dict(self.violations),
                           findings_written=dict(self.written), samples=self.checker.counts.samples - before)
        notes = empty_notes(self.report, self.batch_sizes)
        if notes:
            self.report["notes"] = notes
        return self.report

    def _batches(self, pieces: CachedTokenBytes, deadline: float) -> None:
        texts = stress.big_batch(min(stress.DISTINCT, max(self.batch_sizes, default=0)))
        self.checker.begin()
        singles = [self.fresh.encode([s])[0] for s in texts]  # the baselines: one call per text
        for i, (sample, single) in enumerate(zip(texts, singles)):
            if not is_ids(single):
                self._fail(sample, "single-call", single, stress.batch_recipe(len(texts), stress.BATCH_SEED, i))
        for n, size in enumerate(self.batch_sizes):
            if n and time.monotonic() >= deadline:  # the first size always: a verdict never rests on the load
                break
            t0 = time.monotonic()
            samples = texts if size == len(texts) else stress.big_batch(size)
            watch = CallWatch(self.fresh)
            out = self.fresh.encode(samples)
            failure = watch.failure(out, size)
            recipe = stress.batch_recipe(size, stress.BATCH_SEED, 0)
            if failure is not None:
                self.checker.counts.errors += 1
                for sample in samples:
                    self.checker.mark(sample, "error")
                self._emit(samples[1], "big-batch", "error", {**describe_failure(failure), "stress": recipe})
            else:
                right: dict[int, Any] = {}  # the reference's ids of a text the batch got wrong, asked once
                for i, (sample, got) in enumerate(zip(samples, out)):
                    base = singles[i % len(texts)]
                    if is_ids(base):
                        against = None
                        if self.reference is not None and is_ids(got) and not agree(base, got):
                            k = i % len(texts)
                            if k not in right:
                                right[k] = self.reference.encode([texts[k]])[0]
                            if is_ids(right[k]) and agree(right[k], base):  # the batch call is what is wrong
                                against = self.reference
                        self._compare(sample, "big-batch", base, got, {**recipe, "index": i}, pieces,
                                      against=against, batch_size=size)
                    else:
                        self.checker.mark(sample, base.kind if isinstance(base, Failure) else "skipped")
            self.checker.count_states(list(samples), [singles[i % len(texts)] for i in range(size)])
            self.checker.begin()
            self.report["batches"].append({"size": size, "seconds": round(time.monotonic() - t0, 3)})
        self.checker.begin()

    def _families(self, pieces: CachedTokenBytes, deadline: float) -> None:
        """Homogeneous batches of one length family, each ONE call of the engine's batch entry point."""
        info = self.report["families"]
        for batch in stress.family_batches():
            if info["batches"] and time.monotonic() >= deadline:  # the first always
                info["ended"] = "time"
                break
            t0 = time.monotonic()
            samples = batch.samples()
            (expected,), against = self.right_ids(samples[:1])
            self.checker.begin()
            watch = CallWatch(self.fresh)
            out = self.fresh.encode(samples)
            failure = watch.failure(out, len(samples))
            differing = 0
            if failure is not None:
                self.checker.counts.errors += 1
                for sample in samples:
                    self.checker.mark(sample, "error")
                self._emit(samples[1], "family-batch", "error", {**describe_failure(failure),
                                                                 "stress": batch.recipe(1)}, against=against)
            elif is_ids(expected):
                for i, (sample, got) in enumerate(zip(samples, out)):
                    if is_ids(got) and agree(expected, got):
                        self.checker.counts.checked[CHECK] += 1
                        continue
                    differing += 1
                    self._compare(sample, "family-batch", expected, got, batch.recipe(i), pieces, against=against,
                                  own=True, batch_size=len(samples))
            self.checker.count_states(samples, [expected] * len(samples))
            info["batches"].append({"family": batch.family, "length": batch.length, "size": len(samples),
                                    "differing": differing, "failed": failure is not None,
                                    "seconds": round(time.monotonic() - t0, 3)})
        self.checker.begin()

    def _state(self, pieces: CachedTokenBytes, deadline: float) -> None:
        """Each victim after poison inputs of its family: in single calls, then inside one batch."""
        info = self.report["state"]
        engine = self.fresh
        for tried, group in enumerate(state_plan(self.state_limit)):
            if (tried and info["groups"]) and time.monotonic() >= deadline:  # one checked victim always
                info["ended"] = "time"
                break
            victim, poisons = group.victim, group.poisons
            (expected,), against = self.right_ids([victim])
            (alone,) = engine.encode([victim])  # a victim wrong already is the length sweep's, not state
            if not (is_ids(expected) and is_ids(alone) and agree(expected, alone)):
                continue
            self.checker.begin()
            info["groups"] += 1
            for poison in poisons:
                engine.encode([poison])
                (got,) = engine.encode([victim])
                info["calls"] += 2
                self._compare(victim, "state", expected, got, {**group.recipe(), "after": poison.text[-1]}, pieces,
                              against=against, own=True)
            got = engine.encode([*poisons, victim])[-1]
            info["calls"] += 1
            self._compare(victim, "state", expected, got, {**group.recipe(), "after": "batch"}, pieces,
                          against=against, own=True)
            self.checker.count_states([victim], [expected])
        self.checker.begin()

    def _thresholds(self, pieces: CachedTokenBytes, deadline: float) -> None:
        info = self.report["threshold"]
        groups: set[tuple] = set()
        for item in stress.threshold_plan(self.cuts):
            if info["inputs"] and time.monotonic() >= deadline:  # the first always
                info["ended"] = "time"
                break
            sample, recipe = item.sample(), item.recipe()
            self.checker.begin()
            ids = self.fresh.encode([sample])[0]
            info["inputs"] += 1
            info["chars"] += item.length
            if not is_ids(ids):
                self._fail(sample, "encode", ids, recipe)
            else:
                if self.reference is not None:
                    (right,) = self.reference.encode([sample])
                    if is_ids(right):
                        self._compare(sample, "reference", right, ids, recipe, pieces, against=self.reference)
                expected = self.repetition(item)
                if expected is None:
                    info["not_applicable"] += 1
                else:
                    self._compare(sample, "repetition", expected, ids, recipe, pieces)
                group = (item.cut, item.unit, item.phase, item.at, item.width)
                if group not in groups:
                    groups.add(group)
                    self._again(sample, ids, recipe, pieces)
            self.checker.count_states([sample], [ids])
        self.checker.begin()

    def _again(self, sample: Sample, ids: np.ndarray, recipe: dict, pieces: CachedTokenBytes) -> None:
        """repeat, history and roundtrip on one threshold input."""
        self._compare(sample, "repeat", ids, self.fresh.encode([sample])[0], recipe, pieces)
        self.checker.warm_up()
        self._compare(sample, "history", ids, self.checker.warm.encode([sample])[0], recipe, pieces)
        if self.checker.roundtrip:
            decoded = self.fresh.token_bytes(ids)
            self.checker.counts.checked[CHECK] += 1
            if decoded is None or b"".join(decoded) != sample.text.encode("utf-8"):
                self.checker.counts.violations[CHECK] += 1
                self.checker.mark(sample, "diverged")
                self._emit(sample, "roundtrip", "ids", {"stress": recipe, "token_index": None,
                                                        "decoded_bytes": None if decoded is None else
                                                        len(b"".join(decoded)),
                                                        "input_bytes": len(sample.text.encode("utf-8"))})

    # --- repetition ---------------------------------------------------------------------
    def repetition(self, item: stress.Threshold) -> np.ndarray | None:
        """The ids the repetition property predicts for ``item``, or None when it does not apply."""
        unit = (item.unit, item.phase)
        first = self._blocks.get(unit)
        if first is None and self._misses.get(unit, 0) >= GIVE_UP:
            return None  # no block ever fitted this unit: stop paying for the short inputs
        for r in ([first] if first else []) + [b for b in BLOCKS if b != first]:
            predicted = self._predict(item, r)
            if predicted is not None:
                self._blocks[unit] = r
                return predicted
        self._misses[unit] = self._misses.get(unit, 0) + 1
        return None

    def _predict(self, item: stress.Threshold, r: int) -> np.ndarray | None:
        text = item.text()
        n = len(item.unit)
        head = (n - item.phase) % n
        block = item.unit * r
        count = (item.at - head) // len(block)
        if count < 6:
            return None
        start = head + count * len(block)
        h, t = text[:head], text[start:]
        a2, a3, a5 = (self.fresh.encode([Sample.plain(f"{item.sample_id}:rep{k}", h + block * k + t)])[0]
                      for k in (2, 3, 5))
        if not (is_ids(a2) and is_ids(a3) and is_ids(a5)):
            return None
        split = _insertion(a2, a3)
        if split is None:
            return None
        i, d = split
        x, m, y = a2[:i], a3[i:i + d], a2[i:]
        if not agree(np.concatenate([x, np.tile(m, 3), y]).astype(a2.dtype), a5):
            return None
        return np.concatenate([x, np.tile(m, count - 2), y]).astype(a2.dtype)


def _insertion(a2: np.ndarray, a3: np.ndarray) -> tuple[int, int] | None:
    """``(i, d)`` with ``a3 == a2[:i] + a3[i:i+d] + a2[i:]`` (the largest such ``i``), or None."""
    n, d = len(a2), len(a3) - len(a2)
    if d < 0:
        return None
    diff = np.nonzero(a2 != a3[:n])[0]
    common_prefix = int(diff[0]) if diff.size else n
    tail = a3[d:] if d else a3
    rdiff = np.nonzero(a2[::-1] != tail[::-1])[0]
    common_suffix = int(rdiff[0]) if rdiff.size else n
    i = common_prefix
    return (i, d) if n - i <= common_suffix else None
