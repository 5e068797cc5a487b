"""Grow, bisect, probe: where one family first differs, found without a length built in.

For one family and every candidate at once (the reference encodes each text once):

1. **Grow** the length geometrically (about ``GROWTH`` times per step, from ``START`` to
   ``max_chars``) until a candidate differs from the reference (or fails where the
   reference does not). Every length tried is a prime: a fault often shows only where the
   cut falls inside a token, and a run's tokens have a period (``'a' * n`` is n/8 tokens of
   eight), so lengths that are powers of two would all be aligned and see nothing.
2. **Scan, then bisect.** Every length from 1 up to ``FULL_SCAN`` (and below the first growth
   point that differed) is tried, in batches: a divergence that is not monotone in length --
   tokie's space runs differ on and off from 82, its ``'.'`` runs at 33 though 67 agrees -- is
   found at its true first length, whatever the growth points happened to hit. Above that, it
   **bisects** between the last length it agreed at and the first it differed at, down to two
   adjacent lengths, then **scans back** ``SCAN`` lengths at a time for an earlier one that
   differs (a midpoint on an aligned length agrees although the fault is below it): the
   **first divergent length** ``T``. A 500-byte tie rule, a 3,777-character chunk and the
   25,000 / 400,000 cuts come out the same way; the cut is ``T - 1`` characters. The
   ``PATTERN_SPAN`` lengths from ``T`` are tried as well and the share that differs is the
   divergence's **pattern**: ``every length`` from ``T``, or ``on and off``.
3. **Probe the cut**: every whitespace-like and control character placed at the cut and
   just before it (the last ``len(OFFSETS)`` positions of the text of length ``T``; one text
   each up to ``PER_POSITION_MAX`` characters, above it the probe fills the positions at
   once) -- and the same texts one character shorter, where the plain run agrees. What
   differs is reported: dropping the probe leaves a run that agrees, so the minimised
   reproducer keeps it (``'1'×24998 + '\\x1c' + '1'×2``), and a rule for whitespace at a
   chunk boundary comes out apart from the plain cut.

A shard holds several families (``GroupSearch``); each threshold is probed once per shard
and candidate, with the first family that found it, so a chunk size that a hundred
families show costs one round of probes per shard, not a hundred.

Every encoded text is one sample in the counts; findings are ``ids`` (or failure)
findings carrying a ``length`` block (family, length, runs, threshold, probe), at most
``MAX_PROBE_FINDINGS`` per candidate and threshold (the rest counted), so memory does
not grow with the number of findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from verify.adversarial.length.families import SEPARATING, Family
from verify.comparison import CachedTokenBytes, Side, compare_batch
from verify.fresh_check import FreshCheck
from verify.counts import Counts
from verify.outcome import agree, is_ids
from verify.sample import Sample

START = 16
GROWTH = 4
SCAN = 32  # lengths scanned back below a bisected boundary (longest token period expected)
FULL_SCAN = 1024  # every length up to this is tried before bisecting (non-monotone divergences)
PATTERN_SPAN = 64  # lengths from the first divergent one tried for the divergence's pattern
SCAN_BATCH = 64  # lengths encoded per call while scanning
SCAN_LONG = 8  # the same above LONG: each length is a large encode
LONG = 100_000
OFFSETS = (-4, -3, -2, -1, 0)  # from the last character of the text
PER_POSITION_MAX = 50_000  # cuts above this get one text per probe character, the five positions filled
SCAN_BACK_CHARS = 32_000_000  # characters scanned below a bisected boundary while windows keep differing
MAX_PROBE_FINDINGS = 64


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def prime_at_least(n: int) -> int:
    while not _is_prime(n):
        n += 1
    return n


def prime_at_most(n: int) -> int:
    while n > 2 and not _is_prime(n):
        n -= 1
    return n


def lengths(max_chars: int) -> list[int]:
    """The growth points: primes about ``GROWTH`` apart, the last the largest prime up to ``max_chars``."""
    last = prime_at_most(max_chars)
    out, n = [], START
    while n < last:
        p = prime_at_least(n)
        if p >= last:
            break
        out.append(p)
        n *= GROWTH
    return out + [last]


@dataclass
class CandidateLength:
    """What one family showed for one candidate."""

    first_divergent: int | None = None  # T: the first length that differs (T - 1 agrees)
    pattern: str | None = None  # "every length" or "on and off": how the PATTERN_SPAN lengths from T fared
    differing_after: list[int] | None = None  # [differ, tried] among the PATTERN_SPAN lengths from T
    agrees_up_to: int = 0  # the longest length seen to agree
    first_exact: bool = True  # False: the scan below a bisected boundary ran out of SCAN_BACK_CHARS,
    #                          so a shorter length may differ too (on and off far below)
    reference_failed_at: int | None = None  # the reference itself failed: nothing to compare beyond
    probed_by: str | None = None  # the family of the shard whose cut probes stand for this threshold
    probes: int = 0  # cut probes encoded
    probes_differing: int = 0
    probe_findings_dropped: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class FamilyResult:
    family: Family
    candidates: dict[str, CandidateLength] = field(default_factory=dict)
    counts: Counts = field(default_factory=Counts)
    findings: list = field(default_factory=list)  # verify.findings.Finding


class FamilySearch:
    """One family through ``executors`` (the reference first)."""

    def __init__(self, family: Family, executors: Sequence, *, max_chars: int, source: str = "length",
                 probed: dict[tuple[str, int], str] | None = None, fresh: FreshCheck | None = None):
        """``probed``: (candidate, threshold) -> the family whose cut was probed; a threshold already
        probed (by another family of the shard) is not probed again."""
        self.family, self.executors, self.max_chars, self.source = family, list(executors), max_chars, source
        self.probed = probed if probed is not None else {}
        self.fresh = fresh or FreshCheck(self.executors)
        self.sides = [Side(ex.spec, CachedTokenBytes(ex)) for ex in self.executors]
        self.result = FamilyResult(family, {ex.spec: CandidateLength() for ex in self.executors[1:]})
        self.result.counts.engine(self.executors[0].spec)
        for ex in self.executors[1:]:
            self.result.counts.engine(ex.spec)
        self._reference: dict[str, Any] = {}  # sample id -> the reference's outcome (bisection revisits)

    # --- encoding -------------------------------------------------------------------------
    def _encode(self, samples: list[Sample], candidates: Sequence) -> tuple[list, list[list]]:
        """The reference's outcomes (from its cache where it has them) and each candidate's."""
        reference = self.executors[0]
        missing = [s for s in samples if s.id not in self._reference]
        if missing:
            reference.submit(missing)
        for ex in candidates:
            ex.submit(samples)
        if missing:
            for sample, outcome in zip(missing, reference.collect()):
                self._reference[sample.id] = outcome
        outs = [ex.collect() for ex in candidates]
        return [self._reference[s.id] for s in samples], outs

    def _compare(self, samples: list[Sample], candidates: Sequence, fields: list[dict] | None = None,
                 keep: bool = True) -> list[list[bool]]:
        """Count the samples; ``[candidate][sample] -> differs``. Findings are kept when ``keep``."""
        ref_out, outs = self._encode(samples, candidates)
        sides = [self.sides[0]] + [s for s in self.sides[1:] if s.spec in {c.spec for c in candidates}]
        delta, findings = compare_batch(samples, [ref_out, *outs], sides, self.source)
        self.result.counts.add(delta)
        if keep:
            where = {id(s): i for i, s in enumerate(samples)}  # by identity: a finding carries its sample
            for finding in self.fresh.confirm(findings):
                extra = fields[where[id(finding.sample)]] if fields else {}
                finding.fields["length"] = {**extra, "family": self.family.name}
                self.result.findings.append(finding)
        return [[is_ids(r) and not agree(r, o) for r, o in zip(ref_out, out)] for out in outs]

    def _sample(self, n: int) -> Sample:
        return Sample.plain(f"{self.family.name}@{n}", self.family.text(n))

    # --- the search -------------------------------------------------------------------------
    def run(self) -> FamilyResult:
        grow_points = lengths(self.max_chars)
        open_ = list(self.executors[1:])
        previous = 0
        for n in grow_points:
            if not open_:
                break
            sample = self._sample(n)
            ref_out, _ = self._encode([sample], [])
            if not is_ids(ref_out[0]):
                for ex in open_:
                    self.result.candidates[ex.spec].reference_failed_at = n
                self.result.counts.samples += 1
                break
            differs = self._compare([sample], open_, keep=False)
            still = []
            for ex, (diff,) in zip(open_, differs):
                st = self.result.candidates[ex.spec]
                if diff:
                    st.first_divergent = self._first_divergent(ex, previous, n)
                    self._pattern(ex, st)
                    self._report(ex, st.first_divergent)
                    key = (ex.spec, st.first_divergent)
                    if key in self.probed:
                        st.probed_by = self.probed[key]
                    else:
                        self.probed[key] = st.probed_by = self.family.name
                        self._probe_cut(ex, st)
                else:
                    st.agrees_up_to = n
                    still.append(ex)
            open_ = still
            previous = n
        return self.result

    def _scan(self, ex, lo: int, hi: int) -> list[int]:
        """The lengths from ``lo`` to ``hi`` (both included) that differ, encoded in batches."""
        found = []
        for start in range(lo, hi + 1, SCAN_BATCH):
            lengths_ = list(range(start, min(hi, start + SCAN_BATCH - 1) + 1))
            samples = [self._sample(n) for n in lengths_]
            (differs,) = self._compare(samples, [ex], keep=False)
            found += [n for n, d in zip(lengths_, differs) if d]
            for sample in samples:
                self._reference.pop(sample.id, None)  # scanned once: not kept
        return found

    def _first_divergent(self, ex, agreeing: int, differing: int) -> int:
        """Every length up to ``FULL_SCAN`` (below ``differing``) first; above it, bisect."""
        dense = min(differing - 1, FULL_SCAN)
        if dense >= 1:
            found = self._scan(ex, 1, dense)
            if found:
                self.result.candidates[ex.spec].agrees_up_to = found[0] - 1
                return found[0]
            agreeing = max(agreeing, dense)
        return self._bisect(ex, agreeing, differing)

    def _pattern(self, ex, st: CandidateLength) -> None:
        """How the ``PATTERN_SPAN`` lengths from ``T`` fare: all differ, or on and off."""
        start = st.first_divergent
        span = PATTERN_SPAN if start <= LONG else SCAN_LONG  # each length of a long one is a large encode
        stop = min(self.max_chars, start + span - 1)
        found = self._scan(ex, start, stop)
        tried = stop - start + 1
        st.differing_after = [len(found), tried]
        st.pattern = "every length" if len(found) == tried else "on and off"

    def _differs(self, ex, n: int) -> bool:
        sample = self._sample(n)
        (diff,) = self._compare([sample], [ex], keep=False)[0]
        self._reference.pop(sample.id, None)  # a bisection never revisits a length: not kept
        return diff

    def _bisect(self, ex, agreeing: int, differing: int) -> int:
        lo, hi = agreeing, differing  # lo agrees (0: nothing), hi differs
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._differs(ex, mid):
                hi = mid
            else:
                lo = mid
        # scan back a window at a time (one call per window): an aligned midpoint may have agreed
        # although the divergence starts below it. While a window finds an earlier length, the
        # window below it is scanned too, down to the agreeing bound -- within SCAN_BACK_CHARS;
        # past it the first length is reported as not exact rather than scanned for hours.
        st = self.result.candidates[ex.spec]
        spent = 0
        while hi - 1 > agreeing:
            window = SCAN if hi <= LONG else SCAN_LONG
            start = max(agreeing + 1, hi - window)
            found = self._scan(ex, start, hi - 1)
            spent += sum(range(start, hi))
            if not found:
                break
            hi = found[0]
            if spent >= SCAN_BACK_CHARS and hi - 1 > agreeing:
                st.first_exact = False
                break
        if st.first_exact:
            st.agrees_up_to = max(st.agrees_up_to, hi - 1)
        return hi

    def _report(self, ex, n: int) -> None:
        """The finding at the first divergent length, with its run-length form."""
        self._compare([self._sample(n)], [ex],
                      fields=[{"length": n, "runs": self.family.runs(n), "threshold": n, "phase": "first-divergent"}])

    def _probe_cut(self, ex, st: CandidateLength) -> None:
        total = st.first_divergent
        if total < 8:
            return
        samples, fields = [], []
        for length in (total, total - 1):  # at T the plain run differs, at T - 1 it agrees
            base = self.family.text(length)
            last = length - 1
            for cp in SEPARATING:
                probe = chr(cp)
                spots = [[last + off] for off in OFFSETS] if length <= PER_POSITION_MAX else \
                    [[last + off for off in OFFSETS]]
                for spot in spots:
                    text = base[:spot[0]] + probe * len(spot) + base[spot[-1] + 1:]
                    samples.append(Sample.plain(f"{self.family.name}@{length}/U+{cp:04X}@{spot[0]}", text))
                    fields.append({"length": length, "threshold": total, "phase": "cut-probe",
                                   "probe": f"U+{cp:04X}", "at": spot[0], "width": len(spot),
                                   "runs": _probe_runs(self.family, spot, probe, length)})
        found_before = len(self.result.findings)
        for i in range(0, len(samples), 16):
            differs = self._compare(samples[i:i + 16], [ex], fields[i:i + 16])
            st.probes += len(samples[i:i + 16])
            st.probes_differing += sum(differs[0])
            for s in samples[i:i + 16]:
                self._reference.pop(s.id, None)  # probes are not revisited
        kept = self.result.findings[:found_before] + self.result.findings[found_before:][:MAX_PROBE_FINDINGS]
        st.probe_findings_dropped += len(self.result.findings) - len(kept)
        self.result.findings = kept


def _probe_runs(family: Family, spot: list[int], probe: str, total: int) -> list[list]:
    """The run-length form of a cut probe: the family up to the probe, the probe, the rest."""
    from verify.run_length import to_runs

    before = family.runs(spot[0]) if family.kind != "separator" else to_runs(family.text(spot[0]))
    after_len = total - spot[-1] - 1
    after_text = family.text(spot[-1] + 1 + after_len)[spot[-1] + 1:]
    return before + [[probe, len(spot)]] + to_runs(after_text)


def search_group(families: Sequence[Family], executors: Sequence, *, max_chars: int,
                 fresh: FreshCheck | None = None) -> list[FamilyResult]:
    """Every family of a shard, in order, sharing which thresholds were probed (and the fresh check)."""
    probed: dict[tuple[str, int], str] = {}
    fresh = fresh or FreshCheck(executors)
    return [FamilySearch(f, executors, max_chars=max_chars, probed=probed, fresh=fresh).run() for f in families]
