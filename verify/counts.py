"""Counts: how every sample of a run ended, overall and per engine, mergeable.

Every sample ends in exactly one state, counted once:
  verified  every engine returned ids and every candidate equals the reference
  diverged  some candidate returned different ids
  error / crash / timeout   some engine returned no ids (the worst one counts)
  skipped   an engine was not asked (it declares it cannot handle the sample), or
            the reference failed so there was nothing to compare with; never verified
A record the corpus could not turn into a sample (null text, broken JSON or UTF-8)
is not a sample: it is counted in ``bad_records`` and reported as a finding.
Why an engine skipped is tallied beside the state (``skip_reason``: per engine, reason
-> samples), so every report can say why and what to do; skips counted without a reason
show as not recorded (``verify.reports.skips``).
Counts of shards merge by addition (``add``), so any split of a corpus over
workers, machines or resumed sessions adds up to the same totals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class State(StrEnum):
    """How a sample (or one engine's answer for it) ended: the keys of ``Counts.states``. A ``str``,
    so the counts' JSON and the code that reads it back use the value itself."""

    VERIFIED = "verified"
    DIVERGED = "diverged"
    ERROR = "error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"


# plain values: they key the counts' dicts, which orjson writes (it takes no str subclass as a key)
STATES = tuple(state.value for state in State)
# When several things go wrong on one sample, the worst decides its state.
SEVERITY = {State.CRASH: 5, State.TIMEOUT: 4, State.ERROR: 3, State.DIVERGED: 2, State.SKIPPED: 1, State.VERIFIED: 0}

_SCALARS = ("samples", "chars", "bytes", "tokens", "findings", "bad_records")


def worst(*states: str) -> str:
    return max(states, key=SEVERITY.__getitem__)


@dataclass
class Counts:
    samples: int = 0
    chars: int = 0
    bytes: int = 0
    tokens: int = 0  # reference tokens
    findings: int = 0
    bad_records: int = 0
    states: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    per_engine: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped_reasons: dict[str, dict[str, int]] = field(default_factory=dict)  # per engine: reason -> samples

    def engine(self, spec: str) -> dict[str, int]:
        tally = self.per_engine.get(spec)
        if tally is None:
            tally = self.per_engine[spec] = dict.fromkeys(STATES, 0)
        return tally

    def skip_reason(self, spec: str, reason: str, n: int = 1) -> None:
        """Why ``spec`` skipped ``n`` samples; called beside counting them in its ``skipped`` state."""
        reasons = self.skipped_reasons.setdefault(spec, {})
        reasons[reason] = reasons.get(reason, 0) + n

    def add(self, other: "Counts") -> "Counts":
        for name in _SCALARS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for state, n in other.states.items():
            self.states[state] += n
        for spec, tally in other.per_engine.items():
            mine = self.engine(spec)
            for state, n in tally.items():
                mine[state] += n
        for spec, reasons in other.skipped_reasons.items():
            for reason, n in reasons.items():
                self.skip_reason(spec, reason, n)
        return self

    @property
    def all_verified(self) -> bool:
        return self.samples > 0 and self.states[State.VERIFIED] == self.samples and self.bad_records == 0

    def verified_or_skipped(self) -> bool:
        """Every sample verified or skipped (an engine could not take it), at least one verified,
        no bad record: what ``--allow-skipped`` (a gate's ``allow_skipped``) accepts."""
        return (self.samples > 0 and self.states[State.VERIFIED] > 0 and self.bad_records == 0
                and self.states[State.VERIFIED] + self.states[State.SKIPPED] == self.samples)

    @property
    def failing(self) -> int:
        return sum(self.states[s] for s in (State.DIVERGED, State.ERROR, State.CRASH, State.TIMEOUT))

    def as_dict(self) -> dict[str, Any]:
        doc = {**{name: getattr(self, name) for name in _SCALARS}, **self.states,
               "per_engine": {spec: dict(t) for spec, t in self.per_engine.items()}}
        if self.skipped_reasons:  # only when there is one: documents without skips keep their shape
            doc["skipped_reasons"] = {spec: dict(r) for spec, r in self.skipped_reasons.items()}
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "Counts":
        counts = cls(**{name: int(doc.get(name, 0)) for name in _SCALARS})
        counts.states = {s: int(doc.get(s, 0)) for s in STATES}
        counts.per_engine = {spec: {s: int(t.get(s, 0)) for s in STATES}
                             for spec, t in (doc.get("per_engine") or {}).items()}
        counts.skipped_reasons = {str(spec): {str(reason): int(n) for reason, n in reasons.items()}
                                  for spec, reasons in (doc.get("skipped_reasons") or {}).items()
                                  if isinstance(reasons, dict)}
        return counts
