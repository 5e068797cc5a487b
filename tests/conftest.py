"""Shared fixtures. The hermetic ones build a tiny byte-level BPE vocabulary by
training ``tokenizers`` at test time: no download, no third-party text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _share_compiled_modules() -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (as on this project's machines), every process the
    suite starts -- thousands of CLI runs, shard workers and isolated engines -- compiles the
    package from source again: a few tenths of a second of CPU each, several minutes of the
    suite. Compiled modules go to one cache outside the checkout instead (``PYTHONPYCACHEPREFIX``,
    checked against each source's time and size as always), which every process reads; a child
    started with ``-B`` (multiprocessing passes the flag on) reads it too. The tree stays clean."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    cache = str(Path(tempfile.gettempdir()) / f"verify-tests-pycache-{os.getuid()}")
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = cache
    sys.pycache_prefix, sys.dont_write_bytecode = cache, False


_share_compiled_modules()

TRAINING_TEXT = [
    "the quick tokenizer splits words, numbers 12345 and symbols!",
    "another line with repeated words words words and spaces   here",
    "naïve café déjà vu — unicode text with accents and 日本語 and русский",
    "def function(argument):\n    return argument * 2  # code\n",
    "JSON {\"key\": [1, 2, 3], \"other\": null}",
] * 20


@pytest.fixture(scope="session")
def tiny_tokenizer_json(tmp_path_factory) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|sep|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    path = tmp_path_factory.mktemp("vocab") / "tiny.tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="session")
def tiny_spec(tiny_tokenizer_json) -> str:
    return f"hf:{tiny_tokenizer_json}"


@pytest.fixture
def write_jsonl(tmp_path):
    def write(records, name="corpus.jsonl") -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        return path

    return write


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch) -> Path:
    """A folder on sys.path (and PYTHONPATH for subprocesses) for planted plugin modules."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]))
    return folder


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real `verify` entry point in a subprocess (exit codes, stderr)."""
    return subprocess.run([sys.executable, "-m", "verify.cli", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env={**os.environ, **(env or {})}, timeout=600)
