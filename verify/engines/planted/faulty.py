"""The ``faulty:`` engine adapter: a reference engine with faults injected on purpose.

    verify run --reference tiktoken:cl100k_base \\
               --candidate 'faulty:tiktoken:cl100k_base?kind=boundary&rate=0.25&seed=0'

Spelled as every wrapper is (``verify/engines/wrapped.py``): the target is the inner
engine's spec, the options are the fault's. It is no ``WrappedEngine``: its stateless
encodes are not its inner engine's, and it has sessions only for the history fault.

It loads the inner engine, encodes with it, and passes each sample's ids through a
``FaultInjector`` (``verify.engines.planted.injector``: kinds, options, what each injects). Its
token bytes come from the inner vocabulary's table, so the divergence records show the
faulty pieces. ``history`` faults live in sessions only (``capabilities.sessions``);
its stateless encodes are the inner engine's.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Sequence

import numpy as np

from verify.session_trace import coalesce
from verify.engines.base import Adapter, as_token_array
from verify.engines.sessions import SessionUpdate
from verify.keys import input_key
from verify.sample import Sample, Segment
from verify.engines.planted.faults import token_table
from verify.engines.planted.injector import FaultInjector, config_from


class FaultyEngine(Adapter):
    adapter_name = "faulty"
    package = None

    def __init__(self, target: str, options=None, spec: str | None = None):
        from verify.engines.registry import build_engine

        config = config_from(dict(options or {}), spec or f"faulty:{target}")
        super().__init__(target, {"kind": config.kind, **config.options()}, spec=spec)
        self.config = config
        self.inner = build_engine(target)
        self.vocab_name, self.vocab_sha256 = self.inner.vocab_name, self.inner.vocab_sha256
        vocab = self.inner.target
        self.injector = FaultInjector(config, token_table(vocab), vocab)
        self.capabilities = replace(self.inner.capabilities, decode=True, sessions=config.kind == "history")
        self.injected = 0

    def encode_batch(self, samples: Sequence) -> list[np.ndarray]:
        correct = [as_token_array(ids) for ids in self.inner.encode_batch(samples)]
        out = []
        for ids, injection in self.injector.apply(samples, correct):
            self.injected += injection is not None
            out.append(ids)
        return out

    def token_bytes(self, ids) -> list[bytes]:
        return self.injector.table.pieces(ids)

    def open_session(self, state: bytes | None = None):
        if self.config.kind != "history":
            raise NotImplementedError(f"{self.spec} has no sessions")
        return FaultySession(self, state)

    def run_notes(self) -> dict:
        return {"fault": self.config.kind, "injected": self.injected}

    def close(self) -> None:
        self.inner.close()


class FaultySession:
    """A session that re-encodes the whole transcript (its segments coalesced, as a
    from-scratch encode sees them) and goes wrong once it passes ``after`` characters."""

    def __init__(self, engine: FaultyEngine, state: bytes | None = None):
        self.engine = engine
        self.segments: list[Segment] = []
        self.crossing_key: str | None = None
        if state is not None:
            doc = json.loads(state)
            self.segments = [Segment(t, a) for t, a in doc["segments"]]
            self.crossing_key = doc["crossing_key"]

    def append(self, segments) -> SessionUpdate:
        self.segments.extend(segments)
        transcript = coalesce(self.segments)
        (correct,) = self.engine.inner.encode_batch([Sample("session", transcript)])
        if self.crossing_key is None and sum(len(s.text) for s in transcript) > self.engine.config.after:
            self.crossing_key = input_key(transcript)
        ids, injection = self.engine.injector.session_ids(transcript, as_token_array(correct), self.crossing_key)
        if injection is not None:
            self.engine.injected += 1
        return SessionUpdate(0, ids, {"route": "full"})

    def state(self) -> bytes | None:
        return json.dumps({"segments": [[s.text, s.allow_special] for s in self.segments],
                           "crossing_key": self.crossing_key}).encode()

    def close(self) -> None:
        self.segments = []
