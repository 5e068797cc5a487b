"""Normalization attribution: an engine whose NFKC data is another Unicode version than the
reference's is named by its normalization data ("NFKC data of Unicode 14.0.0"), measured
on each engine, never mistaken for character tables. The planted engine is the real
reference (the Anthropic tokenizer.json through HuggingFace tokenizers) with one table
changed: its text first goes through the NFKC mapping of another Unicode version."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from verify.unicode_tables import tables as ud

pytestmark = pytest.mark.slow

PLANTED = r"""
from tokenizers import Tokenizer
from verify.unicode_tables import tables
from verify.vocab.resolver import resolve_vocab


class Engine:
    # the real tokenizer; every character first mapped by the NFKC table of ``version``
    def __init__(self, version):
        self.tok = Tokenizer.from_file(str(resolve_vocab("anthropic").path))
        self.nfkc = tables.normal_form("nfkc", version) if version else {}

    def encode_batch(self, texts):
        texts = ["".join(self.nfkc.get(ord(c), c) for c in t) for t in texts]
        return [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=False)]


def real():
    return Engine(None)


def nfkc_14():
    return Engine("14.0.0")
"""


@pytest.fixture
def engines(plugin_dir):
    (plugin_dir / "nfkc_engines.py").write_text(PLANTED)


def test_the_measured_normalization_version_is_named(tmp_path, engines):
    from verify.adversarial.unicode.normalization_probe import nfkc_version
    from verify.engines import build_engine
    from verify.executors.local import LocalExecutor

    assert nfkc_version(LocalExecutor(build_engine("hf:anthropic"))) == "11.0.0"
    assert nfkc_version(LocalExecutor(build_engine("python:nfkc_engines:nfkc_14"))) == "14.0.0"
    assert nfkc_version(LocalExecutor(build_engine("tiktoken:cl100k_base"))) is None  # no normalizer


def test_a_planted_nfkc_table_is_named_by_its_version_not_as_character_tables(tmp_path, engines):
    out = tmp_path / "out"
    # the Latin Extended-D block holds Unicode 14.0's new compatibility characters (U+A7F2..U+A7F4)
    proc = run_cli("unicode", "--reference", "python:nfkc_engines:real", "--candidate", "python:nfkc_engines:nfkc_14",
                   "--start", "A700", "--stop", "A800", "--in-process", "--workers", "1", "--no-progress",
                   "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    (result,) = json.loads((out / "unicode.json").read_text())["candidates"].values()
    changed = set(ud.normalization_changed("nfkc", "11.0.0", "14.0.0").tolist()) & set(range(0xA700, 0xA800))
    mismatched = {cp for a, b in result["mismatched"] for cp in range(a, b + 1)}
    assert changed and mismatched == changed  # exactly the code points whose NFKC form 12-14 changed
    assert result["normalization"]["name"] == "NFKC data of Unicode 14.0.0"
    assert result["normalization"]["reference_unicode_version"] == "11.0.0"
    assert result["version_basis"].startswith("NFKC data of Unicode 14.0.0")
    assert "normalization: NFKC data of Unicode 14.0.0" in proc.stdout
    assert "NFKC data of Unicode 14.0.0" in (out / "unicode.md").read_text()


def test_engines_with_the_same_normalization_are_never_blamed_on_it():
    """Category differences between engines that normalize alike stay character tables."""
    import numpy as np

    from verify.adversarial.unicode.attribution import explain

    changed = ud.changed("15.0.0", "17.0.0")[:200]
    result = explain(changed, "17.0.0", None, [0, 0x10FFFF], normalization=("none", "none"))
    assert result["normalization"] is None and result["unicode_version"] == "15.0.0"
    assert np.isclose(result["explained"], 1.0)
