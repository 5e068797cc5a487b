"""The executor protocol: where an engine runs, seen the same way by every command.

An executor turns samples into one ``Outcome`` each (ids, ``Failure`` or
``Skipped``, see ``verify.outcome``), never an exception: an engine that raises,
crashes or hangs yields a ``Failure`` for the sample that caused it. Samples the
engine declares it cannot handle (``capabilities``) are ``Skipped`` without asking it.

``submit`` then ``collect`` lets several executors work on one batch at once;
``encode`` is the two in one. ``encode_concurrent`` runs the same batch from
several threads at once inside the engine's own process (the metamorphic
thread-safety check).

Sessions (engines with ``capabilities.sessions``, ``verify.engines.sessions``) live
inside the executor, named by a key the caller chooses: ``open_session(key, state)``,
``session_append(key, segments) -> SessionUpdate | Failure``, ``session_state(key)``,
``close_session(key)``. A session of an isolated engine lives in its worker; when the
worker dies, that append is a ``crash`` failure and every session it held is lost
(later calls on them fail with ``SessionLost``), while the executor goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

import numpy as np

from verify.engines.base import Capabilities, EngineIdentity
from verify.executors.call_log import CallLog
from verify.outcome import SKIPPED, Failure, Outcome, Recorded
from verify.sample import Sample, Segment

if TYPE_CHECKING:
    from verify.engines.sessions import SessionUpdate


@runtime_checkable
class Executor(Protocol):
    spec: str
    capabilities: Capabilities
    restarts: int  # worker restarts (crashes, hangs); 0 for in-process executors
    timeout_s: float | None  # how long a hang takes to be declared; None when it cannot be

    def submit(self, samples: Sequence[Sample], expected: Sequence[Recorded | None] | None = None) -> None: ...

    def collect(self) -> list[Outcome]: ...

    def encode(self, samples: Sequence[Sample]) -> list[Outcome]: ...

    def encode_concurrent(self, samples: Sequence[Sample], threads: int) -> list[list[Outcome]]: ...

    def token_bytes(self, ids: np.ndarray) -> list[bytes] | None: ...

    def open_session(self, key: str, state: bytes | None = None) -> "Failure | None": ...

    def session_append(self, key: str, segments: Sequence[Segment]) -> "SessionUpdate | Failure": ...

    def session_state(self, key: str) -> "bytes | None | Failure": ...

    def close_session(self, key: str) -> None: ...

    def identity(self) -> EngineIdentity: ...

    def run_notes(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def can_run(capabilities: Capabilities, sample: Sample) -> bool:
    """Whether an engine with these capabilities is asked to encode ``sample`` at all."""
    return capabilities.special_tokens or sample.is_plain


class ExecutorBase:
    """Skips what the engine cannot handle; subclasses implement ``_submit`` / ``_collect``
    over the runnable samples only. Every call the engine is sent goes into ``call_log``
    (bounded: what a finding that depends on earlier calls keeps, ``verify.fresh_check``)."""

    spec: str
    capabilities: Capabilities
    restarts: int = 0
    timeout_s: float | None = None
    checks_expected = False  # whether _submit takes ``expected`` (where the ids are made, digests are checked)
    _call_log: CallLog | None = None

    @property
    def call_log(self) -> CallLog:
        if self._call_log is None:
            self._call_log = CallLog()
        return self._call_log

    def fresh_replayer(self):
        """A ``verify.executors.fresh.FreshReplayer`` for this engine (started on first use and
        closed with the executor), or None where there is no fresh instance to be had."""
        return None

    def submit(self, samples: Sequence[Sample], expected: Sequence[Recorded | None] | None = None) -> None:
        """``expected[i]``, where given, is what the caller already holds for ``samples[i]`` (the
        ledger's ``Recorded`` digest of the reference's ids). An executor that ``checks_expected``
        (in-process and isolated ones: ``engine_calls.encode_outcomes``) compares its engine's ids
        with it where they are made and answers with the very ``Recorded`` object where digest and
        length match, so matching ids are neither hashed again nor sent back; every other outcome,
        and every outcome of the other executors, is as without it."""
        samples = list(samples)
        self._size = len(samples)
        if self.capabilities.special_tokens:  # the common case: every sample runs, no index lists
            self._runnable = None if samples else []
            runnable = samples
        else:
            self._runnable = [i for i, s in enumerate(samples) if s.is_plain]  # can_run without special tokens
            runnable = [samples[i] for i in self._runnable]
            if len(runnable) == len(samples):
                self._runnable = None if samples else []
        if runnable:
            self.call_log.record(runnable)
            if expected is None or not self.checks_expected:
                self._submit(runnable)
            else:
                self._submit(runnable, expected=list(expected) if self._runnable is None
                             else [expected[i] for i in self._runnable])

    def collect(self) -> list[Outcome]:
        """One outcome per submitted sample (``SKIPPED`` for the ones the engine cannot take);
        ``_runnable`` None means every sample ran."""
        if self._runnable is None:
            out = list(self._collect())
        else:
            out = [SKIPPED] * self._size
            if self._runnable:
                for i, outcome in zip(self._runnable, self._collect()):
                    out[i] = outcome
        self._size, self._runnable = 0, []
        return out

    def encode(self, samples: Sequence[Sample]) -> list[Outcome]:
        self.submit(samples)
        return self.collect()

    def encode_concurrent(self, samples: Sequence[Sample], threads: int) -> list[list[Outcome]]:
        samples = list(samples)
        runnable = [i for i, s in enumerate(samples) if can_run(self.capabilities, s)]
        if runnable:
            for _ in range(threads):  # the same batch from every thread: as many calls
                self.call_log.record([samples[i] for i in runnable])
        results = self._encode_concurrent([samples[i] for i in runnable], threads) if runnable else \
            [[] for _ in range(threads)]
        merged = []
        for per_thread in results:
            out: list[Outcome] = [SKIPPED] * len(samples)
            for i, outcome in zip(runnable, per_thread):
                out[i] = outcome
            merged.append(out)
        return merged

    def _no_sessions(self) -> Failure:
        return Failure("error", "NoSessions", f"{self.spec} has no stateful sessions")

    def open_session(self, key: str, state: bytes | None = None) -> Failure | None:
        return self._no_sessions()

    def session_append(self, key: str, segments: Sequence[Segment]):
        return self._no_sessions()

    def session_state(self, key: str):
        return self._no_sessions()

    def close_session(self, key: str) -> None:
        return None

    # --- to implement -------------------------------------------------------
    def _submit(self, samples: list[Sample]) -> None:
        raise NotImplementedError

    def _collect(self) -> list[Outcome]:
        raise NotImplementedError

    def _encode_concurrent(self, samples: list[Sample], threads: int) -> list[list[Outcome]]:
        raise NotImplementedError
