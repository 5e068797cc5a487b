"""Run an engine in the harness's own process."""

from __future__ import annotations

import traceback
from typing import Sequence

import numpy as np

from verify.engines.base import Engine, as_token_array
from verify.findings import Failure
from verify.sample import Sample

Outcome = np.ndarray | Failure
# Interrupts are the user's, not the engine's: they end the run.
_NOT_OURS = (KeyboardInterrupt, SystemExit, GeneratorExit)


def failure_from(exc: BaseException) -> Failure:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return Failure("error", type(exc).__name__, f"{exc}{where}")


class LocalExecutor:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.spec = engine.spec
        self.capabilities = engine.capabilities
        self._pending: list[Sample] = []
        self.restarts = 0  # never restarted: a crash here ends the run

    def submit(self, samples: Sequence[Sample]) -> None:
        self._pending = list(samples)

    def collect(self) -> list[Outcome]:
        samples, self._pending = self._pending, []
        return self.encode(samples)

    def encode(self, samples: Sequence[Sample]) -> list[Outcome]:
        try:
            out = self.engine.encode_batch(samples)
            if len(out) != len(samples):
                raise ValueError(f"engine returned {len(out)} results for {len(samples)} samples")
            return [as_token_array(ids) for ids in out]
        except _NOT_OURS:
            raise
        except BaseException:  # pyo3's PanicException is a BaseException: still the engine's failure
            if len(samples) == 1:
                return [self._encode_one(samples[0])]
            # Attribute the failure: re-run one sample at a time.
            return [self._encode_one(s) for s in samples]

    def _encode_one(self, sample: Sample) -> Outcome:
        try:
            out = self.engine.encode_batch([sample])
            if len(out) != 1:
                raise ValueError(f"engine returned {len(out)} results for 1 sample")
            return as_token_array(out[0])
        except _NOT_OURS:
            raise
        except BaseException as exc:
            return failure_from(exc)

    def token_bytes(self, ids: np.ndarray) -> list[bytes] | None:
        if not self.capabilities.decode:
            return None
        try:
            return self.engine.token_bytes(ids)
        except _NOT_OURS:
            raise
        except BaseException:
            return None  # pieces are a courtesy; the ids themselves are the finding

    def identity(self):
        return self.engine.identity()

    def run_notes(self) -> dict:
        try:
            return self.engine.run_notes()
        except _NOT_OURS:
            raise
        except BaseException as exc:  # notes are reporting only; never lose the run for them
            return {"run_notes_error": f"{type(exc).__name__}: {exc}"}

    def close(self) -> None:
        self.engine.close()
