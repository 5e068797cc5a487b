"""Run an engine in the harness's own process (``--in-process``): fastest, but a
segfault or hang in the engine ends the process it runs in. In a speculating shard worker
(``EngineOptions.speculate``) every engine call has the hang deadline, past which the worker
ends (``verify.executors.call_deadline``) and its shard runs again with isolated engines."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from verify.engines.base import Engine, as_token_array
from verify.executors.base import ExecutorBase
from verify.executors.call_deadline import ends_process_after
from verify.executors.engine_calls import _NOT_OURS, encode_outcomes, failure_from
from verify.executors.fresh import FreshReplayers
from verify.outcome import Failure, Outcome, Recorded
from verify.sample import Sample


class LocalExecutor(ExecutorBase):
    checks_expected = True  # matching ids are answered with the ledger's entry (no array, no second digest)

    def __init__(self, engine: Engine, call_deadline_s: float | None = None):
        self.engine = engine
        self.spec = engine.spec
        self.capabilities = engine.capabilities
        self.restarts = 0  # never restarted: a crash here ends the process
        self._deadline_s = call_deadline_s  # past it a call ends this process (a speculating worker)
        # a fresh instance lives in a process of its own even here: one in this process would share
        # the module-level state (a cache, a table) of the engine that has run
        self._fresh = FreshReplayers(engine.spec, call_deadline_s)
        self.timeout_s = None  # a hang here is not a finding of this executor (at most, its process ends)
        self._pending: list[Sample] = []
        self._expected: list[Recorded | None] | None = None
        self._sessions: dict[str, object] = {}
        self.batch_fallbacks = 0  # batch calls that raised although every sample alone encoded
        self._first_fallback = ""

    def _fell_back(self, exc: BaseException) -> None:
        self.batch_fallbacks += 1
        if not self._first_fallback:
            self._first_fallback = f"{type(exc).__name__}: {exc}"[:500]

    def encode_runnable(self, samples: Sequence[Sample], expected: Sequence[Recorded | None] | None = None
                        ) -> list[Outcome]:
        """The engine on samples it can handle (the isolated worker calls this too); where the
        ids match ``expected[i]``, the outcome is that ``Recorded`` (``encode_outcomes``)."""
        with ends_process_after(self._deadline_s):
            return encode_outcomes(self.engine, samples, self._fell_back, expected)

    def _submit(self, samples: list[Sample], expected: list[Recorded | None] | None = None) -> None:
        self._pending, self._expected = samples, expected

    def _collect(self) -> list[Outcome]:
        samples, expected, self._pending, self._expected = self._pending, self._expected, [], None
        return self.encode_runnable(samples, expected)

    def _encode_concurrent(self, samples: list[Sample], threads: int) -> list[list[Outcome]]:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(lambda _: self.encode_runnable(samples), range(threads)))

    # --- sessions ---------------------------------------------------------------------
    def open_session(self, key: str, state: bytes | None = None) -> Failure | None:
        if not self.capabilities.sessions:
            return self._no_sessions()
        try:
            with ends_process_after(self._deadline_s):
                self._sessions[key] = self.engine.open_session(state)
        except _NOT_OURS:
            raise
        except BaseException as exc:
            return failure_from(exc)
        return None

    def session_append(self, key: str, segments):
        from verify.engines.sessions import SessionUpdate

        session = self._sessions.get(key)
        if session is None:
            return Failure("error", "SessionLost", f"no open session {key!r}")
        try:
            with ends_process_after(self._deadline_s):
                update = session.append(list(segments))
            if not isinstance(update, SessionUpdate):
                raise TypeError(f"append returned {type(update).__name__}, not a SessionUpdate")
            update.ids = as_token_array(update.ids)
            return update
        except _NOT_OURS:
            raise
        except BaseException as exc:
            return failure_from(exc)

    def session_state(self, key: str):
        session = self._sessions.get(key)
        if session is None:
            return Failure("error", "SessionLost", f"no open session {key!r}")
        try:
            with ends_process_after(self._deadline_s):
                return session.state()
        except _NOT_OURS:
            raise
        except BaseException as exc:
            return failure_from(exc)

    def close_session(self, key: str) -> None:
        session = self._sessions.pop(key, None)
        if session is not None:
            try:
                with ends_process_after(self._deadline_s):
                    session.close()
            except Exception:
                pass

    def token_bytes(self, ids: np.ndarray) -> list[bytes] | None:
        if not self.capabilities.decode:
            return None
        try:
            with ends_process_after(self._deadline_s):
                return self.engine.token_bytes(ids)
        except _NOT_OURS:
            raise
        except BaseException:
            return None  # pieces are a courtesy; the ids themselves are the finding

    def identity(self):
        return self.engine.identity()

    def run_notes(self) -> dict:
        try:
            with ends_process_after(self._deadline_s):
                notes = dict(self.engine.run_notes())
        except _NOT_OURS:
            raise
        except BaseException as exc:  # notes are reporting only; never lose the run for them
            notes = {"run_notes_error": f"{type(exc).__name__}: {exc}"}
        entry_notes = getattr(self.engine, "entry_notes", None)
        if callable(entry_notes):  # which production entry point ran, how often (verify.engines.base)
            notes = {**entry_notes(), **notes}
        notes.update(self._fresh.notes())
        if self.batch_fallbacks:
            notes["batch_fallbacks"] = self.batch_fallbacks
            notes["warnings"] = [*notes.get("warnings", []),
                                 f"{self.batch_fallbacks} batch call(s) raised although every sample alone encoded "
                                 f"(first: {self._first_fallback}); the ids compared are from single calls"]
        return notes

    def fresh_replayer(self):
        return self._fresh.get()

    def close(self) -> None:
        self._fresh.close()
        self.engine.close()
