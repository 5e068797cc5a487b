"""Planted stateful faults: the real reference (tiktoken on cl100k_base) with ONE piece of state
that should not be there. The thresholds come from the environment (a test or a benchmark
draws them at random; the hunt is told nothing). Each is a ``python:`` plugin:

    python:verify.engines.planted.stateful:run_cache        a result cache keyed on a whitespace
                                                             run without the character after it
    python:verify.engines.planted.stateful:batch_run_cache  the same cache, kept only for the
                                                             duration of one batch call
    python:verify.engines.planted.stateful:batch_crash      the batch call aborts the process when
                                                             a batch holds >= K digit runs of >= L
    python:verify.engines.planted.stateful:batch_shape      the batch call drops the last token of
                                                             each digit run when >= K of them (>= L)

``run_cache`` (``$STATE_FAULT_N``): an input with a run of at least N copies of one whitespace
character followed by another character stores the run's ids *as encoded in that context*
(the run without its last character, then that character alone) under the run's text; an
input that is exactly such a run gets the stored ids. On a fresh engine every input is right;
``' '×N`` is wrong after ``' '×N + 'a'`` -- the shape of a real cache bug (TokTier's shadow
sampling: "after a long prefix the same text gives different ids").

``batch_crash`` / ``batch_shape`` (``$BATCH_FAULT_K``, ``$BATCH_FAULT_L``): a single call, or a
batch with fewer such runs, is right.
"""

from __future__ import annotations

import os
import re
import signal
from functools import lru_cache

REFERENCE = "tiktoken:cl100k_base"
_WHITESPACE_RUN = re.compile(r"(\s)\1*")


@lru_cache(maxsize=1)
def _encoding():
    from verify.engines import build_engine

    return build_engine(REFERENCE).encoding


def encode(text: str) -> list[int]:
    return _encoding().encode_ordinary(text) if text else []  # a new list of ints each call


def _env(name: str) -> int:
    return int(os.environ[name])


class RunCache:
    """A cache of whitespace runs' ids, keyed on the run alone (the bug: the ids were computed
    with the character after the run, which the key leaves out)."""

    name = "planted-run-cache"
    version = "1"

    def __init__(self, n: int, per_batch: bool = False):
        self.n, self.per_batch = n, per_batch
        self.cache: dict[str, list[int]] = {}
        _encoding()  # the vocabulary is loaded with the engine, as a real one does

    def _one(self, text: str) -> list[int]:
        if len(text) >= self.n and text == text[0] * len(text) and text[0].isspace():
            cached = self.cache.get(text)
            if cached is not None:
                return list(cached)
        for match in _WHITESPACE_RUN.finditer(text):
            run = match.group()
            followed = match.end() < len(text) and not text[match.end()].isspace()
            if followed and len(run) >= self.n:  # encoded in context: the run's last character joins what follows
                self.cache[run] = encode(run[:-1]) + encode(run[-1])
        return encode(text)

    def encode_batch(self, texts):
        if self.per_batch:
            self.cache = {}
        return [self._one(t) for t in texts]


def _digit_runs(texts, length: int) -> int:
    return sum(1 for t in texts if len(t) >= length and t.isdigit())


class BatchCrash:
    name = "planted-batch-crash"
    version = "1"

    def __init__(self, k: int, length: int):
        self.k, self.length = k, length
        _encoding()

    def encode_batch(self, texts):
        if _digit_runs(texts, self.length) >= self.k:
            os.kill(os.getpid(), signal.SIGSEGV)  # what a native batch call does when it overruns a buffer
        return [encode(t) for t in texts]


class BatchShape:
    name = "planted-batch-shape"
    version = "1"

    def __init__(self, k: int, length: int):
        self.k, self.length = k, length
        _encoding()

    def encode_batch(self, texts):
        many = _digit_runs(texts, self.length) >= self.k
        out = []
        for t in texts:
            ids = encode(t)
            if many and len(t) >= self.length and t.isdigit() and len(ids) > 1:
                ids = ids[:-1]  # an off-by-one in the batch path's output buffer
            out.append(ids)
        return out


def run_cache():
    return RunCache(_env("STATE_FAULT_N"))


def batch_run_cache():
    return RunCache(_env("STATE_FAULT_N"), per_batch=True)


def batch_crash():
    return BatchCrash(_env("BATCH_FAULT_K"), _env("BATCH_FAULT_L"))


def batch_shape():
    return BatchShape(_env("BATCH_FAULT_K"), _env("BATCH_FAULT_L"))
