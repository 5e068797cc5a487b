"""An executor seen as an engine, for code written against the engine protocol
(the Unicode sweep): ``encode_batch`` returns ids when every sample encoded and
raises ``EngineFailure`` otherwise, so such code gets crash and hang isolation
without knowing about workers."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from verify.findings import Failure
from verify.sample import Sample


class EngineFailure(RuntimeError):
    def __init__(self, failure: Failure):
        super().__init__(f"{failure.kind}: {failure.type}: {failure.message}")
        self.failure = failure


class ExecutorEngine:
    def __init__(self, executor):
        self.executor = executor
        self.spec = executor.spec
        self.capabilities = executor.capabilities

    def encode_batch(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        out = self.executor.encode(samples)
        for outcome in out:
            if isinstance(outcome, Failure):
                raise EngineFailure(outcome)
        return out

    def token_bytes(self, ids: np.ndarray) -> list[bytes]:
        return self.executor.token_bytes(ids) or []

    def identity(self):
        return self.executor.identity()

    def close(self) -> None:
        self.executor.close()
