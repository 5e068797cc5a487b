"""`verify check` on the one pipeline: corpus shards and the stress phases as shards, the engine
and its twin in every worker. The same counts and findings for 1 and 2 workers and after a
kill -9 and --resume; an empty corpus is an error; a stress budget that left a phase empty
says so. Also `verify replay --edits`, the other single-engine hunt: candidate x seed-slice
shards, the same findings for 1 and 2 workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from conftest import REPO, run_cli
from planted import CONCAT_SESSION_PLUGIN
from verify.adversarial.stress.shapes import BIG_BATCH_SIZES

PLANTED = '''
import os, time

class Mixed:
    """Bugs that follow from the input alone, so any split over workers finds the same:
    a hidden state only the warm-up's run of 5000 'a' sets (then texts whose length is a
    multiple of 3 lose their last id: ``history``), and in a call of several texts those
    whose length is a multiple of 5 get an extra id (``batch``). $PLANT_SLEEP_S slows
    every call (to kill a run half-way)."""
    def __init__(self):
        self.long_mode = False
        self.sleep = float(os.environ.get("PLANT_SLEEP_S", "0"))
    def encode_batch(self, texts):
        if self.sleep:
            time.sleep(self.sleep)
        out = []
        for t in texts:
            ids = list(t.encode())
            if self.long_mode and len(t) % 3 == 0 and ids:
                ids = ids[:-1]
            if len(texts) > 1 and len(t) % 5 == 0:
                ids = ids + [0]
            out.append(ids)
            if t == "a" * 5000:
                self.long_mode = True
        return out

class Correct:
    def encode_batch(self, texts):
        return [list(t.encode()) for t in texts]

def mixed():
    return Mixed()

def correct():
    return Correct()
'''


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "check_hunt_plugin.py").write_text(PLANTED)
    return "python:check_hunt_plugin"


def check_args(engine, out, *extra):
    # no triage: these tests compare the counts and findings of runs, not their minimisation
    return ["check", "--engine", engine, "--corpus", "smoke", "--no-stress", "--out", str(out), "--no-progress",
            "--in-process", "--minimize-budget", "0", *extra]


def results(out):
    manifest = json.loads((out / "manifest.json").read_text())
    keys = [json.loads(line)["finding_key"] for line in (out / "divergences.jsonl").read_text().splitlines() if line]
    report = json.loads((out / "check.json").read_text())
    return manifest, keys, report


def markers(out):
    return len(list((out / "shards").glob("[0-9]*[0-9].json"))) if (out / "shards").is_dir() else 0


def test_one_and_two_workers_give_the_same_counts_and_findings(tmp_path, planted):
    seen = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        proc = run_cli(*check_args(f"{planted}:mixed", out, "--workers", str(workers)))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        manifest, keys, report = results(out)
        assert manifest["complete"] and manifest["hunt"] == "check"
        assert manifest["shards"]["committed"] == manifest["shards"]["total"] > 5  # the smoke corpus' shards
        seen.append((manifest["counts"], keys, report["counts"], manifest["check"]))
    counts, keys, check_counts, section = seen[0]
    assert counts["samples"] == 200 and counts["diverged"] > 10 and counts["verified"] > 10
    assert len(keys) == counts["findings"] == len(set(keys))
    violated = {k for k, n in check_counts["violations"].items() if n}
    assert violated == {"history", "batch"}, check_counts
    assert section["counts"] == {k: v for k, v in check_counts.items() if k != "bad_records"}
    assert section["stress"] is None and "stress" not in section["checks"]
    for other in seen[1:]:
        assert other[0] == counts and other[1] == keys and other[2] == check_counts  # same findings, plan order


def test_kill_9_half_way_then_resume_equals_an_uninterrupted_run(tmp_path, planted):
    engine = f"{planted}:mixed"
    whole = tmp_path / "whole"
    assert run_cli(*check_args(engine, whole, "--workers", "2")).returncode == 1
    expected_manifest, expected_keys, expected_report = results(whole)
    total = expected_manifest["shards"]["total"]

    out = tmp_path / "killed"
    env = {**os.environ, "PLANT_SLEEP_S": "0.002"}  # slower, never done before the kill
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", *check_args(engine, out, "--workers", "2")],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and markers(out) < 2:  # the rest is left to the resume
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its shard workers and their engines
    proc.wait()
    committed = markers(out)
    assert 0 < committed < total
    assert not (out / "check.json").exists()  # finish never ran

    resumed = run_cli("check", "--resume", "--out", str(out), "--no-progress", "--in-process")
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    manifest, keys, report = results(out)
    assert manifest["counts"] == expected_manifest["counts"]
    assert Counter(keys) == Counter(expected_keys) and len(set(keys)) == len(keys)
    assert report["counts"] == expected_report["counts"] and manifest["check"] == {
        **expected_manifest["check"], "warm_engine_notes": manifest["check"]["warm_engine_notes"]}
    assert manifest["complete"] and manifest["resumed"]
    assert manifest["resume"]["shards_run_after_resume"] == total - committed


def test_a_resume_with_other_checks_is_refused(tmp_path, planted):
    out = tmp_path / "out"
    assert run_cli(*check_args(f"{planted}:correct", out, "--workers", "1", "--limit", "20")).returncode == 0
    proc = run_cli("check", "--resume", "--out", str(out), "--no-progress", "--check", "repeat")
    assert proc.returncode == 2 and "start a new run" in proc.stderr, proc.stderr
    again = run_cli("check", "--resume", "--out", str(out), "--no-progress", "--in-process")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((out / "manifest.json").read_text())["resume"]["shards_run_after_resume"] == 0


def test_an_empty_corpus_is_a_corpus_error(tmp_path, planted):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    proc = run_cli("check", "--engine", f"{planted}:correct", "--corpus", str(empty), "--no-stress",
                   "--out", str(tmp_path / "o"), "--in-process", "--no-progress")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "no samples" in proc.stderr


def test_a_stress_budget_that_ends_at_once_still_checks_the_first_unit_of_every_phase(tmp_path, planted):
    """A verdict never rests on the machine's load: however small the budget (or busy the
    machine), each stress phase checks its first unit -- one big batch, one family batch, one
    victim, one threshold input -- and says where the budget ended it."""
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{planted}:correct", "--corpus", "smoke", "--limit", "4", "--check",
                   "stress", "--stress-budget", "1e-9", "--out", str(out), "--in-process", "--no-progress",
                   "--workers", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert [s["path"] for s in plan["shards"]][-4:] == ["stress:batches", "stress:families", "stress:state",
                                                        "stress:thresholds"]  # shards of their own
    stress = json.loads((out / "check.json").read_text())["stress"]
    assert [b["size"] for b in stress["batches"]] == [BIG_BATCH_SIZES[0]]
    assert len(stress["families"]["batches"]) == 1 and stress["families"]["ended"] == "time"
    assert stress["state"]["groups"] == 1 and stress["state"]["ended"] == "time"
    assert stress["threshold"]["inputs"] == 1 and stress["threshold"]["ended"] == "time"
    report = json.loads((out / "check.json").read_text())
    assert not report.get("notes") and "budget left no time" not in proc.stderr


# --- verify replay --edits -------------------------------------------------------------

SESSIONS = CONCAT_SESSION_PLUGIN + '''
class Engine:
    def open_session(self, state=None): return Concat()

def concat(): return Engine()

class Stateless:
    def encode_batch(self, texts): return [enc(t) for t in texts]

def stateless(): return Stateless()
'''


@pytest.fixture
def sessions(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "edits_plugin.py").write_text(SESSIONS.replace("PATH", repr(str(tiny_tokenizer_json))))
    return "python:edits_plugin"


def test_edit_slices_give_the_same_findings_for_one_and_two_workers(tmp_path, tiny_spec, sessions):
    seen = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        proc = run_cli("replay", "--engine", f"{sessions}:concat", "--reference", tiny_spec, "--edits", "120",
                       "--seed", "3", "--out", str(out), "--in-process", "--no-progress", "--minimize-budget", "0",
                       "--workers", str(workers))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        keys = [json.loads(line)["finding_key"] for line in (out / "divergences.jsonl").read_text().splitlines()]
        seen.append((manifest["counts"], keys, manifest["edits"]["engines"]))
        assert manifest["hunt"] == "replay-edits" and manifest["shards"]["total"] == 3  # 120 = 50 + 50 + 20
    counts, keys, engines = seen[0]
    assert len(keys) == counts["findings"] == engines[f"{sessions}:concat"]["findings"] == 3  # one per slice
    assert counts["samples"] == engines[f"{sessions}:concat"]["examples"] == counts["verified"] + counts["diverged"]
    assert seen[1][0] == counts and seen[1][1] == keys


def test_edits_on_a_stateless_engine_is_a_usage_error(tmp_path, tiny_spec, sessions):
    proc = run_cli("replay", "--engine", f"{sessions}:stateless", "--reference", tiny_spec, "--edits", "5",
                   "--out", str(tmp_path / "o"), "--in-process", "--no-progress", "--workers", "1")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "has no sessions" in proc.stderr
