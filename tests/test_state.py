"""State is part of every finding: history- and batch-dependent bugs found by the hunts alone,
kept with the calls that led to them, and minimised to those calls.

The planted engines are the real reference (tiktoken on cl100k_base) with one piece of state
(``verify.engines.planted.stateful``): a result cache keyed on a whitespace run without the
character after it (``' '×N`` wrong after ``' '×N + 'a'``), and a batch call that crashes when a
batch holds at least K digit runs of at least L characters. N, K and L are drawn at random here:
the hunts are told nothing."""

from __future__ import annotations

import json
import random

import pytest

from conftest import run_cli
from verify.executors.fresh import FreshReplayer
from verify.history import History
from verify.sample import Sample

pytestmark = pytest.mark.slow

REFERENCE = "tiktoken:cl100k_base"
RUN_CACHE = "python:verify.engines.planted.stateful:run_cache"
BATCH_CRASH = "python:verify.engines.planted.stateful:batch_crash"


def clusters(out) -> list[dict]:
    return json.loads((out / "clusters.json").read_text())["clusters"]


def history_of(cluster: dict) -> History:
    return History.from_json(cluster["example_minimized"]["history"])


def assert_minimal_history(out, n: int) -> None:
    """One history cluster, its minimised history two calls: the poison (a run of N and one other
    character) and the victim (the run of N alone)."""
    found = [c for c in clusters(out) if c["cause_kind"] == "history"]
    assert len(found) == 1, [(c["key"], c["name"]) for c in clusters(out)]
    (cluster,) = found
    assert cluster["key"].startswith("ids/history/space*·") and cluster["key"].endswith(">space*")
    history = history_of(cluster)
    assert len(history.calls) == 2 and history.victim == (1, 0), history.describe()
    poison, victim = history.calls[0][0].text, history.calls[1][0].text
    assert victim == victim[0] * n and poison[:n] == victim and len(poison) == n + 1, history.describe()
    assert all(len(s.text) <= n + 2 for call in history.calls for s in call)


def test_a_fresh_engine_is_fresh_and_a_replay_brings_the_state_back(monkeypatch):
    n = random.randint(1000, 9000)
    monkeypatch.setenv("STATE_FAULT_N", str(n))
    replayer = FreshReplayer(RUN_CACHE, timeout_s=60)
    try:
        poison, victim = Sample.plain("p", " " * n + "a"), Sample.plain("v", " " * n)
        first, second = replayer.replay_many([[[victim]], [[poison], [victim]]])
        alone, after = first[0][0], second[1][0]
        again = replayer.replay([[victim]])[0][0]  # the instance that saw the poison is gone
        assert alone.tolist() == again.tolist() != after.tolist()
        # an engine with no thread or process of its own is forked from its never-called template
        # (numpy's idle BLAS pool must not make every replay a new interpreter)
        assert replayer.mode == "fork", replayer.notes()
    finally:
        replayer.close()


def test_check_finds_a_history_fault_and_minimises_it_to_two_calls(tmp_path):
    n = random.randint(1000, 9000)
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", RUN_CACHE, "--reference", REFERENCE, "--check", "stress", "--stress-phase",
                   "state", "--stress-budget", "300", "--limit", "2", "--out", str(out), "--no-progress",
                   "--workers", "1", env={"STATE_FAULT_N": str(n)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert records and all(r["fresh"] == "passes" and r["history"]["reproduced"] for r in records)
    assert_minimal_history(out, n)

    # recorded as a regression case with its two calls, and replayed by verify recheck on a fresh engine
    (key,) = [c["key"] for c in clusters(out) if c["cause_kind"] == "history"]
    cases, env = tmp_path / "cases", {"STATE_FAULT_N": str(n)}
    add = run_cli("recheck", "--add", "run-cache", "--from", str(out), "--cluster", key, "--cases", str(cases), env=env)
    assert add.returncode == 0, add.stdout + add.stderr
    case = json.loads((cases / "run-cache.json").read_text())
    assert len(case["history"]["calls"]) == 2 and case["actual"] != case["expected"]
    again = run_cli("recheck", "--cases", str(cases), "--out", str(tmp_path / "recheck"), "--no-progress", env=env)
    assert again.returncode == 0, again.stdout + again.stderr  # as recorded: the bug, after its history
    assert "after its 2-call history on a fresh engine (alone: agrees)" in again.stdout, again.stdout


def test_the_gates_metamorphic_check_finds_it_too(tmp_path):
    n = random.randint(1000, 9000)
    suite = tmp_path / "suite.toml"
    suite.write_text(f'''
[gate]
name = "state"
reference = "{REFERENCE}"
candidates = ["{RUN_CACHE}"]
workers = 1
minimize_budget = 120

[[check]]
name = "meta"
kind = "metamorphic"
corpus = "smoke"
limit = 2
checks = ["stress"]
stress_phases = ["state"]
stress_seconds = 300
''')
    proc = run_cli("gate", str(suite), "--out", str(tmp_path / "gate"), env={"STATE_FAULT_N": str(n)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert any(c["key"].startswith("ids/history/") for c in doc["clusters"]), [c["key"] for c in doc["clusters"]]
    assert_minimal_history(tmp_path / "gate" / "checks" / "meta", n)


def test_fuzz_finds_it_as_a_history_finding(tmp_path):
    n = random.randint(1000, 9000)
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--reference", REFERENCE, "--candidate", RUN_CACHE, "--budget", "20", "--max-examples", "40",
                   "--out", str(out), "--no-progress", "--workers", "1", "--database", str(tmp_path / "db"),
                   env={"STATE_FAULT_N": str(n)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert_minimal_history(out, n)


def test_a_batch_crash_is_found_through_the_batch_call_and_minimised_to_about_k_inputs_of_l(tmp_path):
    # L past the 100-character families, so the 1,000-character ones (2,000 runs a batch) must find it;
    # the minimiser's trials encode about K x L characters each, so the draws stay within 800 and 600
    k, length = random.randint(100, 800), random.randint(120, 600)
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", BATCH_CRASH, "--reference", REFERENCE, "--check", "stress", "--stress-phase",
                   "families", "--stress-budget", "300", "--limit", "2", "--out", str(out), "--no-progress",
                   "--workers", "1", "--minimize-budget", "900",  # a cap, so that load never cuts the minimiser
                   env={"BATCH_FAULT_K": str(k), "BATCH_FAULT_L": str(length)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (cluster,) = [c for c in clusters(out) if c["cause_kind"] == "batch"]
    assert cluster["key"] == "error/BatchCallFailed/batch/digit*"
    history = history_of(cluster)
    (call,) = history.calls
    assert history.victim == (0, None)  # the call itself failed
    # k digit runs of exactly L characters: the smallest batch that still crashes (which digit each
    # run repeats is the stress family's, e.g. three '0' runs among the '1' runs for some k and L)
    assert len(call) == k and all(len(s.text) == length and s.text == s.text[0] * length and s.text[0].isdigit()
                                  for s in call), history.describe()
