"""Metamorphic checks catch planted engines that a reference comparison would only
show as 'different ids': hidden state, batch-dependence, thread races, lossy decode.
The checker runs on executors: in this process, or each engine in its own worker."""

import json

import pytest

from conftest import run_cli
from verify.adversarial.checks.metamorphic import CHECKS, check_samples
from verify.engines.fake import FakeEngine
from verify.executors.local import LocalExecutor
from verify.executors.pool import EngineOptions, EnginePool
from verify.findings import BAD_INPUT, SCHEMA
from verify.sample import BadRecord, Sample

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

import itertools
_calls = itertools.count(1000)

class Unstable(Correct):
    """Every call appends a token no call gave before: every property is violated."""
    def encode_batch(self, texts):
        return [list(t.encode()) + [next(_calls)] for t in texts]

class Raises(Correct):
    """Raises on one input, whatever the call."""
    def encode_batch(self, texts):
        if any("number 3:" in t for t in texts):
            raise OverflowError("number 3 is too much")
        return super().encode_batch(texts)

class Crashes(Correct):
    """Kills its own process on one input."""
    def encode_batch(self, texts):
        if any("number 3:" in t for t in texts):
            import os
            os._exit(7)
        return super().encode_batch(texts)

def unstable():
    return Unstable()

def raises():
    return Raises()

def crashes():
    return Crashes()
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


@pytest.fixture
def build():
    """``build(spec, isolate)``: a fresh and a warm executor of ``spec``, one per pool
    (a pool holds one executor per spec)."""
    pools = []

    def start(spec, isolate=False):
        executors = []
        for _ in range(2):
            pools.append(EnginePool(EngineOptions(isolate=isolate, timeout_s=30)))
            executors.append(pools[-1].get(spec))
        return executors

    yield start
    for pool in pools:
        pool.close()


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolated"])
def test_a_correct_engine_passes(planted, build, isolate):
    checker = check_samples(*build(f"{planted}:correct", isolate), _samples(), batch_size=6)
    assert checker.counts.total_violations == 0 and checker.counts.errors == 0, checker.findings
    assert checker.counts.checked["history"] == len(TEXTS) and checker.counts.checked["threads"] == 4 * len(TEXTS)
    assert checker.tally.samples == checker.tally.states["verified"] == len(TEXTS) and checker.tally.all_verified


@pytest.mark.parametrize("factory, check", [
    ("sticky", "history"),
    ("batch_dependent", "batch"),
    ("racy", "threads"),
])
@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolated"])
def test_each_planted_bug_is_caught_by_its_check(planted, build, factory, check, isolate):
    checker = check_samples(*build(f"{planted}:{factory}", isolate), _samples(), batch_size=6)
    violated = {c for c in CHECKS if checker.counts.violations[c]}
    assert check in violated, checker.counts.as_dict()
    if factory != "racy":
        assert violated == {check}, checker.counts.as_dict()
    record = next(r for r in checker.findings if r["check"] == check)
    assert record["kind"] == "ids" and record["engine"] == record["reference"] == f"{planted}:{factory}"
    assert record["input"] and record["token_index"] is not None
    assert checker.tally.states["diverged"] > 0 and not checker.tally.all_verified


def test_findings_of_different_checks_on_one_input_have_different_keys(planted, build):
    checker = check_samples(*build(f"{planted}:unstable"), _samples()[:3], batch_size=3)
    assert {r["check"] for r in checker.findings} == {"repeat", "batch", "history", "threads"}
    keys = [r["finding_key"] for r in checker.findings]
    assert len(keys) == len(set(keys)), "two findings share a finding key"
    one_input = [r for r in checker.findings if r["sample_id"] == "d0"]
    assert len({r["input_key"] for r in one_input}) == 1 and len(one_input) == 4
    threads = next(r for r in one_input if r["check"] == "threads")
    assert threads["differing_threads"] == [0, 1, 2, 3] and threads["thread"] == 0
    assert checker.counts.violations["threads"] == 4 * 3  # every thread counts; one finding per sample


@pytest.mark.parametrize("factory, isolate, kind", [
    ("raises", False, "error"),
    ("raises", True, "error"),
    ("crashes", True, "crash"),
])
def test_an_engine_failure_is_a_finding_with_its_check(planted, build, factory, isolate, kind):
    checker = check_samples(*build(f"{planted}:{factory}", isolate), _samples(), batch_size=6)
    failures = [r for r in checker.findings if r["kind"] != "ids"]
    assert [(r["kind"], r["check"], r["sample_id"]) for r in failures] == [(kind, "baseline", "d3")]
    assert failures[0]["engine"] == failures[0]["reference"] == f"{planted}:{factory}"
    assert "error" in failures[0] and checker.counts.errors == 1
    assert checker.counts.total_violations == 0, checker.findings  # the other samples are still checked
    assert checker.counts.checked["history"] == len(TEXTS) - 1
    assert checker.tally.states[kind] == 1 and checker.tally.states["verified"] == len(TEXTS) - 1


