"""The run loop: samples -> engines -> comparison -> findings.

Every sample ends in exactly one state, counted once:
  verified  every engine returned ids and every candidate equals the reference
  diverged  some candidate returned different ids
  error / crash / timeout   some engine returned no ids (worst one counts)
  skipped   an engine declared it cannot handle the sample (e.g. special
            segments for an engine without special-token support); never verified
Per-engine tallies are kept beside the per-sample ones.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from verify.findings import Failure, Finding, FindingWriter, describe_divergence, describe_failure
from verify.sample import Sample

STATES = ("verified", "diverged", "error", "crash", "timeout", "skipped")
# When several things go wrong on one sample, the worst decides its state.
SEVERITY = {"crash": 5, "timeout": 4, "error": 3, "diverged": 2, "skipped": 1, "verified": 0}

SKIPPED = "skipped"


@dataclass
class Counts:
    samples: int = 0
    chars: int = 0
    bytes: int = 0
    tokens: int = 0
    states: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    per_engine: dict[str, dict[str, int]] = field(default_factory=dict)
    findings: int = 0

    def as_dict(self) -> dict:
        return {"samples": self.samples, "chars": self.chars, "bytes": self.bytes, "tokens": self.tokens,
                **self.states, "findings": self.findings, "per_engine": self.per_engine}

    @property
    def all_verified(self) -> bool:
        return self.samples > 0 and self.states["verified"] == self.samples


def batched(samples: Iterable[Sample], max_samples: int = 64, max_chars: int = 1 << 20) -> Iterator[list[Sample]]:
    batch: list[Sample] = []
    chars = 0
    for sample in samples:
        size = sum(len(s.text) for s in sample.segments)
        if batch and (len(batch) >= max_samples or chars + size > max_chars):
            yield batch
            batch, chars = [], 0
        batch.append(sample)
        chars += size
    if batch:
        yield batch


def needs_special(sample: Sample) -> bool:
    return any(s.allow_special for s in sample.segments)


class Run:
    """Compare candidates against a reference over a stream of batches.

    ``reference`` and ``candidates`` are executors (``verify.executors``)."""

    def __init__(self, reference, candidates: Sequence, writer: FindingWriter, source_name: str | None = None,
                 on_finding: Callable[[dict], None] | None = None):
        self.reference = reference
        self.candidates = list(candidates)
        self.writer = writer
        self.source_name = source_name
        self.on_finding = on_finding
        self.counts = Counts()
        for ex in [reference, *self.candidates]:
            self.counts.per_engine[ex.spec] = dict.fromkeys(STATES, 0)
        self.started = time.time()

    def process(self, batch: list[Sample]) -> None:
        executors = [self.reference, *self.candidates]
        runnable = [[i for i, s in enumerate(batch) if ex.capabilities.special_tokens or not needs_special(s)]
                    for ex in executors]
        # Submit to every engine first, then collect: isolated workers run in parallel.
        for ex, indices in zip(executors, runnable):
            if indices:
                ex.submit([batch[i] for i in indices])
        outcomes: list[list] = []
        for ex, indices in zip(executors, runnable):
            out: list = [SKIPPED] * len(batch)
            if indices:
                for i, result in zip(indices, ex.collect()):
                    out[i] = result
            outcomes.append(out)
        for i, sample in enumerate(batch):
            self._account(sample, outcomes[0][i], [o[i] for o in outcomes[1:]])

    def _account(self, sample: Sample, ref: object, cands: list) -> None:
        c = self.counts
        c.samples += 1
        nchars = sum(len(s.text) for s in sample.segments)
        c.chars += nchars
        c.bytes += sum(len(s.text.encode("utf-8")) for s in sample.segments)
        worst = "verified"
        ref_state = self._engine_state(self.reference, sample, ref)
        if isinstance(ref, np.ndarray):
            c.tokens += int(ref.size)
        worst = max(worst, ref_state, key=SEVERITY.__getitem__)
        ref_pieces = None
        for executor, out in zip(self.candidates, cands):
            if isinstance(out, np.ndarray) and isinstance(ref, np.ndarray):
                if out.shape == ref.shape and np.array_equal(out, ref):
                    state = "verified"
                else:
                    state = "diverged"
                    if ref_pieces is None:
                        ref_pieces = self.reference.token_bytes(ref)
                    fields = describe_divergence(sample, ref, out, ref_pieces, executor.token_bytes(out))
                    self._emit(Finding(executor.spec, self.reference.spec, sample, "ids", self.source_name, fields))
            elif isinstance(out, np.ndarray):
                state = SKIPPED  # nothing to compare against: the reference failed or skipped
            else:
                state = self._engine_state(executor, sample, out)
            c.per_engine[executor.spec][state] += 1
            worst = max(worst, state, key=SEVERITY.__getitem__)
        c.states[worst] += 1

    def _engine_state(self, executor, sample: Sample, out: object) -> str:
        """State of an outcome that is not compared (reference side, or a failure)."""
        if isinstance(out, Failure):
            self._emit(Finding(executor.spec, self.reference.spec, sample, out.kind, self.source_name,
                               describe_failure(out)))
            state = out.kind
        elif out is SKIPPED:
            state = SKIPPED
        else:
            state = "verified"
        if executor is self.reference:
            self.counts.per_engine[executor.spec][state] += 1
        return state

    def _emit(self, finding: Finding) -> None:
        record = self.writer.write(finding)
        self.counts.findings += 1
        if self.on_finding:
            self.on_finding(record)
