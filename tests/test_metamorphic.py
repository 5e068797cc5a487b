"""Metamorphic checks catch planted engines that a reference comparison would only
show as 'different ids': hidden state, batch-dependence, thread races, lossy decode."""

import json

import pytest

from conftest import run_cli
from verify.adversarial.metamorphic import CHECKS, check_samples
from verify.engines.fake import FakeEngine
from verify.sample import Sample

PLANTED = '''
import threading, time

class Correct:
    def encode_batch(self, texts):
        return [list(t.encode()) for t in texts]

class Sticky(Correct):
    """Hidden state: once it has seen a long text it stays in 'long mode' and drops the last byte."""
    def __init__(self):
        self.long_mode = False
    def encode_batch(self, texts):
        out = []
        for t in texts:
            ids = list(t.encode())
            out.append(ids[:-1] if self.long_mode and ids else ids)
            if len(t) > 1000:
                self.long_mode = True
        return out

class BatchDependent(Correct):
    """A batched call pads every text but the longest with a 0 token."""
    def encode_batch(self, texts):
        out = [list(t.encode()) for t in texts]
        if len(out) > 1:
            longest = max(len(o) for o in out)
            out = [o + [0] if len(o) < longest else o for o in out]
        return out

class Racy(Correct):
    """Shares one output buffer between calls without a lock."""
    def __init__(self):
        self.buffer = []
    def encode_batch(self, texts):
        out = []
        for t in texts:
            self.buffer = list(t.encode())
            time.sleep(0.0005)
            out.append(list(self.buffer))
        return out

def correct():
    return Correct()

def sticky():
    return Sticky()

def batch_dependent():
    return BatchDependent()

def racy():
    return Racy()
'''

TEXTS = [f"sample number {i}: some ordinary text, déjà vu 日本語 {i * 7}" for i in range(12)]


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "planted_meta.py").write_text(PLANTED)
    return "python:planted_meta"


@pytest.fixture
def corpus(write_jsonl):
    return write_jsonl([{"id": f"d{i}", "text": t} for i, t in enumerate(TEXTS)])


def _samples():
    return [Sample.plain(f"d{i}", t) for i, t in enumerate(TEXTS)]


def _build(spec):
    from verify.engines import build_engine

    return build_engine(spec), build_engine(spec)


def test_a_correct_engine_passes(planted):
    checker = check_samples(*_build(f"{planted}:correct"), _samples(), batch_size=6)
    assert checker.counts.total_violations == 0 and checker.counts.errors == 0, checker.findings
    assert checker.counts.checked["history"] == len(TEXTS) and checker.counts.checked["threads"] == 4 * len(TEXTS)


@pytest.mark.parametrize("factory, check", [
    ("sticky", "history"),
    ("batch_dependent", "batch"),
    ("racy", "threads"),
])
def test_each_planted_bug_is_caught_by_its_check(planted, factory, check):
    checker = check_samples(*_build(f"{planted}:{factory}"), _samples(), batch_size=6)
    violated = {c for c in CHECKS if checker.counts.violations[c]}
    assert check in violated, checker.counts.as_dict()
    if factory != "racy":
        assert violated == {check}, checker.counts.as_dict()
    record = next(r for r in checker.findings if r["check"] == check)
    assert record["kind"] == "ids" and record["engine"] == record["reference"] == f"{planted}:{factory}"
    assert record["input"] and record["token_index"] is not None


class LossyDecode(FakeEngine):
    """Encodes correctly, but token_bytes loses the byte of every 'e'."""

    def token_bytes(self, ids):
        return [b"" if int(i) == ord("e") else p for i, p in zip(ids, super().token_bytes(ids))]


def test_a_decode_that_loses_a_byte_is_caught():
    checker = check_samples(LossyDecode(spec="fake:lossy"), LossyDecode(spec="fake:lossy"), _samples())
    assert checker.roundtrip
    assert checker.counts.violations["roundtrip"] == len(TEXTS)
    assert {c for c in CHECKS if checker.counts.violations[c]} == {"roundtrip"}
    record = checker.findings[0]
    assert record["check"] == "roundtrip" and record["kind"] == "ids"
    assert record["byte_offset"] == TEXTS[0].encode().index(b"e")


def test_roundtrip_passes_for_a_correct_decoder_and_is_skipped_without_decode(planted):
    fake = check_samples(FakeEngine(), FakeEngine(), _samples())
    assert fake.counts.checked["roundtrip"] == len(TEXTS) and fake.counts.total_violations == 0
    plugin = check_samples(*_build(f"{planted}:correct"), _samples())
    assert not plugin.roundtrip and plugin.counts.checked["roundtrip"] == 0


# --- the command -----------------------------------------------------------------

def test_check_command_clean_engine_exits_0(tmp_path, planted, corpus):
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{planted}:correct", "--corpus", str(corpus), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((out / "check.json").read_text())
    assert report["counts"]["samples"] == len(TEXTS) and sum(report["counts"]["violations"].values()) == 0
    assert (out / "divergences.jsonl").read_text() == ""


def test_check_command_finds_hidden_state_exits_1(tmp_path, planted, corpus):
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{planted}:sticky", "--corpus", str(corpus), "--out", str(out),
                   "--limit", "5")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert len(records) == 5 and {r["check"] for r in records} == {"history"}
    assert all(r["schema"] == "verify.divergence/1" and r["kind"] == "ids" for r in records)


def test_check_command_usage_errors(tmp_path, planted, corpus):
    proc = run_cli("check", "--corpus", str(corpus))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli("check", "--engine", f"{planted}:nope", "--corpus", str(corpus), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "nope" in proc.stderr
