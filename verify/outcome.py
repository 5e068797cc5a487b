"""What one engine did with one sample, and whether two such results agree.

An outcome is exactly one of
  ids       a 1-D uint32 NumPy array of token ids
  Recorded  what the reference gave this input before, from the ledger: the ids'
            digest and length (``verify.ledger``), standing in for the ids
  Failure   the engine returned no ids: ``error`` (it raised), ``crash`` (its worker
            died), ``timeout`` (it did not answer in time), with type and message
  Skipped   the engine was not asked, because it declares it cannot handle the
            sample (special-token segments for an engine without special tokens)

``agree(a, b)`` is the one definition of agreement used everywhere (the run loop,
triage, the Unicode sweep, metamorphic checks, regression replay): two id arrays
that are equal, or an id array whose digest and length are the recorded ones. A
failure or a skip never agrees with anything, not even with another failure:
where nothing was compared, nothing was verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Union

import numpy as np
from typing_extensions import TypedDict

from verify.keys import ids_digest



class FindingKind(StrEnum):
    """What a finding is (``kind`` of a ``verify.divergence/2`` record). A ``str``: records, keys
    and messages carry the value itself, and ``kind == "ids"`` still holds for a record read back."""

    IDS = "ids"  # different token ids
    ERROR = "error"  # the engine raised
    CRASH = "crash"  # its worker died
    TIMEOUT = "timeout"  # no answer within the deadline
    BAD_INPUT = "bad-input"  # a corpus record that never became a sample


# plain values: they key dicts that orjson writes, and orjson takes no str subclass as a key
FAILURE_KINDS = tuple(kind.value for kind in (FindingKind.ERROR, FindingKind.CRASH, FindingKind.TIMEOUT))


class ErrorInfo(TypedDict):
    """``error`` of a failure's record: the exception's type and (capped) message."""

    type: str
    message: str


@dataclass(frozen=True)
class Failure:
    """An engine that returned no ids for a sample."""

    kind: str  # one of FAILURE_KINDS
    type: str
    message: str

    def as_dict(self) -> ErrorInfo:
        return {"type": self.type, "message": self.message[:2000]}


@dataclass(frozen=True)
class Skipped:
    """The engine was not asked: it declares it cannot handle this sample."""

    reason: str


SKIPPED = Skipped("the engine does not honour allow_special and the sample has special-token segments")
# why a candidate's sample was skipped when the engine itself was not the reason (tallied in the counts)
REFERENCE_FAILED = "the reference gave no ids, so there was nothing to compare with (its failure is a finding)"
SESSION_ENDED = "its session ended at an earlier failure (that failure is a finding)"


@dataclass(slots=True)  # not frozen: one is made per ledger hit, and a frozen init costs three times as much
class Recorded:
    """The reference's ids for this input as the ledger recorded them: digest and length."""

    digest: str  # keys.ids_digest of the ids (hex)
    length: int

    def matches(self, ids: np.ndarray) -> bool:
        return ids.size == self.length and ids_digest(ids) == self.digest


Outcome = Union[np.ndarray, Failure, Skipped, Recorded]


def is_ids(outcome: object) -> bool:
    return isinstance(outcome, np.ndarray)


def agree(a: object, b: object) -> bool:
    """True only for two id arrays with the same length and the same ids (either may be the
    ``Recorded`` digest of the ids; both may be, where an engine's process answered that its ids
    have the recorded digest and length: ``ExecutorBase.submit``'s ``expected``)."""
    if isinstance(a, Recorded) and isinstance(b, Recorded):  # an engine's process matched the recorded digest
        return a.length == b.length and a.digest == b.digest
    if isinstance(a, Recorded) and isinstance(b, np.ndarray):
        return a.matches(b)
    if isinstance(b, Recorded) and isinstance(a, np.ndarray):
        return b.matches(a)
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
            and a.shape == b.shape and bool(np.array_equal(a, b)))


def differ(a: object, b: object) -> bool:
    """True for two id arrays that are not equal (a divergence, as opposed to a failure)."""
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and not agree(a, b)


def gave_ids(outcome: object) -> bool:
    """Ids, or the recorded digest of the reference's ids."""
    return isinstance(outcome, (np.ndarray, Recorded))


def state_of(outcome: object) -> str:
    """The per-engine state of an outcome that is not compared: verified (it gave ids),
    one of the failure kinds, or skipped."""
    if isinstance(outcome, Failure):
        return outcome.kind
    if isinstance(outcome, Skipped):
        return "skipped"
    return "verified"
