"""Metamorphic checks: properties an engine must have whatever the right answer is.

For an engine without a trusted reference (or to localise a bug that the
reference comparison only shows as "different ids"), each sample is checked
against the engine itself:

  repeat     the same input encoded twice gives the same ids
  history    a fresh engine and one warmed on other text (``WARMUP_TEXTS``, then
             the batch in reverse order) give the same ids: no hidden state
  batch      one call with the whole batch gives each sample's single-call ids
  threads    the batch encoded from 4 Python threads at once (each thread the
             whole batch, on one shared engine) gives what one thread's batch call gave
  roundtrip  for byte-level engines that declare ``capabilities.decode``: the
             concatenated ``token_bytes`` of the ids are the input's UTF-8

The baseline of a sample is its first single-sample encode on the fresh engine.
Each violation is one finding (``verify.divergence/1``, kind ``ids``, with a
``check`` field naming the property; ``engine`` and ``reference`` are both the
engine's spec). An engine that raises gives an ``error`` finding with ``check``.

Engines that do not honour ``allow_special`` get their samples as plain text
(every segment ``allow_special=False``): the properties do not need special tokens.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from verify.compare import char_offset
from verify.engines.base import FINGERPRINT_PROBES, as_token_array
from verify.findings import Failure, Finding, FindingWriter, describe_divergence, describe_failure
from verify.executors.local import failure_from
from verify.sample import Sample, Segment

_PASS_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit)

CHECKS = ("repeat", "history", "batch", "threads", "roundtrip")
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
    samples: int = 0
    chars: int = 0
    violations: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CHECKS})
    checked: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CHECKS})
    errors: int = 0

    @property
    def total_violations(self) -> int:
        return sum(self.violations.values())

    @property
    def clean(self) -> bool:
        return self.total_violations == 0 and self.errors == 0 and self.samples > 0

    def as_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "chars": self.chars, "checked": dict(self.checked),
                "violations": dict(self.violations), "errors": self.errors}


def is_byte_level(engine) -> bool:
    """Byte-level BPE engines decode to exactly the input bytes; SentencePiece-style ones need not."""
    if not getattr(engine.capabilities, "decode", False):
        return False
    from verify.vocab.known import KNOWN_VOCABS

    known = KNOWN_VOCABS.get(getattr(engine, "vocab_name", None) or "")
    return getattr(known, "kind", None) != "sentencepiece"


def _plain(sample: Sample) -> Sample:
    return Sample(sample.id, tuple(Segment(s.text, False) for s in sample.segments))


class MetamorphicChecker:
    """Runs the checks on batches of samples with two instances of one engine
    (``fresh`` and ``warm``, built separately) and writes findings."""

    def __init__(self, fresh, warm, writer: FindingWriter | None = None, source: str | None = None,
                 checks: Sequence[str] = CHECKS, threads: int = THREADS,
                 roundtrip: bool | None = None, on_finding: Callable[[dict], None] | None = None):
        self.fresh, self.warm = fresh, warm
        self.spec = fresh.spec
        self.writer = writer
        self.source = source
        self.checks = tuple(checks)
        self.threads = threads
        self.roundtrip = is_byte_level(fresh) if roundtrip is None else roundtrip
        self.counts = CheckCounts()
        self.findings: list[dict] = []
        self.on_finding = on_finding
        self._warmed = False

    # --- helpers ------------------------------------------------------------
    def _emit(self, sample: Sample, kind: str, check: str, fields: dict[str, Any]) -> None:
        finding = Finding(self.spec, self.spec, sample, kind, self.source, {"check": check, **fields})
        record = self.writer.write(finding) if self.writer else finding.to_record(None)
        self.findings.append(record)
        if self.on_finding:
            self.on_finding(record)

    def _error(self, sample: Sample, check: str, failure: Failure) -> None:
        self.counts.errors += 1
        self._emit(sample, "error", check, describe_failure(failure))

    def _encode(self, engine, samples: Sequence[Sample]) -> list[np.ndarray] | Failure:
        try:
            out = engine.encode_batch(list(samples))
            if len(out) != len(samples):
                raise ValueError(f"engine returned {len(out)} results for {len(samples)} samples")
            return [as_token_array(ids) for ids in out]
        except _PASS_THROUGH:
            raise
        except BaseException as exc:  # includes pyo3's PanicException, which is not an Exception
            return failure_from(exc)

    def _pieces(self, ids: np.ndarray) -> list[bytes] | None:
        if not getattr(self.fresh.capabilities, "decode", False):
            return None
        try:
            return self.fresh.token_bytes(ids)
        except _PASS_THROUGH:
            raise
        except BaseException:
            return None

    def _compare(self, sample: Sample, check: str, baseline: np.ndarray, other: np.ndarray,
                 extra: dict[str, Any] | None = None) -> None:
        self.counts.checked[check] += 1
        if baseline.size == other.size and np.array_equal(baseline, other):
            return
        self.counts.violations[check] += 1
        fields = describe_divergence(sample, baseline, other, self._pieces(baseline), self._pieces(other))
        self._emit(sample, "ids", check, {**fields, **(extra or {})})

    def warm_up(self) -> None:
        if self._warmed:
            return
        self._warmed = True
        for i, text in enumerate(WARMUP_TEXTS):
            self._encode(self.warm, [Sample.plain(f"warmup:{i}", text)])  # its errors are not the point

    # --- the checks -----------------------------------------------------------
    def process(self, batch: Sequence[Sample]) -> None:
        if not self.fresh.capabilities.special_tokens:
            batch = [s if s.is_plain else _plain(s) for s in batch]
        batch = list(batch)
        self.counts.samples += len(batch)
        self.counts.chars += sum(len(s.text) for s in batch)

        baselines: list[np.ndarray | None] = []
        for sample in batch:
            out = self._encode(self.fresh, [sample])
            if isinstance(out, Failure):
                self._error(sample, "baseline", out)
                baselines.append(None)
            else:
                baselines.append(out[0])
        valid = [(s, b) for s, b in zip(batch, baselines) if b is not None]

        if "repeat" in self.checks:
            for sample, base in valid:
                out = self._encode(self.fresh, [sample])
                if isinstance(out, Failure):
                    self._error(sample, "repeat", out)
                else:
                    self._compare(sample, "repeat", base, out[0])

        samples = [s for s, _ in valid]
        batch_out: list[np.ndarray] | Failure | None = None
        if "batch" in self.checks and len(valid) > 1:
            out = batch_out = self._encode(self.fresh, samples)
            if isinstance(out, Failure):
                self._error(samples[0], "batch", Failure(out.kind, out.type, f"batch of {len(samples)}: {out.message}"))
            else:
                for (sample, base), ids in zip(valid, out):
                    self._compare(sample, "batch", base, ids, {"batch_size": len(samples)})

        if "history" in self.checks:
            self.warm_up()
            for sample, base in reversed(valid):
                out = self._encode(self.warm, [sample])
                if isinstance(out, Failure):
                    self._error(sample, "history", out)
                else:
                    self._compare(sample, "history", base, out[0],
                                  {"history": "engine warmed on WARMUP_TEXTS, batch in reverse order"})

        if "threads" in self.checks and valid:
            # the same batch call from 1 thread, then from N threads at once on the one engine
            one = batch_out if batch_out is not None else self._encode(self.fresh, samples)
            if isinstance(one, Failure):
                if batch_out is None:
                    self._error(samples[0], "threads", one)
            else:
                with ThreadPoolExecutor(max_workers=self.threads) as pool:
                    results = list(pool.map(lambda _: self._encode(self.fresh, samples), range(self.threads)))
                for t, out in enumerate(results):
                    if isinstance(out, Failure):
                        self._error(samples[0], "threads", Failure(out.kind, out.type, f"thread {t}: {out.message}"))
                        continue
                    for sample, base, ids in zip(samples, one, out):
                        self._compare(sample, "threads", base, ids, {"threads": self.threads, "thread": t})

        if "roundtrip" in self.checks and self.roundtrip:
            for sample, base in valid:
                self._roundtrip(sample, base)

    def _roundtrip(self, sample: Sample, ids: np.ndarray) -> None:
        self.counts.checked["roundtrip"] += 1
        try:
            pieces = self.fresh.token_bytes(ids)
        except _PASS_THROUGH:
            raise
        except BaseException as exc:
            self._error(sample, "roundtrip", failure_from(exc))
            return
        text_bytes = sample.text.encode("utf-8")
        decoded = b"".join(pieces)
        if decoded == text_bytes:
            return
        self.counts.violations["roundtrip"] += 1
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
        self._emit(sample, "ids", "roundtrip", {
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


def check_samples(fresh, warm, samples: Iterable[Sample], writer: FindingWriter | None = None,
                  source: str | None = None, batch_size: int = 32, **kw) -> MetamorphicChecker:
    """Run every check over ``samples`` in batches; returns the checker (counts, findings)."""
    from verify.runner import batched

    checker = MetamorphicChecker(fresh, warm, writer, source, **kw)
    for batch in batched(samples, batch_size):
        checker.process(batch)
    return checker
