"""Every built-in adapter passes the shared conformance suite."""

import pytest

from verify.engines import build_engine
from verify.engines.conformance import EngineConformance
from verify.engines.fake import FakeEngine


class TestFakeEngine(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return FakeEngine()


class TestHFOnTinyVocabulary(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls, tiny_spec):
        return build_engine(tiny_spec)


class TestPythonPlugin(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls, tmp_path_factory, tiny_tokenizer_json):
        import sys

        folder = tmp_path_factory.mktemp("plugin")
        (folder / "conf_plugin.py").write_text(
            "from tokenizers import Tokenizer\n"
            f"TOK = Tokenizer.from_file({str(tiny_tokenizer_json)!r})\n"
            "class E:\n"
            "    def encode_batch(self, texts):\n"
            "        return [e.ids for e in TOK.encode_batch(texts, add_special_tokens=False)]\n"
            "def make():\n    return E()\n")
        sys.path.insert(0, str(folder))
        yield build_engine("python:conf_plugin:make")
        sys.path.remove(str(folder))


@pytest.mark.slow
class TestTiktokenCl100k(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return build_engine("tiktoken:cl100k_base")


@pytest.mark.slow
class TestHFCl100k(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return build_engine("hf:cl100k_base")


@pytest.mark.slow
class TestHFDeepSeek(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return build_engine("hf:deepseek-v3")
