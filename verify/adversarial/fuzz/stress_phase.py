"""The stress phase of ``verify fuzz``: the serving shapes of ``verify.adversarial.stress.shapes``
through the reference and every candidate, compared sample by sample. On the pipeline it runs
as stress shards of the fuzz hunt (``verify.adversarial.fuzz.search``), each with its own
``ClusterBook`` and time cap: one shard for the big batches, one per chunking threshold, so a
first hit at one cut never leaves another cut untried.

  big batches  each batch of ``stress.BIG_BATCH_SIZES`` goes to every engine as ONE call -- to a
               candidate through its library's own batch entry point (``SPEC?entry=batch``) --
               (``encode_all``) and is compared with ``compare_batch`` in slices (so the
               findings of 10^5 samples are never all held at once). A batch call that raised
               or killed the worker although every sample alone encodes (the executor's
               ``batch_fallbacks`` run note, or a worker restart) makes every sample of that
               call an ``error`` of type ``BatchCallFailed``.
               An engine whose batch bug is known (``ids/stress-only/big-batch`` or
               ``error/BatchCallFailed``) skips the larger batches: what they could show
               would be masked in that cluster. The first batch always runs; the larger
               ones only before the deadline (in the phase's first half when the same phase
               also runs threshold inputs, so the thresholds keep half of it).
  thresholds   ``stress.threshold_plan``, one input at a time, until the deadline (the first
               ``MIN_THRESHOLD_INPUTS`` whatever the time: a slow batch on a busy machine must
               not leave the chunking thresholds untried); every input of every cut runs,
               whatever was found before (a first hit never hides the rest).
  families     (``shape = "families"``) homogeneous batches of one length family
               (``stress.family_batches``) through each candidate's batch entry point, every
               element against the reference's ids of one; a failed call is ``BatchCallFailed``.
  state        (``shape = "state"``) ``verify.adversarial.stress.state``: each victim after poison
               inputs of its family on every candidate that gives the victim right alone, in
               single calls and inside one batch, against the reference's ids (the first ``MIN_STATE_GROUPS`` -- the powers of two --
               whatever the time). A finding there does not reproduce alone on a fresh engine: it
               is written with the calls that led to it (``verify.fresh_check``).

A phase that stopped for its deadline says so: ``report["capped"]`` (a larger batch left out,
or threshold inputs left untried). ``merge_reports`` joins the reports of a run's stress shards.

Stress-only bugs. A threshold input's finding is named by its *minimised reproducer*
(run-length minimisation: a few dozen calls however long the input): when that is still
as long as the cut (``'1'×25001``) the bug needs the threshold -- the finding is marked
``fields["stress"]["only"]`` ``cut-N`` and falls in the cluster ``ids/stress-only/cut-N``;
when it is shorter (``'a'×500``, a tie rule on long runs) the finding becomes the finding on
that reproducer, in its ordinary cluster, and says what it was minimised from. Two causes
at one cut are two clusters. For a big-batch finding the *twin* -- the sample alone -- is
encoded by the reference and the finding's engine: when they agree, the bug needs the
batch (``ids/stress-only/big-batch``). When the reference's own batch ids differ from its
single call, the reference gets that finding.

Every finding carries the sample's recipe in ``fields["stress"]`` and goes through the
shard's ``ClusterBook`` like a hypothesis finding: the first of a new cluster is written,
the rest are counted; a short sample's new cluster whose minimised reproducer is that
of a cluster already found is folded into it (``same-cause``), as in the search. An
engine leaves after ``max_findings`` clusters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from verify.adversarial.stress import shapes as stress
from verify.adversarial.stress.state import state_plan
from verify.adversarial.fuzz.clusters import STRESS_ONLY, ClusterBook
from verify.adversarial.unicode.contexts import WHITESPACE_LIKE
from verify.adversarial.stress.calls import CachedTokenBytes, CallWatch
from verify.comparison import Side, compare_batch
from verify.counts import Counts
from verify.findings import Finding, describe_divergence
from verify.outcome import FindingKind, agree, is_ids
from verify.batches import encode_all
from verify.sample import Sample

SOURCE = "fuzz-stress"
MIN_THRESHOLD_INPUTS = 32  # whitespace-like probes at and around the 25,000-character cut
MIN_STATE_GROUPS = 108  # the state hunt's powers of two (12 lengths x 9 run classes), whatever the time
BATCH_BUG_KEYS = (f"ids/{STRESS_ONLY}/big-batch", "error/BatchCallFailed")  # "its batch bug is found"
COMPARE_SLICE = 4096  # samples compared (and their findings held) at a time
MAX_RECHECKS = 1000  # twin rechecks per engine per stress shape (one per distinct ordinary cluster)
TWIN_BEFORE = 400  # characters before the probe in a threshold input's twin
FOLD_MAX_CHARS = 256  # samples short enough to minimise for their cause (big-batch samples are)


@dataclass
class StressPhase:
    reference: Any  # Executor
    book: ClusterBook
    write: Callable[..., dict]  # write(finding, source, key): writes it and adds it to the book
    counts: Counts
    max_findings: int
    cuts: tuple[int, ...] | None = None
    batch_sizes: Sequence[int] = stress.BIG_BATCH_SIZES
    # the search's cause of a finding (minimised reproducer) and "same cause as a found cluster: folded"
    cause: Callable[[Finding], Any] | None = None
    fold: Callable[[Finding], bool] | None = None
    report: dict[str, Any] = field(default_factory=dict)
    _rechecked: dict[tuple[str, str, str], bool] = field(default_factory=dict)
    _pieces: dict[str, CachedTokenBytes] = field(default_factory=dict)
    _keys: dict[tuple, str] = field(default_factory=dict)  # (kind, char_offset, text) -> ordinary key
    _by_cut: dict[tuple, list | None] = field(default_factory=dict)  # threshold findings' minimised reproducers
    # candidate spec -> the executor of its library's batch call (``SPEC?entry=batch``): big batches go there
    batch_executors: dict[str, Any] = field(default_factory=dict)
    shape: str = "serving"  # serving (big batches, then threshold inputs) | families | state

    def _sides(self, executors) -> list[Side]:
        return [Side(ex.spec, self._pieces.setdefault(ex.spec, CachedTokenBytes(ex))) for ex in executors]

    def _still(self, active: list) -> list:
        return [ex for ex in active if self.book.found(ex.spec) < self.max_findings]

    def _done(self) -> bool:
        return self.book.found(self.reference.spec) >= self.max_findings

    def run(self, active: list, deadline: float) -> list:
        if self.shape in ("families", "state"):
            started = time.monotonic()
            self.report = {self.shape: {"ended": "done"}, "batches": [], "threshold": {"planned": {"inputs": 0}}}
            (self._families if self.shape == "families" else self._state)(active, deadline)
            self.report["capped"] = self.report[self.shape]["ended"] == "time"
            self.report["seconds"] = round(time.monotonic() - started, 3)
            return self._still(active)
        started = time.monotonic()
        self.report = {"batches": [], "threshold": {"planned": stress.plan_size(self.cuts), "inputs": 0,
                                                    "chars": 0, "tiers_done": [], "ended": "not started"},
                       "cuts": sorted(stress.CUTS if self.cuts is None else self.cuts)}
        # with threshold inputs to run as well, the big batches may use half of the phase at most:
        # the threshold inputs find other bugs (chunking) and a slow batch must not leave them no time
        thresholds = self.report["threshold"]["planned"]["inputs"] > 0
        batches_until = started + max(0.0, deadline - started) / (2 if thresholds else 1)
        capped = False
        for n, size in enumerate(self.batch_sizes):
            active = self._still(active)
            if not active or self._done():
                break
            if n > 0 and time.monotonic() >= batches_until:
                capped = True
                break
            # an engine whose batch bug is found skips the larger batches: their batch-only divergences
            # would all be masked in that cluster, and its local bugs show in the smaller batch's texts
            fresh = [ex for ex in active if not any(self.book.known_key(ex.spec, k) for k in BATCH_BUG_KEYS)]
            if fresh:
                self._batch(fresh, size)
        self._thresholds(self._still(active), deadline)
        self.report["capped"] = capped or self.report["threshold"]["ended"] == "time"
        self.report["seconds"] = round(time.monotonic() - started, 3)
        return self._still(active)

    # --- findings ---------------------------------------------------------------------
    def _take(self, findings: list[Finding], executors: list, only: str,
              twin_of: Callable[[Finding], Sample]) -> None:
        """Mark stress-only findings, count every finding, write the first of each new cluster."""
        for finding in findings:  # one at a time: the first of a cluster is written, the rest are masked
            if only.startswith("cut-") and finding.kind == FindingKind.IDS:
                finding = self._by_cause(finding, executors, int(only[4:]))
            key = self._key(finding)
            if finding.kind == FindingKind.IDS and not finding.fields["stress"].get("only") and \
                    not only.startswith("cut-") and not self.book.known(finding, key) and \
                    self._needs_shape(finding, key, executors, only, twin_of):
                finding.fields["stress"]["only"] = only
                key = self.book.key(finding)
            if not self.book.observe([finding], keys=[key]) or self.book.found(finding.engine) >= self.max_findings:
                continue
            local = not finding.fields["stress"].get("only") and len(finding.sample.text) <= FOLD_MAX_CHARS
            if local and self.fold is not None and self.fold(finding):
                continue  # a short sample whose minimised reproducer is a found cluster's: the same bug
            self.write(finding, "stress", key, self.cause(finding) if local and self.cause else None)

    def _by_cause(self, finding: Finding, executors: list, cut: int) -> Finding:
        """A threshold input's finding named by its minimised reproducer: still as long as the cut
        (``'1'×25001``) -- it needs the chunking threshold, cluster ``ids/stress-only/cut-N`` --, or
        shorter (``'a'×500``: a tie rule on long runs, nothing to do with the cut), when it becomes
        the finding on that reproducer, in its ordinary cluster. Minimised once per (engine, cut,
        ordinary cluster, probe class); runs minimise in a few dozen calls however long."""
        if self.cause is None:
            return finding
        probe = finding.fields["stress"].get("probe", "")
        ident = (finding.engine, cut, self.book.key(finding), _probe_class(probe))
        if ident not in self._by_cut:
            found = self.cause(finding)
            self._by_cut[ident] = None if found is None else found[1]
        segments = self._by_cut[ident]
        if segments is None:
            return finding
        if sum(len(text) for text, _ in segments) >= cut:
            finding.fields["stress"]["only"] = f"cut-{cut}"
            return finding
        engine = next(ex for ex in executors if ex.spec == finding.engine)
        small = Sample.from_segments(f"{finding.sample.id}:minimised", segments)
        _, smaller = compare_batch([small], encode_all([self.reference, engine], [small]),
                                   self._sides([self.reference, engine]), SOURCE)
        same = [f for f in smaller if f.engine == finding.engine]
        if not same:
            return finding
        same[0].fields["stress"] = {**finding.fields["stress"], "minimised_from": finding.sample.id}
        return same[0]

    def _key(self, finding: Finding) -> str:
        """The ordinary cluster key; for ids findings of short samples, computed once per (offset, text):
        a 100,000-sample batch repeats its 16,384 texts."""
        if finding.kind != FindingKind.IDS or len(finding.sample.text) > FOLD_MAX_CHARS:
            return self.book.key(finding)
        ident = (finding.fields.get("char_offset"), finding.sample.text)
        key = self._keys.get(ident)
        if key is None:
            key = self._keys[ident] = self.book.key(finding)
        return key

    def _needs_shape(self, finding: Finding, key: str, executors: list, only: str,
                     twin_of: Callable[[Finding], Sample]) -> bool:
        """Whether the reference and the finding's engine agree on the finding's twin (cached per
        engine, shape and ordinary cluster ``key``; at most ``MAX_RECHECKS`` per engine and shape)."""
        ident = (finding.engine, only, key)
        if ident not in self._rechecked:
            if sum(1 for e, o, _ in self._rechecked if e == finding.engine and o == only) >= MAX_RECHECKS:
                return False  # past the cap: not verified, so it keeps its ordinary cluster
            engine = next(ex for ex in executors if ex.spec == finding.engine)
            ref_twin, cand_twin = encode_all([self.reference, engine], [twin_of(finding)])
            self._rechecked[ident] = is_ids(ref_twin[0]) and is_ids(cand_twin[0]) and agree(ref_twin[0],
                                                                                            cand_twin[0])
        return self._rechecked[ident]

    # --- big batches ---------------------------------------------------------------------
    def _batch(self, active: list, size: int) -> None:
        t0 = time.monotonic()
        # through the library's own batch entry point where it has one: a bug there is what a big batch finds
        executors = [self.reference, *(self.batch_executors.get(ex.spec, ex) for ex in active)]
        samples = stress.big_batch(size)
        watches = [CallWatch(ex) for ex in executors]
        outcomes = encode_all(executors, samples)
        for e, watch in enumerate(watches):
            failure = watch.failure(outcomes[e], size)
            if failure is not None:
                outcomes[e] = [failure] * size
        index = {id(s): i for i, s in enumerate(samples)}
        sides = self._sides(executors)
        only = "big-batch"
        total = 0
        for lo in range(0, size, COMPARE_SLICE):
            hi = min(size, lo + COMPARE_SLICE)
            delta, findings = compare_batch(samples[lo:hi], [o[lo:hi] for o in outcomes], sides, SOURCE)
            self.counts.add(delta)
            findings += self._reference_batch(samples, outcomes[0], lo, hi, size)
            total += len(findings)
            for finding in findings:
                recipe = stress.batch_recipe(size, stress.BATCH_SEED, index[id(finding.sample)])
                finding.fields["stress"] = {**recipe, **finding.fields.get("stress", {})}
            self._take(findings, executors, only, lambda f: f.sample)
        self.report["batches"].append({"size": size, "seed": stress.BATCH_SEED, "findings": total,
                                       "seconds": round(time.monotonic() - t0, 3)})

    def _reference_batch(self, samples: list[Sample], ref_outcomes: list, lo: int, hi: int,
                         size: int) -> list[Finding]:
        """The reference's batch ids against its single calls, for the first sample of each slice
        (a cheap probe: a reference that depends on the batch would fail every comparison)."""
        sample, batch_ids = samples[lo], ref_outcomes[lo]
        alone = self.reference.encode([sample])[0]
        if not (is_ids(alone) and is_ids(batch_ids)) or agree(alone, batch_ids):
            return []
        fields = describe_divergence(sample, alone, batch_ids, self.reference.token_bytes(alone),
                                     self.reference.token_bytes(batch_ids))
        fields["stress"] = {"only": "big-batch", "batch_size": size}
        return [Finding(self.reference.spec, self.reference.spec, sample, "ids", SOURCE, fields, detail="big-batch")]

    # --- homogeneous family batches, and the state hunt -------------------------------------
    def _families(self, active: list, deadline: float) -> None:
        info = self.report["families"]
        info.update(planned=len(stress.family_batches()), batches=0)
        for batch in stress.family_batches():
            active = self._still(active)
            if not active or self._done():
                info["ended"] = "pool empty"
                break
            if time.monotonic() >= deadline and info["batches"]:
                info["ended"] = "time"
                break
            samples = batch.samples()
            executors = [self.batch_executors.get(ex.spec, ex) for ex in active]
            watches = [CallWatch(ex) for ex in executors]
            outcomes = [self.reference.encode(samples[:1]) * len(samples)] + encode_all(executors, samples)
            for e, watch in enumerate(watches, 1):
                failure = watch.failure(outcomes[e], len(samples))
                if failure is not None:
                    outcomes[e] = [failure] * len(samples)
            info["batches"] += 1
            sides = self._sides([self.reference, *executors])
            for lo in range(0, len(samples), COMPARE_SLICE):
                hi = min(len(samples), lo + COMPARE_SLICE)
                delta, findings = compare_batch(samples[lo:hi], [o[lo:hi] for o in outcomes], sides, SOURCE)
                self.counts.add(delta)
                # a finding carries its sample object: its place by identity (a search by equality
                # is quadratic when a whole batch of 16,384 fails, and finds an equal twin first)
                where = {id(s): i for i, s in enumerate(samples[lo:hi], lo)} if findings else {}
                for finding in findings:
                    finding.fields["stress"] = batch.recipe(where[id(finding.sample)])
                self._take(findings, [self.reference, *executors], "family-batch", lambda f: f.sample)

    def _state(self, active: list, deadline: float) -> None:
        info = self.report["state"]
        info.update(planned=sum(1 for _ in state_plan(None)), groups=0)
        for n, group in enumerate(state_plan(None)):
            active = self._still(active)
            if not active or self._done():
                info["ended"] = "pool empty"
                break
            if time.monotonic() >= deadline and n >= MIN_STATE_GROUPS:
                info["ended"] = "time"
                break
            victim = group.victim
            (right,) = self.reference.encode([victim])
            outs: list[list] = [[right]]
            alone = [ex.encode([victim])[0] for ex in active]  # a victim wrong already is no state bug here
            candidates = [ex for ex, out in zip(active, alone) if is_ids(out) and is_ids(right) and agree(right, out)]
            if not candidates:
                continue
            for ex in candidates:  # each candidate: the victim after each poison, then inside one batch
                got = []
                for poison in group.poisons:
                    ex.encode([poison])
                    got.append(ex.encode([victim])[0])
                got.append(ex.encode([*group.poisons, victim])[-1])
                outs.append(got)
            info["groups"] += 1
            executors = [self.reference, *candidates]
            for k in range(len(group.poisons) + 1):
                delta, findings = compare_batch([victim], [[right]] + [[o[k]] for o in outs[1:]],
                                                self._sides(executors), SOURCE)
                self.counts.add(delta)
                after = group.poisons[k].text[-1] if k < len(group.poisons) else "batch"
                for finding in findings:
                    finding.fields["stress"] = {**group.recipe(), "after": after}
                self._take(findings, executors, "state", lambda f: f.sample)

    # --- threshold inputs -------------------------------------------------------------
    def _thresholds(self, active: list, deadline: float) -> None:
        info = self.report["threshold"]
        info["ended"] = "done"
        tier = None
        for item in stress.threshold_plan(self.cuts):
            active = self._still(active)
            if not active or self._done():
                info["ended"] = "pool empty"
                break
            if time.monotonic() >= deadline and info["inputs"] >= MIN_THRESHOLD_INPUTS:
                info["ended"] = "time"
                break
            if item.tier != tier:
                if tier is not None:
                    info["tiers_done"].append(tier)
                tier = item.tier
            # every input of every cut runs, whatever was found before: a first hit never hides the rest
            # (findings of a known cluster are counted and masked, not written again)
            executors = [self.reference, *active]
            sample = item.sample()
            delta, findings = compare_batch([sample], encode_all(executors, [sample]), self._sides(executors),
                                            SOURCE)
            self.counts.add(delta)
            info["inputs"] += 1
            info["chars"] += item.length
            for finding in findings:
                finding.fields["stress"] = item.recipe()
            self._take(findings, executors, f"cut-{item.cut}", lambda f: twin(item, f.sample))
        else:
            if tier is not None:
                info["tiers_done"].append(tier)


def _probe_class(probe: str) -> str:
    """What a threshold input's probe character is, for telling causes apart at one cut."""
    if not probe.startswith("U+"):
        return ""
    ch = chr(int(probe[2:], 16))
    white = any(a <= ord(ch) <= b for a, b in WHITESPACE_LIKE)
    return ("space" if ch.isspace() else "other") + ("/whitespace-like" if white else "")


