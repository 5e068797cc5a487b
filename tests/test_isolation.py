"""Engines that segfault, abort, hang, leak or raise: each is one finding carrying
its input, the worker is restarted and every other sample is still verified."""

import json
import signal
import subprocess
import sys

import pytest

from conftest import REPO, run_cli
from verify.rundir.attempts import read_attempts

PLANTED = '''
import ctypes, os, time

class Engine:
    def __init__(self, trigger, action):
        self.trigger, self.action = trigger, action
    def encode_batch(self, texts):
        for t in texts:
            if self.trigger in t:
                self.action()
        return [list(t.encode()) for t in texts]

def _segfault():
    ctypes.string_at(0)

def _hang():
    time.sleep(3600)

def _leak():
    hog = []
    while True:
        hog.append(bytearray(64 << 20))

def _raise():
    raise RuntimeError("planted exception")

def bytes_engine():
    return Engine("\\x00never", None)

def segfaults():
    return Engine("TRIGGER", _segfault)

def aborts():
    return Engine("TRIGGER", os.abort)

def hangs():
    return Engine("TRIGGER", _hang)

def leaks():
    return Engine("TRIGGER", _leak)

def raises():
    return Engine("TRIGGER", _raise)
'''


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "planted_engines.py").write_text(PLANTED)
    return "python:planted_engines"


@pytest.fixture
def corpus(write_jsonl):
    texts = [f"ordinary text {i}" for i in range(10)]
    texts[6] = "this one has the TRIGGER inside"
    return write_jsonl([{"id": f"d{i}", "text": t} for i, t in enumerate(texts)])


@pytest.mark.parametrize("factory, kind, extra", [
    ("segfaults", "crash", []),
    ("aborts", "crash", []),
    ("hangs", "timeout", ["--timeout", "3"]),
    ("leaks", None, ["--memory-limit-mb", "1024"]),
    ("raises", "error", []),
])
def test_one_finding_with_input_and_every_other_sample_verified(tmp_path, planted, corpus, factory, kind, extra):
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", f"{planted}:bytes_engine", "--candidate", f"{planted}:{factory}",
                   "--corpus", str(corpus), "--out", str(out), "--batch-size", "4", *extra)
    assert proc.returncode == 1, proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert len(records) == 1, records
    r = records[0]
    # a leak ends as MemoryError (error) or as a kill by the limit (crash): either way one finding
    assert r["kind"] == kind if kind else r["kind"] in ("error", "crash")
    assert r["sample_id"] == "d6" and r["input"] == [["this one has the TRIGGER inside", False]]
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["verified"] == 9 and counts["samples"] == 10
    assert sum(counts[k] for k in ("verified", "diverged", "error", "crash", "timeout", "skipped")) == 10


@pytest.mark.parametrize("factory, kind, extra, event", [
    ("segfaults", "crash", [], "retried with isolated engines"),
    ("hangs", "timeout", ["--timeout", "3"], "an engine call passed --timeout"),
    ("raises", "error", [], None),
])
def test_a_ledger_run_has_its_worker_as_crash_boundary_and_the_same_one_finding(tmp_path, planted, corpus, factory,
                                                                                kind, extra, event):
    """With --ledger the engines run in the shard worker (speculating): a crash or hang there ends
    the worker, and its shard runs again with isolated engines, which find the one sample. Both the
    first pass (the ledger fills) and the re-run (the ledger answers for the reference)."""
    ledger = tmp_path / "ledger"
    for attempt in ("fill", "again"):
        out = tmp_path / attempt
        proc = run_cli("run", "--reference", f"{planted}:bytes_engine", "--candidate", f"{planted}:{factory}",
                       "--corpus", str(corpus), "--out", str(out), "--batch-size", "4", "--ledger", str(ledger),
                       *extra)
        assert proc.returncode == 1, proc.stderr
        (record,) = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
        assert record["kind"] == kind and record["sample_id"] == "d6"
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["counts"]["verified"] == 9 and manifest["counts"]["samples"] == 10
        events = read_attempts(out)[-1]["events"]
        if event is None:  # nothing ended the worker: its engines ran in it
            assert events == [] and manifest["engine_notes"][f"{planted}:{factory}"]["isolated"] == "worker"
        else:
            assert any(event in e for e in events), events
            assert manifest["engine_notes"][f"{planted}:{factory}"]["worker_restarts"] >= 1  # the replacement's
    assert read_attempts(tmp_path / "again")[-1]["ledger"]["hits"] == 10  # the re-run: the reference encoded none


def test_a_call_past_its_deadline_ends_the_process_even_holding_the_gil():
    """A speculating worker's deadline needs no Python to run: a regex backtracking in C (holding the
    GIL) is ended by the kernel with SIGALRM; a call within it leaves the process alone."""
    code = ("import re, sys\n"
            "from verify.executors.call_deadline import ends_process_after\n"
            "with ends_process_after(30):\n"
            "    pass\n"
            "print('within', flush=True)\n"
            "with ends_process_after(0.5):\n"
            "    re.match(r'(a+)+$', 'a' * 64 + 'b')\n"
            "print('never')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == -signal.SIGALRM and proc.stdout == "within\n", (proc.returncode, proc.stdout)


def test_a_crash_message_names_the_signal(tmp_path, planted, corpus):
    out = tmp_path / "out"
    run_cli("run", "--reference", f"{planted}:bytes_engine", "--candidate", f"{planted}:segfaults",
            "--corpus", str(corpus), "--out", str(out))
    (record,) = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert "SIGSEGV" in record["error"]["message"]
    notes = json.loads((out / "manifest.json").read_text())["engine_notes"]
    assert notes[f"{planted}:segfaults"]["worker_restarts"] >= 1


def test_an_engine_that_fails_to_load_is_one_clear_line(tmp_path, planted, corpus):
    proc = run_cli("run", "--reference", f"{planted}:bytes_engine", "--candidate", f"{planted}:nosuchfactory",
                   "--corpus", str(corpus), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "nosuchfactory" in proc.stderr


def test_a_call_between_submit_and_collect_gets_its_own_answer(tiny_spec):
    """Pipelined callers (the vocabulary sweep) ask for token bytes while the next batch
    encodes: each request on the worker's pipe must get its own reply."""
    from verify.executors.isolated import IsolatedExecutor
    from verify.sample import Sample

    ex = IsolatedExecutor(tiny_spec, timeout_s=60)
    try:
        (first,) = ex.encode([Sample.plain("a", "hello world")])
        ex.submit([Sample.plain("b", "numbers 12345"), Sample.plain("c", "x")])
        pieces = ex.token_bytes(first)
        assert b"".join(pieces) == b"hello world"
        second = ex.collect()
        assert len(second) == 2 and b"".join(ex.token_bytes(second[0])) == b"numbers 12345"
        assert ex.restarts == 0
    finally:
        ex.close()