def test_samples_with_special_segments_reach_a_plain_engine_as_text(planted, build):
    sample = Sample.from_segments("s", [("a <|endoftext|> b", True), (" tail", False)])
    checker = check_samples(*build(f"{planted}:correct"), [sample, *_samples()[:2]], batch_size=3)
    assert checker.counts.errors == 0 and checker.counts.total_violations == 0
    assert checker.counts.checked["repeat"] == 3 and checker.tally.states["skipped"] == 0


def test_bad_records_are_reported_and_do_not_end_the_check(planted, build):
    records = [*_samples()[:2], BadRecord("c.jsonl:3", "null text", b"{}"), *_samples()[2:4]]
    checker = check_samples(*build(f"{planted}:correct"), records, source="c", batch_size=2)
    assert checker.counts.samples == 4 and checker.tally.bad_records == 1
    (bad,) = checker.findings
    assert bad["kind"] == BAD_INPUT and bad["sample_id"] == "c.jsonl:3" and bad["source"] == "c"
    assert not checker.tally.all_verified


class LossyDecode(FakeEngine):
    """Encodes correctly, but token_bytes loses the byte of every 'e'."""

    def token_bytes(self, ids):
        return [b"" if int(i) == ord("e") else p for i, p in zip(ids, super().token_bytes(ids))]


def test_a_decode_that_loses_a_byte_is_caught():
    checker = check_samples(LocalExecutor(LossyDecode(spec="fake:lossy")),
                            LocalExecutor(LossyDecode(spec="fake:lossy")), _samples())
    assert checker.roundtrip
    assert checker.counts.violations["roundtrip"] == len(TEXTS)
    assert {c for c in CHECKS if checker.counts.violations[c]} == {"roundtrip"}
    record = checker.findings[0]
    assert record["check"] == "roundtrip" and record["kind"] == "ids"
    assert record["byte_offset"] == TEXTS[0].encode().index(b"e")


def test_roundtrip_passes_for_a_correct_decoder_and_is_skipped_without_decode(planted, build):
    fake = check_samples(LocalExecutor(FakeEngine()), LocalExecutor(FakeEngine()), _samples())
    assert fake.counts.checked["roundtrip"] == len(TEXTS) and fake.counts.total_violations == 0
    plugin = check_samples(*build(f"{planted}:correct"), _samples())
    assert not plugin.roundtrip and plugin.counts.checked["roundtrip"] == 0


# --- the command -----------------------------------------------------------------

def test_check_command_clean_engine_exits_0(tmp_path, planted, corpus):
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{planted}:correct", "--corpus", str(corpus), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((out / "check.json").read_text())
    stress = report["stress"]  # on by default: big batches and threshold inputs after the corpus
    assert stress["samples"] > 100_000 and stress["threshold"]["ended"] == "done" and not stress["violations"]
    assert report["counts"]["samples"] == len(TEXTS) + stress["samples"]
    assert sum(report["counts"]["violations"].values()) == 0 and report["counts"]["checked"]["stress"] > 100_000
    assert report["engine"]["spec"] == f"{planted}:correct"
    assert (out / "divergences.jsonl").read_text() == ""
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["counts"]["verified"] == len(TEXTS) + stress["samples"]
    assert manifest["reference"]["spec"] == f"{planted}:correct"
    assert manifest["engine_notes"][f"{planted}:correct"]["isolated"] is True  # crash isolation by default
    assert (out / "summary.md").read_text().startswith("# verify check: PASS")


def test_check_command_finds_hidden_state_exits_1(tmp_path, planted, corpus):
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{planted}:sticky", "--corpus", str(corpus), "--out", str(out),
                   "--limit", "5", "--no-stress")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert len(records) == 5 and {r["check"] for r in records} == {"history"}
    assert all(r["schema"] == SCHEMA and r["kind"] == "ids" for r in records)
    assert json.loads((out / "manifest.json").read_text())["counts"]["diverged"] == 5


def test_check_command_reports_a_bad_record_and_goes_on(tmp_path, planted, write_jsonl):
    corpus = write_jsonl([{"id": "a", "text": TEXTS[0]}, {"id": "b", "text": None}, {"id": "c", "text": TEXTS[1]}])
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{planted}:correct", "--corpus", str(corpus), "--out", str(out),
                   "--in-process", "--no-stress")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 bad records" in proc.stdout
    (record,) = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert record["kind"] == BAD_INPUT
    report = json.loads((out / "check.json").read_text())
    assert report["counts"]["samples"] == 2 and report["counts"]["bad_records"] == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["bad_records"] == 1 and manifest["counts"]["verified"] == 2


def test_check_command_usage_errors(tmp_path, planted, corpus):
    proc = run_cli("check", "--corpus", str(corpus))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli("check", "--engine", f"{planted}:nope", "--corpus", str(corpus), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "nope" in proc.stderr