def twin(item: stress.Threshold, sample: Sample) -> Sample:
    """The characters around the probe of a threshold input: the same local text, far below the cut."""
    lo = max(0, item.at - TWIN_BEFORE)
    return Sample.plain(f"{sample.id}:twin", sample.text[lo:item.at + item.width + stress.TAIL])


def merge_reports(reports: list[dict[str, Any]], cuts: tuple[int, ...] | None) -> dict[str, Any]:
    """One report from the stress shards' (in plan order): their batches, and the threshold inputs
    of every cut (``cuts``: each cut's own report, keyed by the cut)."""
    merged: dict[str, Any] = {"batches": [], "threshold": {"planned": stress.plan_size(cuts), "inputs": 0, "chars": 0,
                                                          "tiers_done": [], "ended": "not started", "cuts": {}},
                              "capped": False, "seconds": 0.0}
    threshold = merged["threshold"]
    ended: list[str] = []
    for report in reports:
        for shape in ("families", "state"):
            if report.get(shape):
                merged[shape] = report[shape]
        merged["batches"] += report.get("batches", [])
        merged["capped"] = merged["capped"] or bool(report.get("capped"))
        merged["seconds"] = round(merged["seconds"] + float(report.get("seconds") or 0.0), 3)
        part = report.get("threshold") or {}
        if not part.get("planned", {}).get("inputs"):
            continue
        for name in ("inputs", "chars", "skipped"):
            if part.get(name):
                threshold[name] = threshold.get(name, 0) + part[name]
        threshold["tiers_done"] = sorted(set(threshold["tiers_done"]) | set(part.get("tiers_done", [])))
        for cut in report.get("cuts") or []:
            threshold["cuts"][str(cut)] = part
        ended.append(part.get("ended", "not started"))
    if ended:  # the least finished cut says how the threshold inputs ended
        threshold["ended"] = next((e for e in ("time", "not started", "pool empty") if e in ended), "done")
    return merged
