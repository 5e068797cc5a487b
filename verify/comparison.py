"""The comparison step: outcomes of every engine on a batch -> counts and findings.

Pure apart from asking for token bytes (to name the pieces around a difference):
it reads outcomes the executors produced and returns a ``Counts`` delta and the
findings, so any number of workers can run it and their results merge by addition.
The first engine is the reference; its outcome may be a ledger ``Recorded`` digest where
every candidate matched it (``shard_task`` re-encodes the reference wherever one did not).
Agreement is ``verify.outcome.agree``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from verify.counts import Counts, worst
from verify.findings import Finding, describe_divergence, describe_failure
from verify.outcome import REFERENCE_FAILED, Failure, Recorded, Skipped, agree, gave_ids, is_ids, state_of
from verify.sample import Sample

TokenBytes = Callable[[np.ndarray], "list[bytes] | None"]


@dataclass(frozen=True)
class Side:
    """One engine as the comparison sees it: its spec and how to spell its tokens."""

    spec: str
    token_bytes: TokenBytes


def sample_size(sample: Sample) -> tuple[int, int]:
    """(characters, UTF-8 bytes) of a sample."""
    return (sum(len(s.text) for s in sample.segments),
            sum(len(s.text.encode("utf-8")) for s in sample.segments))


def compare_batch(samples: Sequence[Sample], outcomes: Sequence[Sequence[object]], sides: Sequence[Side],
                  source: str | None = None) -> tuple[Counts, list[Finding]]:
    """``outcomes[e][i]`` is engine ``e``'s outcome on ``samples[i]``; ``sides[0]`` is the reference."""
    counts = Counts()
    for side in sides:
        counts.engine(side.spec)
    findings: list[Finding] = []
    reference = sides[0]
    for i, sample in enumerate(samples):
        ref = outcomes[0][i]
        chars, nbytes = sample_size(sample)
        counts.samples += 1
        counts.chars += chars
        counts.bytes += nbytes
        ref_state = state_of(ref)
        counts.engine(reference.spec)[ref_state] += 1
        if isinstance(ref, Failure):
            findings.append(Finding(reference.spec, reference.spec, sample, ref.kind, source, describe_failure(ref)))
        if is_ids(ref):
            counts.tokens += int(ref.size)
        elif isinstance(ref, Recorded):
            counts.tokens += ref.length
        sample_state = ref_state
        ref_pieces = None
        for side, per_engine in zip(sides[1:], outcomes[1:]):
            out = per_engine[i]
            if is_ids(out) and gave_ids(ref):
                if agree(ref, out):
                    state = "verified"
                elif isinstance(ref, Recorded):  # the caller resolves every mismatch to fresh ids first
                    raise ValueError("a candidate differs from a recorded reference: re-encode the reference first")
                else:
                    state = "diverged"
                    if ref_pieces is None:
                        ref_pieces = reference.token_bytes(ref)
                    fields = describe_divergence(sample, ref, out, ref_pieces, side.token_bytes(out))
                    findings.append(Finding(side.spec, reference.spec, sample, "ids", source, fields))
            elif is_ids(out):
                state = "skipped"  # nothing to compare against: the reference failed or was not asked
                counts.skip_reason(side.spec, ref.reason if isinstance(ref, Skipped) else REFERENCE_FAILED)
            else:
                state = state_of(out)
                if isinstance(out, Skipped):
                    counts.skip_reason(side.spec, out.reason)
                if isinstance(out, Failure):
                    findings.append(Finding(side.spec, reference.spec, sample, out.kind, source,
                                            describe_failure(out)))
            counts.engine(side.spec)[state] += 1
            sample_state = worst(sample_state, state)
        counts.states[sample_state] += 1
    counts.findings = len(findings)
    return counts, findings
