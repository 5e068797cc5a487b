"""The comparison step: outcomes of every engine on a batch -> counts and findings.

Pure apart from asking for token bytes (to name the pieces around a difference):
it reads outcomes the executors produced and returns a ``Counts`` delta and the
findings, so any number of workers can run it and their results merge by addition.
The first engine is the reference; its outcome may be a ledger ``Recorded`` digest where
every candidate matched it (``records_task`` re-encodes the reference wherever one did not),
and a candidate's may be that same ``Recorded`` where its engine's own process matched it.
Agreement is ``verify.outcome.agree``.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import is_
from typing import Callable, Sequence

import numpy as np

from verify.counts import Counts, worst
from verify.findings import Finding, describe_divergence, describe_failure
from verify.outcome import REFERENCE_FAILED, Failure, Recorded, Skipped, agree, gave_ids, is_ids, state_of
from verify.sample import Sample, utf8_len

TokenBytes = Callable[[np.ndarray], "list[bytes] | None"]


@dataclass(frozen=True)
class Side:
    """One engine as the comparison sees it: its spec and how to spell its tokens."""

    spec: str
    token_bytes: TokenBytes


class TokenPieces(Sequence[bytes]):
    """The bytes of each token of one id array, read from a ``CachedTokenBytes``: a sequence
    (``len``, indexing, slicing) that builds no list of every piece, and ``lengths``, each
    token's byte length as one array, for offsets (``verify.token_diff.token_byte_offsets``)."""

    def __init__(self, ids: np.ndarray, table: "CachedTokenBytes", lengths: np.ndarray):
        self.ids, self.table, self.lengths = ids, table, lengths

    def __len__(self) -> int:
        return int(self.ids.size)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.table.cache[int(i)] for i in self.ids[index]]
        return self.table.cache[int(self.ids[index])]


class CachedTokenBytes:
    """``executor.token_bytes`` for any ids, asking the executor only for ids not seen before: a
    corpus where every document diverges, 10^5 divergent samples or a 200,000-token input do
    not cost one pipe round trip (and one decode of every id) per sample, nor a Python step per
    token (which ids are new and each token's length are array operations). Token bytes belong
    to the vocabulary, so the cache is exact; it holds at most one entry per token of it."""

    def __init__(self, executor):
        self.executor = executor
        self.cache: dict[int, bytes] = {}
        self.lengths = np.full(0, -1, dtype=np.int64)  # byte length by id, -1 where not asked yet

    def __call__(self, ids: np.ndarray) -> TokenPieces | None:
        if not self.executor.capabilities.decode:
            return None  # what executor.token_bytes answers too, without building anything
        arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        if arr.size and int(arr.max()) >= self.lengths.size:
            grown = np.full(int(arr.max()) + 1, -1, dtype=np.int64)
            grown[:self.lengths.size] = self.lengths
            self.lengths = grown
        lengths = self.lengths[arr]
        unknown = lengths < 0
        if unknown.any():
            missing = np.unique(arr[unknown])
            pieces = self.executor.token_bytes(missing.astype(np.uint32))
            if pieces is None or len(pieces) != missing.size:
                return None
            self.cache.update(zip(missing.tolist(), pieces))
            self.lengths[missing] = [len(p) for p in pieces]
            lengths = self.lengths[arr]
        return TokenPieces(arr, self, lengths)


def sample_size(sample: Sample) -> tuple[int, int]:
    """(characters, UTF-8 bytes) of a sample."""
    segments = sample.segments
    if len(segments) == 1:  # the common sample: no generator
        text = segments[0].text
        return len(text), utf8_len(text)
    return (sum(len(s.text) for s in segments),
            sum(utf8_len(s.text) for s in segments))


def batch_size(samples: Sequence[Sample]) -> tuple[int, int]:
    """(characters, UTF-8 bytes) of a batch: ``sample_size`` summed, one-segment samples inline."""
    chars = nbytes = 0
    for sample in samples:
        segments = sample.segments
        if len(segments) == 1:
            text = segments[0].text
            n = len(text)
            chars += n
            nbytes += n if text.isascii() else utf8_len(text)
        else:
            c, b = sample_size(sample)
            chars += c
            nbytes += b
    return chars, nbytes


def all_agree(outcomes: Sequence[Sequence[object]]) -> bool:
    """Whether every engine gave ids for every sample and every candidate's equal the
    reference's: the lengths compared as one array, the ids as one buffer per engine (a few
    calls per batch instead of one comparison per sample and engine). A candidate's outcome
    that *is* the reference's (a ledger stand-in, or the ``Recorded`` entry its own process
    matched) agrees without a look at the ids."""
    reference = outcomes[0]
    if not all(map(gave_ids, reference)):
        return False
    for per_engine in outcomes[1:]:
        if all(map(is_, per_engine, reference)):  # a ledger run's common batch: every outcome the entry
            continue
        theirs, ours = [], []
        for a, b in zip(per_engine, reference):
            if a is b:
                continue
            if is_ids(a) and is_ids(b):
                theirs.append(a)
                ours.append(b)
            elif not (gave_ids(a) and agree(a, b)):  # a ``Recorded`` on one side (an audited hit): its digest
                return False
        if not theirs:
            continue
        sizes = np.fromiter((ids.size for ids in theirs), dtype=np.int64, count=len(theirs))
        lengths = np.fromiter((ids.size for ids in ours), dtype=np.int64, count=len(ours))
        if not np.array_equal(sizes, lengths) or not np.array_equal(np.concatenate(theirs), np.concatenate(ours)):
            return False
    return True


def token_count(outcome: object) -> int:
    """The number of ids of an outcome that gave ids (an array, or the ledger's ``Recorded``)."""
    return int(outcome.size) if is_ids(outcome) else outcome.length


def compare_batch(samples: Sequence[Sample], outcomes: Sequence[Sequence[object]], sides: Sequence[Side],
                  source: str | None = None) -> tuple[Counts, list[Finding]]:
    """``outcomes[e][i]`` is engine ``e``'s outcome on ``samples[i]``; ``sides[0]`` is the reference."""
    counts = Counts()
    for side in sides:
        counts.engine(side.spec)
    if samples and all_agree(outcomes):  # the common batch: counted in bulk, exactly as below would
        n = len(samples)
        counts.samples = n
        counts.chars, counts.bytes = batch_size(samples)
        counts.tokens = sum(map(token_count, outcomes[0]))
        counts.states["verified"] = n
        for side in sides:
            counts.engine(side.spec)["verified"] = n
        return counts, []
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
        if gave_ids(ref):
            counts.tokens += token_count(ref)
        sample_state = ref_state
        ref_pieces = None
        for side, per_engine in zip(sides[1:], outcomes[1:]):
            out = per_engine[i]
            if gave_ids(out) and gave_ids(ref):
                if agree(ref, out):
                    state = "verified"
                elif isinstance(ref, Recorded) or isinstance(out, Recorded):
                    # the caller resolves every mismatch with a recorded entry to fresh ids first
                    raise ValueError("a candidate differs from a recorded reference: re-encode the reference first")
                else:
                    state = "diverged"
                    if ref_pieces is None:
                        ref_pieces = reference.token_bytes(ref)
                    fields = describe_divergence(sample, ref, out, ref_pieces, side.token_bytes(out))
                    findings.append(Finding(side.spec, reference.spec, sample, "ids", source, fields))
            elif gave_ids(out):
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
