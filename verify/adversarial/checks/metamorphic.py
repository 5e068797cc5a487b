"""Metamorphic checks: properties an engine must have whatever the right answer is.

Each sample is checked against the engine itself, through two executors of the same
spec (``fresh`` and ``warm``, started by two ``EnginePool``s so each has its own engine),
and -- when there is one -- against a trusted ``reference``:

  reference  the engine's ids on a fresh instance are the reference's (a finding of the
             engine against the reference: triage minimises it like any other)
  repeat     the same input encoded twice by the long-lived engine gives the same ids
  history    the fresh engine and one warmed on other text (``WARMUP_TEXTS``, then
             the batch in reverse order) give the same ids: no hidden state
  batch      one call with the whole batch gives each sample's single-call ids
  threads    the batch encoded from 4 threads at once inside the engine's process
             (``Executor.encode_concurrent``) gives what one batch call gave
  roundtrip  for byte-level engines that declare ``capabilities.decode``: the
             concatenated ``token_bytes`` of the ids are the input's UTF-8
  sessions   for stateful engines (``capabilities.sessions``): different append
             scripts, a short and a long prefix, and a resumed session all give the
             from-scratch ids (``verify.adversarial.checks.sessions``)
  api        every other production entry point the engine declares
             (``capabilities.entry_points``: its library's single, batch, segments or
             file call) gives the baseline's ids, the whole batch in one call through
             it: ``entries`` are executors of ``SPEC?entry=NAME`` (``verify check``
             plans them, ``verify.engines.vocab_loading.entry_specs``); a finding names
             the entry point's spec as its ``engine`` and the checked spec as its
             ``reference``, and both entry points (``entry_point``, ``default_entry_point``)
  stress     not per corpus batch: the serving shapes (a batch of 10^4-10^5 short samples
             in one call, inputs across the 25,000 / 400,000-character chunking thresholds),
             run once by ``verify.adversarial.checks.stress`` with this checker's counts

The baseline of a sample is its single-sample encode on a *fresh* instance
(``verify.executors.fresh``): one new instance per batch of samples, so what the long-lived
engines saw before can never poison it (without a fresh instance: the long-lived engine's
first encode, and the checker says so in its notes). Agreement is ``verify.outcome.agree``.
Each violation is one finding (kind ``ids``, with a ``check`` field naming the property and
``detail=check``, so two checks failing on one input are two finding keys; ``engine`` and
``reference`` are both the engine's spec, except for the ``reference`` check and the stress
phases' findings against the reference). An engine that returns a ``Failure`` gives an
``error``/``crash``/``timeout`` finding with ``check``. Every finding against the reference
runs again alone on a fresh engine before it is written (``verify.fresh_check``): one that
passes there keeps the calls that led to it. Every sample also ends in one
``verify.counts`` state (``tally``): verified, diverged, or the worst failure.

Engines that do not honour ``allow_special`` get their samples as plain text
(every segment ``allow_special=False``): the properties do not need special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from verify.token_diff import char_offset
from verify.comparison import sample_size
from verify.counts import Counts, worst
from verify.engines.base import FINGERPRINT_PROBES
from verify.engines.traits import is_byte_level
from verify.executors.base import Executor
from verify.findings import Finding, FindingWriter, bad_input_record, describe_divergence, describe_failure
from verify.fresh_check import FreshCheck
from verify.outcome import Failure, Outcome, Skipped, agree, is_ids
from verify.batches import batched
from verify.sample import BadRecord, Sample, Segment

CHECKS = ("reference", "repeat", "history", "batch", "threads", "roundtrip", "sessions", "api", "stress")
THREADS = 4

# Text the warmed engine sees before the corpus: long runs, mixed scripts, special-token
# look-alikes, control characters -- whatever might leave a cache, buffer or mode behind.
WARMUP_TEXTS: tuple[str, ...] = FINGERPRINT_PROBES + (
    "a" * 5000,
    " " * 3000 + "x",
    "\t" * 700 + "\n" * 300,
    "1234567890" * 400,
    "!?.,-_" * 300,
    "日本語" * 1500,
    "<|endoftext|>" * 50,
    "\u180e \u200b\ufeff\u2028\u0085 \x00\x1f" * 40,
    "The quick brown fox jumps over the lazy dog. " * 200,
)


@dataclass
class CheckCounts:
    """Per property: how often it was checked and violated (``OUT/check.json``)."""

    samples: int = 0
    chars: int = 0
    violations: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CHECKS})
    checked: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CHECKS})
    errors: int = 0  # failure findings (error, crash, timeout)

    @property
    def total_violations(self) -> int:
        return sum(self.violations.values())

    def as_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "chars": self.chars, "checked": dict(self.checked),
                "violations": dict(self.violations), "errors": self.errors}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "CheckCounts":
        counts = cls(samples=int(doc.get("samples", 0)), chars=int(doc.get("chars", 0)),
                     errors=int(doc.get("errors", 0)))
        for name in ("checked", "violations"):
            mine = getattr(counts, name)
            for check, n in (doc.get(name) or {}).items():
                mine[check] = mine.get(check, 0) + int(n)
        return counts

    def add(self, other: "CheckCounts") -> "CheckCounts":
        """Counts of shards merge by addition (``verify check`` on the pipeline)."""
        self.samples += other.samples
        self.chars += other.chars
        self.errors += other.errors
        for mine, theirs in ((self.checked, other.checked), (self.violations, other.violations)):
            for check, n in theirs.items():
                mine[check] = mine.get(check, 0) + n
        return self


def _plain(sample: Sample) -> Sample:
    return Sample(sample.id, tuple(Segment(s.text, False) for s in sample.segments))


class MetamorphicChecker:
    """Runs the checks on batches of samples with two executors of one engine spec
    (``fresh`` and ``warm``, each with its own engine) and writes findings.

    ``writer``: anything with ``FindingWriter``'s ``write(finding)`` and ``write_record(record)``
    (a shard's result on the pipeline); without one the records are kept in ``findings``.
    ``warmed``: the warm engine has seen ``WARMUP_TEXTS`` already (once per worker on the
    pipeline); ``warmed`` after the run says whether it has now. ``entries``: the ``api``
    check's executors, by entry point name; ``default_entry``: the one ``fresh`` drives."""

    def __init__(self, fresh: Executor, warm: Executor, writer: FindingWriter | None = None,
                 source: str | None = None, checks: Sequence[str] = CHECKS, threads: int = THREADS,
                 roundtrip: bool | None = None, on_finding: Callable[[dict], None] | None = None,
                 warmed: bool = False, entries: dict[str, Executor] | None = None,
                 default_entry: str | None = None, reference: Executor | None = None,
                 fresh_check: FreshCheck | None = None):
        self.fresh, self.warm, self.reference = fresh, warm, reference
        self.entries = dict(entries or {})
        self.default_entry = default_entry
        self.spec = fresh.spec
        self.writer = writer
        self.source = source
        self.checks = tuple(checks)
        self.threads = threads
        self.roundtrip = is_byte_level(fresh) if roundtrip is None else roundtrip
        self.counts = CheckCounts()
        self.tally = Counts()  # one state per sample, bad records, as every command counts them
        self.tally.engine(self.spec)
        self.findings: list[dict] = []  # only without a writer: a writer holds them (memory per shard)
        self.on_finding = on_finding
        self._warmed = warmed
        self._states: dict[int, str] = {}  # id(sample) -> its worst state so far, within one batch
        engines = [fresh, *self.entries.values(), *([reference] if reference is not None else [])]
        self.fresh_check = fresh_check or FreshCheck(engines, reference=reference)
        self.notes: list[str] = []

    # --- findings and states ------------------------------------------------
    def _record(self, record: dict) -> None:
        if self.writer is None:
            self.findings.append(record)
        if self.on_finding:
            self.on_finding(record)

    def emit(self, sample: Sample, kind: str, check: str, fields: dict[str, Any], detail: str | None = None,
             engine: str | None = None, reference: str | None = None, expected: Any = None,
             via: Executor | None = None) -> None:
        """Write one finding of ``check`` (``detail`` tells two findings of one check on one input apart;
        ``engine``: the spec that gave it when not the checked one, which is then the reference;
        ``reference``: the trusted engine it was compared with, when it was). A finding against the
        reference, or with the ``expected`` ids given, is checked on a fresh engine first."""
        finding = Finding(engine or self.spec, reference or self.spec, sample, kind, self.source,
                          {"check": check, **fields}, detail=detail or check)
        if finding.engine != finding.reference or expected is not None:
            self.fresh_check.confirm([finding], None if expected is None else [expected], executor=via)
        self._record(self.writer.write(finding) if self.writer else finding.to_record()[0])

    def diverged(self, sample: Sample, check: str, expected: np.ndarray, actual: np.ndarray,
                 extra: dict[str, Any] | None = None, engine: Executor | None = None,
                 against: Executor | None = None) -> None:
        """A divergence of ``engine`` (the checked one by default) from ``expected``, the ids of
        ``against`` (the reference; None: the engine's own baseline): counted and written."""
        engine = engine or self.fresh
        self.counts.violations[check] = self.counts.violations.get(check, 0) + 1
        self.mark(sample, "diverged")
        fields = describe_divergence(sample, expected, actual, (against or engine).token_bytes(expected),
                                     engine.token_bytes(actual))
        self.emit(sample, "ids", check, {**fields, **(extra or {})}, engine=engine.spec,
                  reference=against.spec if against is not None else None,
                  expected=None if against is not None else expected)

    def begin(self) -> None:
        """Start a batch: every sample's state starts at verified."""
        self._states = {}

    def mark(self, sample: Sample, state: str) -> None:
        self._states[id(sample)] = worst(self._states.get(id(sample), "verified"), state)

    def _failed(self, sample: Sample, check: str, outcome: Outcome, where: str = "", engine: str | None = None,
                extra: dict[str, Any] | None = None) -> None:
        """An outcome that is not ids: a ``Failure`` is a finding; a ``Skipped`` is only counted."""
        if isinstance(outcome, Skipped):
            self.mark(sample, "skipped")
            return
        if where:
            outcome = Failure(outcome.kind, outcome.type, f"{where}: {outcome.message}")
        self.counts.errors += 1
        self.mark(sample, outcome.kind)
        self.emit(sample, outcome.kind, check, {**describe_failure(outcome), **(extra or {})}, engine=engine)

    def _check(self, sample: Sample, check: str, baseline: np.ndarray, other: Outcome,
               extra: dict[str, Any] | None = None, where: str = "", engine: str | None = None,
               via: Executor | None = None) -> None:
        """One check of ``other`` against the baseline: a difference or a failure is a finding
        (``engine``: the spec ``other`` came from, when not the checked one; ``via``: the executor
        whose calls led to it, when its history is kept -- the baseline then is the right ids)."""
        if not is_ids(other):
            self._failed(sample, check, other, where, engine, extra)
            return
        self.counts.checked[check] += 1
        if agree(baseline, other):
            return
        self.counts.violations[check] += 1
        self.mark(sample, "diverged")
        fields = describe_divergence(sample, baseline, other, self.fresh.token_bytes(baseline),
                                     self.fresh.token_bytes(other))
        self.emit(sample, "ids", check, {**fields, **(extra or {})}, engine=engine,
                  expected=baseline if via is not None else None, via=via)

    def bad_record(self, record: BadRecord) -> None:
        """A corpus record that is not a sample: counted and written as a ``bad-input`` finding."""
        self.tally.bad_records += 1
        doc = bad_input_record(self.source, record.position, record.reason, record.raw)
        self._record(self.writer.write_record(doc) if self.writer else doc)

    @property
    def warmed(self) -> bool:
        return self._warmed

    def warm_up(self) -> None:
        if self._warmed:
            return
        self._warmed = True
        # its outcomes are not the point: what it leaves behind in the warm engine is
        for i, text in enumerate(WARMUP_TEXTS):
            self.warm.encode([Sample.plain(f"warmup:{i}", text)])

    # --- the checks -----------------------------------------------------------
    def run(self, records: Iterable[Sample | BadRecord], batch_size: int = 32, source: str | None = None) -> None:
        """Every check over a stream of samples and bad records, in batches."""
        if source is not None:
            self.source = source
        for batch in batched(records, batch_size):
            for record in batch:
                if isinstance(record, BadRecord):
                    self.bad_record(record)
            samples = [r for r in batch if isinstance(r, Sample)]
            if samples:
                self.process(samples)

    def fresh_baselines(self, batch: Sequence[Sample]) -> list[Outcome]:
        """Each sample's single-call ids on one fresh instance (new for every batch: nothing the
        long-lived engines saw before reaches it); the long-lived engine's when there is none."""
        replayer = self.fresh.fresh_replayer()
        if replayer is None:
            note = "no fresh instance of the engine here: baselines are the long-lived engine's first encodes"
            if note not in self.notes:
                self.notes.append(note)
            return [self.fresh.encode([sample])[0] for sample in batch]
        out: list[Outcome] = []
        while len(out) < len(batch):  # after a call that crashed or hung, the rest on another fresh instance
            for r in replayer.replay([[s] for s in batch[len(out):]]):
                if isinstance(r, Failure) and r.type == "NotRun":
                    break
                out.append(r if isinstance(r, Failure) else r[0])
        return out

    def process(self, batch: Sequence[Sample]) -> None:
        if not self.fresh.capabilities.special_tokens:
            batch = [s if s.is_plain else _plain(s) for s in batch]
        batch = list(batch)
        self.begin()
        baselines = self.fresh_baselines(batch)
        valid: list[tuple[Sample, np.ndarray]] = []
        for sample, base in zip(batch, baselines):
            if is_ids(base):
                valid.append((sample, base))
            else:
                self._failed(sample, "baseline", base)

        if "reference" in self.checks and self.reference is not None and valid:
            self._against_reference(valid)

        if "repeat" in self.checks:  # the long-lived engine, twice: the second call gives the first's ids
            for sample, _ in valid:
                first = self.fresh.encode([sample])[0]
                if is_ids(first):
                    self._check(sample, "repeat", first, self.fresh.encode([sample])[0])
                else:
                    self._failed(sample, "repeat", first)

        samples = [s for s, _ in valid]
        batch_out: list[Outcome] | None = None
        if "batch" in self.checks and len(valid) > 1:
            batch_out = self.fresh.encode(samples)
            for (sample, base), out in zip(valid, batch_out):
                self._check(sample, "batch", base, out, {"batch_size": len(samples)}, f"batch of {len(samples)}")

        if "history" in self.checks:
            self.warm_up()
            for sample, base in reversed(valid):
                self._check(sample, "history", base, self.warm.encode([sample])[0],
                            {"warm": "engine warmed on WARMUP_TEXTS, batch in reverse order"}, via=self.warm)

        if "threads" in self.checks and valid:
            self._threads(samples, batch_out)

        if "roundtrip" in self.checks and self.roundtrip:
            for sample, base in valid:
                self._roundtrip(sample, base)

        if "sessions" in self.checks and self.fresh.capabilities.sessions:
            from verify.adversarial.checks.sessions import check_sessions

            for sample, base in valid:
                if sample.is_plain:
                    check_sessions(self, sample, base)

        if "api" in self.checks and valid:
            self._api(valid)
        self.count_states(batch, baselines)

    def _against_reference(self, valid: list[tuple[Sample, np.ndarray]]) -> None:
        """The fresh baselines against the reference's ids."""
        for (sample, base), ref in zip(valid, self.reference.encode([s for s, _ in valid])):
            if not is_ids(ref):
                continue  # the reference's own failure is no finding of the engine's
            self.counts.checked["reference"] += 1
            if not agree(ref, base):
                self.diverged(sample, "reference", ref, base, against=self.reference)

    def _api(self, valid: list[tuple[Sample, np.ndarray]]) -> None:
        """Every other entry point on the whole batch in one call, against each sample's baseline."""
        samples = [s for s, _ in valid]
        for name, executor in self.entries.items():
            extra = {"entry_point": name, "default_entry_point": self.default_entry, "batch_size": len(samples)}
            for (sample, base), out in zip(valid, executor.encode(samples)):
                self._check(sample, "api", base, out, extra, f"entry point {name}", engine=executor.spec)

    def _threads(self, samples: list[Sample], batch_out: list[Outcome] | None) -> None:
        """The same batch call from 1 thread, then from N threads at once on the one engine.
        One finding per sample (the first thread that differs or fails); every thread counts."""
        one = batch_out if batch_out is not None else self.fresh.encode(samples)
        per_thread = self.fresh.encode_concurrent(samples, self.threads)
        for i, sample in enumerate(samples):
            if not is_ids(one[i]):
                if batch_out is None:  # not yet reported by the batch check
                    self._failed(sample, "threads", one[i])
                continue
            differing: list[int] = []
            failed: tuple[int, Outcome] | None = None
            for t, outcomes in enumerate(per_thread):
                out = outcomes[i]
                if not is_ids(out):
                    failed = failed or (t, out)
                    continue
                self.counts.checked["threads"] += 1
                if not agree(one[i], out):
                    self.counts.violations["threads"] += 1
                    differing.append(t)
            if failed is not None:
                t, out = failed
                self._failed(sample, "threads", out, f"thread {t} of {self.threads}")
            if differing:
                t = differing[0]
                self.mark(sample, "diverged")
                out = per_thread[t][i]
                fields = describe_divergence(sample, one[i], out, self.fresh.token_bytes(one[i]),
                                             self.fresh.token_bytes(out))
                self.emit(sample, "ids", "threads",
                           {**fields, "threads": self.threads, "thread": t, "differing_threads": differing})

    def _roundtrip(self, sample: Sample, ids: np.ndarray) -> None:
        pieces = self.fresh.token_bytes(ids)
        if pieces is None:  # the engine declares decode, so its token_bytes failed
            self._failed(sample, "roundtrip", Failure("error", "DecodeFailed",
                                                      "token_bytes gave no pieces (the engine raised or its "
                                                      "worker died)"))
            return
        self.counts.checked["roundtrip"] += 1
        text_bytes = sample.text.encode("utf-8")
        decoded = b"".join(pieces)
        if decoded == text_bytes:
            return
        self.counts.violations["roundtrip"] += 1
        self.mark(sample, "diverged")
        # the first token whose bytes are not the input's bytes at its offset
        offset, index = 0, len(pieces)
        for i, piece in enumerate(pieces):
            if text_bytes[offset:offset + len(piece)] != piece:
                index = i
                break
            offset += len(piece)
        lo = max(0, index - 4)
        char_off = char_offset(text_bytes, min(offset, len(text_bytes)))
        text = sample.text
        self.emit(sample, "ids", "roundtrip", {
            "token_index": index,
            "byte_offset": offset,
            "char_offset": char_off,
            "offsets_exact": False,
            "context": {"before": text[max(0, char_off - 40):char_off], "after": text[char_off:char_off + 40]},
            "expected_len": int(ids.size),
            "actual_len": int(ids.size),
            "expected": {"start": lo, "ids": [int(i) for i in ids[lo:lo + 12]],
                         "bytes": text_bytes[offset:offset + 32].decode("utf-8", "backslashreplace")},
            "actual": {"start": lo, "ids": [int(i) for i in ids[lo:lo + 12]],
                       "pieces": [p.decode("utf-8", "backslashreplace") for p in pieces[lo:lo + 12]]},
            "decoded_bytes": len(decoded),
            "input_bytes": len(text_bytes),
        })

    def count_states(self, batch: list[Sample], baselines: list[Outcome]) -> None:
        per_engine = self.tally.engine(self.spec)
        for sample, base in zip(batch, baselines):
            chars, nbytes = sample_size(sample)
            self.counts.samples += 1
            self.counts.chars += chars
            self.tally.samples += 1
            self.tally.chars += chars
            self.tally.bytes += nbytes
            if is_ids(base):
                self.tally.tokens += int(base.size)
            state = self._states.get(id(sample), "verified")
            self.tally.states[state] += 1
            per_engine[state] += 1


def check_samples(fresh: Executor, warm: Executor, samples: Iterable[Sample | BadRecord],
                  writer: FindingWriter | None = None, source: str | None = None, batch_size: int = 32,
                  **kw) -> MetamorphicChecker:
    """Run every check over ``samples`` (bad records are reported, not checked) in batches;
    returns the checker (counts, tally, findings)."""
    checker = MetamorphicChecker(fresh, warm, writer, source, **kw)
    checker.run(samples, batch_size)
    return checker
