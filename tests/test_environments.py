"""Two builds of one package side by side (``?pip=`` private environments), identities that tell
builds apart, and adapters that read what a fork offers.

The engine package is made here as two local wheels (``tinytok`` 1.0 and 2.0, written by hand:
no index, no build backend); 2.0 is 1.0 with one thing changed, drawn at random: a character
it drops. ``verify run`` compares them in one run through their private environments."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import zipfile
from pathlib import Path

import pytest

from conftest import run_cli
from verify.engines.fastokens_engine import FastokensCalls
from verify.errors import ConfigError

ENGINE = '''
import verify.vocab

DROPPED = {dropped!r}


class Engine:
    name = "tinytok"
    version = {version!r}
    vocabulary = "cl100k_base"

    def __init__(self):
        self._enc = verify.vocab.load("cl100k_base").encoder()

    def encode_batch(self, texts):
        if DROPPED:  # the new version's bug: one character lost before encoding
            texts = [t.replace(DROPPED, "") for t in texts]
        return self._enc.encode_ordinary_batch(texts)


def make():
    return Engine()
'''


def make_wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel of ``files`` (path -> text), with its METADATA, WHEEL and RECORD."""
    dist_info = f"{name}-{version}.dist-info"
    members = dict(files)
    members[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    members[f"{dist_info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for path, text in members.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in members.items():
            zf.writestr(path, text)
    return wheel


@pytest.fixture
def env_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "envs"
    monkeypatch.setenv("VERIFY_ENV_CACHE", str(cache))
    return cache


@pytest.mark.slow
def test_two_versions_of_one_package_compared_in_one_run(tmp_path, env_cache):
    dropped = random.Random().choice(" e\n,.t")
    wheels = tmp_path / "dist"
    wheels.mkdir()
    old = make_wheel(wheels, "tinytok", "1.0", {"tinytok/__init__.py": ENGINE.format(version="1.0", dropped="")})
    new = make_wheel(wheels, "tinytok", "2.0", {"tinytok/__init__.py": ENGINE.format(version="2.0",
                                                                                      dropped=dropped)})
    reference, candidate = f"python:tinytok:make?pip={old}", f"python:tinytok:make?pip={new}"
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", reference, "--candidate", candidate, "--corpus", "smoke", "--limit", "40",
                   "--out", str(out), "--workers", "1", "--allow-skipped", "--minimize-budget", "0", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the divergence found
    manifest = json.loads((out / "manifest.json").read_text())
    ref, (cand,) = manifest["reference"], manifest["candidates"]
    assert (ref["package"], ref["package_version"], ref["version"]) == ("tinytok", "1.0", "1.0")
    assert (cand["package"], cand["package_version"], cand["version"]) == ("tinytok", "2.0", "2.0")
    assert ref["files_digest"] != cand["files_digest"]
    assert ref["environment"]["requirements"] == [str(old)] and cand["environment"]["requirements"] == [str(new)]
    assert manifest["counts"]["diverged"] > 0
    # each environment was made once and is found again: a second run builds nothing
    assert len(list(env_cache.glob("*/env.json"))) == 2
    again = run_cli("engines", "--pip", str(new), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "tinytok==2.0" in again.stdout and len(list(env_cache.glob("*/env.json"))) == 2


def test_a_requirement_pip_cannot_install_is_one_line_naming_the_log(tmp_path, env_cache):
    proc = run_cli("engines", "--pip", str(tmp_path / "missing-1.0-py3-none-any.whl"), cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "pip could not install" in line and "pip.log" in line


def test_python_of_another_version_is_refused_in_one_line(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '{\"version\": \"2.7\", \"prefix\": \"/x\", \"site\": []}'\n")
    fake.chmod(0o755)
    proc = run_cli("run", "--candidate", f"hf:cl100k_base?python={fake}", "--corpus", "smoke", "--limit", "1",
                   "--out", str(tmp_path / "out"), "--in-process")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "is Python 2.7" in line


# --- adapters that read what a fork offers ---------------------------------------------------

class _Tokenizer:
    def encode(self, text, add_special_tokens=False):
        raise NotImplementedError

    def encode_batch(self, texts, add_special_tokens=False):
        raise NotImplementedError


def test_a_fork_without_a_plain_text_call_is_refused_naming_what_it_found(monkeypatch):
    import sys
    import types

    module = types.ModuleType("fastokens")
    module.Tokenizer = _Tokenizer
    monkeypatch.setitem(sys.modules, "fastokens", module)
    assert not FastokensCalls.of(_Tokenizer).plain_text()
    from verify.engines.fastokens_engine import FastokensEngine

    with pytest.raises(ConfigError) as err:
        FastokensEngine("cl100k_base", {})
    message = str(err.value)
    assert "has no call that encodes text without matching special tokens" in message
    assert "the fastokens adapter supports fastokens 0.3" in message and "\n" not in message


def test_the_fallbacks_of_a_fork_are_named():
    class B10(_Tokenizer):  # fastokens-b10 0.2: no flat call, no added_tokens
        def encode_batch(self, texts, add_special_tokens=False, split_special_tokens=False):
            raise NotImplementedError

    calls = FastokensCalls.of(B10)
    assert calls.plain_text() and calls.batch_split and not calls.flat
    notes = " ".join(calls.fallbacks())
    assert "encode_batch(split_special_tokens=True)" in notes and "no added_tokens()" in notes


def test_a_named_engine_takes_options_merged_over_its_own():
    from verify.engines.registry import parse_spec

    spec = parse_spec("tiktoken-cl100k?entry=batch")
    assert (spec.adapter, spec.target, spec.options) == ("tiktoken", "cl100k_base", {"entry": "batch"})
    assert spec.text == "tiktoken-cl100k?entry=batch"


def test_plugin_options_are_typed_by_the_factory_annotations(plugin_dir):
    (plugin_dir / "typed_plugin.py").write_text('''
from pathlib import Path

class Engine:
    def __init__(self, **seen):
        self.seen = seen
    def encode_batch(self, texts):
        return [[1] for _ in texts]

def make(cache_mb: int, vocab: str, fast: bool = False, root: Path | None = None, raw=None):
    return Engine(cache_mb=cache_mb, vocab=vocab, fast=fast, root=root, raw=raw)
''')
    from verify.engines.registry import build_engine

    engine = build_engine("python:typed_plugin:make?cache_mb=64&vocab=cl100k_base&fast=yes&root=/tmp&raw=7")
    assert engine.engine.seen == {"cache_mb": 64, "vocab": "cl100k_base", "fast": True, "root": Path("/tmp"),
                                  "raw": "7"}
    with pytest.raises(ConfigError, match="unknown option 'size'.*takes: cache_mb, vocab, fast, root, raw"):
        build_engine("python:typed_plugin:make?cache_mb=1&vocab=x&size=3")
    with pytest.raises(ConfigError, match="option cache_mb='big' is not a int"):
        build_engine("python:typed_plugin:make?cache_mb=big&vocab=x")


def test_the_build_of_a_plugin_is_in_its_identity_and_the_engine_key(plugin_dir):
    from verify.engines.registry import build_engine
    from verify.keys import engine_key

    source = '''
class Engine:
    name = "same-name"
    version = "{v}"
    def encode_batch(self, texts):
        return [[1] for _ in texts]

def make():
    return Engine()
'''
    (plugin_dir / "build_a.py").write_text(source.format(v="1"))
    (plugin_dir / "build_b.py").write_text(source.format(v="1") + "# another build\n")
    a, b = (build_engine(f"python:build_{x}:make").identity() for x in "ab")
    assert a.fingerprint == b.fingerprint  # they behave alike on the probes
    assert (a.name, a.version) == ("same-name", "1") and a.files_digest != b.files_digest
    assert engine_key(a.as_dict()) != engine_key(b.as_dict())


PLAIN = '''
from tokenizers import Tokenizer

class Plain:
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def encode_batch(self, texts):
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

def make():
    return Plain()
'''


def test_a_plain_text_run_that_only_skipped_says_so_and_allow_skipped_passes_it(tmp_path, plugin_dir,
                                                                               tiny_tokenizer_json, tiny_spec):
    (plugin_dir / "plain_skips.py").write_text(PLAIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "plain words here"}) + "\n"
                      + json.dumps({"segments": [["<|endoftext|>", True], ["more words", False]]}) + "\n")
    args = ["run", "--reference", tiny_spec, "--candidate", "python:plain_skips:make", "--corpus", str(corpus),
            "--workers", "1", "--in-process", "--no-progress", "--minimize-budget", "0"]
    proc = run_cli(*args, "--out", str(tmp_path / "a"))
    assert proc.returncode == 1
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("verify: exit 1 only because")]
    assert "1 samples with special-token segments were skipped by python:plain_skips:make" in line
    assert "--allow-skipped" in line
    allowed = run_cli(*args, "--out", str(tmp_path / "b"), "--allow-skipped")
    assert allowed.returncode == 0, allowed.stderr
