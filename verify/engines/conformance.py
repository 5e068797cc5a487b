"""The conformance suite every adapter passes (fsspec's tests/abstract pattern).

In a test module::

    from verify.engines.conformance import EngineConformance

    class TestMyEngine(EngineConformance):
        @pytest.fixture(scope="class")
        @classmethod
        def engine(cls):
            return build_engine("myadapter:cl100k_base")

Third-party adapter packages can run the same suite against their engines.
The suite checks the protocol, not agreement with a reference (the harness
itself does that); ``reference_spec`` may name a reference to compare a few
easy texts against. Every entry point an adapter declares
(``capabilities.entry_points``) is driven on the same inputs: it must be called
(its library calls counted in ``entry_notes``), a batch must reach a ``batch`` or
``file`` entry point as one call, and its ids must be the default's.
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.engines.base import ENTRY_POINTS, TOKEN_DTYPE, Adapter, Capabilities, EngineIdentity
from verify.engines.traits import is_byte_level
from verify.sample import Sample

CONFORMANCE_TEXTS = [
    "",
    "hello world",
    "Hello, World! 12345 6789",
    "  leading and trailing  ",
    "line one\nline two\r\nline three\n\n",
    "naïve café déjà vu",
    "日本語 中文 한국어 русский ελληνικά العربية",
    "emoji 👍🏽 family 👨‍👩‍👧",
    "def f(x):\n\treturn x ** 2\n",
]


def entry_samples(engine) -> list[Sample]:
    """The conformance texts, and for an engine that honours ``allow_special`` the same with
    special tokens allowed and a sample of three segments."""
    samples = [Sample.plain(str(i), t) for i, t in enumerate(CONFORMANCE_TEXTS)]
    if engine.capabilities.special_tokens:
        samples += [Sample.from_segments(f"s{i}", [(t, True)]) for i, t in enumerate(CONFORMANCE_TEXTS)]
        samples.append(Sample.from_segments("mixed", [("say <|endoftext|> ", False), ("<|endoftext|>", True),
                                                      (" then <|endoftext|>", False)]))
    return samples


def entry_calls(engine, name: str) -> int:
    return ((engine.entry_notes().get("entry_points_ran") or {}).get(name) or {}).get("calls", 0)


class EngineConformance:
    """Mixin: subclasses provide an ``engine`` fixture."""

    reference_spec: str | None = None

    def test_declares_capabilities_as_data(self, engine):
        assert isinstance(engine.capabilities, Capabilities)
        assert engine.capabilities.device in ("cpu", "gpu")
        assert isinstance(engine.spec, str) and engine.spec

    def test_returns_one_uint32_array_per_sample(self, engine):
        samples = [Sample.plain(str(i), t) for i, t in enumerate(CONFORMANCE_TEXTS)]
        out = engine.encode_batch(samples)
        assert len(out) == len(samples)
        for ids in out:
            assert isinstance(ids, np.ndarray) and ids.dtype == TOKEN_DTYPE and ids.ndim == 1

    def test_empty_text_gives_no_tokens(self, engine):
        assert engine.encode_batch([Sample.plain("e", "")])[0].size == 0

    def test_nonempty_text_gives_tokens(self, engine):
        assert all(ids.size > 0 for ids in engine.encode_batch([Sample.plain("h", t) for t in CONFORMANCE_TEXTS[1:]]))

    def test_batch_equals_single_calls(self, engine):
        samples = [Sample.plain(str(i), t) for i, t in enumerate(CONFORMANCE_TEXTS)]
        batched = engine.encode_batch(samples)
        for sample, ids in zip(samples, batched):
            np.testing.assert_array_equal(engine.encode_batch([sample])[0], ids)

    def test_deterministic(self, engine):
        samples = [Sample.plain(str(i), t) for i, t in enumerate(CONFORMANCE_TEXTS)]
        for a, b in zip(engine.encode_batch(samples), engine.encode_batch(samples)):
            np.testing.assert_array_equal(a, b)

    def test_plain_segments_concatenate(self, engine):
        parts = ["first part, ", "second part"]
        joined = engine.encode_batch([Sample.from_segments("s", [(p, False) for p in parts])])[0]
        separate = [engine.encode_batch([Sample.plain("p", p)])[0] for p in parts]
        np.testing.assert_array_equal(joined, np.concatenate(separate))

    def test_declared_entry_points_are_known(self, engine):
        declared = engine.capabilities.entry_points
        assert isinstance(declared, tuple) and len(set(declared)) == len(declared)
        assert set(declared) <= set(ENTRY_POINTS), declared
        if isinstance(engine, Adapter):  # each declared entry point has its method
            for name in declared:
                method = ENTRY_POINTS[name]
                assert getattr(type(engine), method) is not getattr(Adapter, method), f"{name}: no {method}"

    def test_every_declared_entry_point_is_exercised_and_agrees(self, engine):
        declared = engine.capabilities.entry_points
        if not declared or not callable(getattr(engine, "entry_point", None)):
            pytest.skip("engine declares no entry point")
        samples = entry_samples(engine)
        expected = engine.encode_batch(samples)
        for name in declared:
            before = entry_calls(engine, name)
            with engine.entry_point(name):
                got = engine.encode_batch(samples)
            assert entry_calls(engine, name) > before, f"entry point {name} was never called"
            for sample, a, b in zip(samples, expected, got):
                np.testing.assert_array_equal(b, a, err_msg=f"entry point {name} on {sample.segments!r}")

    def test_a_batch_reaches_a_batch_entry_point_as_one_call(self, engine):
        declared = [n for n in engine.capabilities.entry_points if n in ("batch", "file")]
        if not declared:
            pytest.skip("engine declares no batch or file entry point")
        samples = [Sample.plain(str(i), t) for i, t in enumerate(CONFORMANCE_TEXTS)]
        for name in declared:
            before = entry_calls(engine, name)
            with engine.entry_point(name):
                engine.encode_batch(samples)
            assert entry_calls(engine, name) == before + 1, f"{len(samples)} texts took several {name} calls"

    def test_decode_covers_the_text(self, engine):
        if not engine.capabilities.decode:
            pytest.skip("engine declares no decode")
        for text in CONFORMANCE_TEXTS:
            ids = engine.encode_batch([Sample.plain("d", text)])[0]
            pieces = engine.token_bytes(ids)
            assert len(pieces) == len(ids)
            assert all(isinstance(p, bytes) for p in pieces)
            if is_byte_level(engine):  # byte-level BPE: the pieces are exactly the input's bytes
                assert b"".join(pieces) == text.encode("utf-8"), text

    def test_identity_is_complete(self, engine):
        ident = engine.identity()
        assert isinstance(ident, EngineIdentity)
        assert ident.spec == engine.spec and ident.adapter
        assert ident.fingerprint and ident.fingerprint == engine.identity().fingerprint
        assert not ident.fingerprint.startswith("unavailable:"), ident.fingerprint

    def test_agrees_with_reference_on_easy_text(self, engine):
        if not self.reference_spec:
            pytest.skip("no reference named for this engine")
        from verify.engines import build_engine

        reference = build_engine(self.reference_spec)
        samples = [Sample.plain(str(i), t) for i, t in enumerate(CONFORMANCE_TEXTS[1:6])]
        for a, b in zip(reference.encode_batch(samples), engine.encode_batch(samples)):
            np.testing.assert_array_equal(a, b)
