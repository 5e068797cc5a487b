"""Faults of the driver itself: kill -9 of ``verify run`` while it commits a shard and while it
triages, kill -9 of ``verify gate`` mid-run, and Ctrl-C at seeded moments of a run. Each time the
``--resume`` that follows finishes with the counts and finding keys of an uninterrupted run, no
finding twice, no process left behind, and nothing written outside OUT (every run's home,
temporary folder and working directory lie in a box that must stay empty).

A kill lands at a known point through ``$VERIFY_FAULT_PAUSE`` (``verify.fault_pause``): the stage
waits there while a file exists and says so with ``FILE.reached``."""

from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path

import pytest

from faults.helpers import (GATED_SHARD, TAG, alive, boxed_env, committed, last_attempt, left_behind, manifest, run,
                            start, started, wait_until, write_plugins, written_in)
from test_pipeline import PLUGIN, results
from verify.executors.workers import PREFETCH
from verify.fault_pause import PAUSE_ENV

pytestmark = pytest.mark.faults

LIMIT = "400"  # the first 400 documents of the default corpus: 25 shards
SHARDS = 25
TRIAGE_LIMIT, TRIAGE_SHARDS = "96", 6  # triage runs three times in its test: 6 shards of findings to minimise
GATED = "python:fault_plugin:gated"
PLANTED = "python:pipeline_plugin:planted"
TRIAGE_BUDGET = "600"  # a cap never reached: a minimisation cut by the budget would differ under load
# Ctrl-C once this many shards are committed: three moments drawn from a seeded RNG, each before
# the run can end (the gated shard waits, its worker holds one more prefetched behind it)
SIGINT_AFTER = sorted(random.Random(20240607).sample(range(1, SHARDS - PREFETCH + 1), 3))

SUITE = '''
[gate]
name = "driver-faults"
reference = "{reference}"
candidates = ["{candidate}"]
in_process = true
workers = 2
minimize_budget = 0

[[check]]
name = "slice"
kind = "corpus"
corpus = "default"
limit = {limit}
'''


@pytest.fixture(scope="module")
def plugins(tmp_path_factory, tiny_tokenizer_json) -> Path:
    """The planted engines, in a folder the runs find on their PYTHONPATH (shared by the module's
    uninterrupted runs)."""
    folder = tmp_path_factory.mktemp("plugins")
    write_plugins(folder, tiny_tokenizer_json)
    (folder / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    return folder


def env_in(box: Path, plugins: Path, **extra: str) -> dict[str, str]:
    return boxed_env(box, PYTHONPATH=os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]), **extra)


def argv(tiny_spec, out, *extra, isolated=False, limit=LIMIT):
    """Shard workers run the engines in-process, unless ``isolated`` (each engine its own process)."""
    return ["run", "--reference", tiny_spec, "--candidate", GATED, "--candidate", PLANTED, "--corpus", "default",
            "--limit", limit, "--out", str(out), "--no-progress", *how(isolated), *extra]


def resume_argv(out, *extra, isolated=False):
    return ["run", "--resume", "--out", str(out), "--no-progress", *how(isolated), *extra]


def how(isolated: bool) -> list[str]:
    return ["--workers", "2"] if isolated else ["--workers", "2", "--in-process"]


def uninterrupted(tmp_path_factory, plugins, args) -> Path:
    box = tmp_path_factory.mktemp("box")
    proc = run(args, env_in(box, plugins), cwd=box / "cwd")
    assert proc.returncode == 1, proc.stderr  # the planted divergences
    return Path(args[args.index("--out") + 1])


@pytest.fixture(scope="module")
def whole(tmp_path_factory, plugins, tiny_spec) -> Path:
    """An uninterrupted run, no triage."""
    return uninterrupted(tmp_path_factory, plugins,
                         argv(tiny_spec, tmp_path_factory.mktemp("whole") / "out", "--minimize-budget", "0"))


@pytest.fixture(scope="module")
def whole_triaged(tmp_path_factory, plugins, tiny_spec) -> Path:
    """An uninterrupted run with triage."""
    return uninterrupted(tmp_path_factory, plugins, argv(tiny_spec, tmp_path_factory.mktemp("whole-triaged") / "out",
                                                         "--minimize-budget", TRIAGE_BUDGET, limit=TRIAGE_LIMIT))


def assert_same_results(out: Path, expected: Path) -> None:
    """Complete, the same counts, the same finding keys in the same (plan) order, none twice."""
    (got, keys), (want, expected_keys) = results(out), results(expected)
    assert got["complete"] and got["counts"] == want["counts"]
    assert keys == expected_keys and len(set(keys)) == len(keys)


def assert_nothing_else(tmp_path: Path, box: Path, *expected: str) -> None:
    """Nothing written outside OUT: the box is empty, and beside OUT only what the test put there."""
    assert written_in(box) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["box", "out", *expected])


def kill_9(proc, env) -> None:
    """kill -9 of the driver alone: its workers must end with it."""
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert left_behind(env) == []


def reached(hold: Path) -> Path:
    return hold.with_name(hold.name + ".reached")


def test_kill_9_of_the_driver_during_a_shard_commit_then_resume(tmp_path, plugins, tiny_spec, whole):
    """Killed between writing a shard's findings and its marker: that shard was not committed and
    runs again on resume, its findings replaced, never doubled."""
    out, box, hold = tmp_path / "out", tmp_path / "box", tmp_path / "hold"
    env = env_in(box, plugins, **{PAUSE_ENV: f"commit:{hold}"})
    proc = start(argv(tiny_spec, out, "--minimize-budget", "0"), env, cwd=box / "cwd")
    try:
        wait_until(proc, lambda: committed(out) >= 8)
        hold.touch()  # the next commit waits, half written
        wait_until(proc, reached(hold).exists)
        before = committed(out)
        kill_9(proc, env)
    finally:
        if proc.poll() is None:
            proc.kill()
        hold.unlink(missing_ok=True)
    assert 8 <= before < SHARDS and committed(out) == before and manifest(out)["complete"] is False
    resumed = run(resume_argv(out, "--minimize-budget", "0"), env_in(box, plugins), cwd=box / "cwd")
    assert resumed.returncode == 1, resumed.stderr
    assert_same_results(out, whole)
    m = manifest(out)
    assert m["resumed"] and m["resume"]["shards_run_after_resume"] == SHARDS - before
    assert m["resume"]["shards_redone"] >= 1  # the shard killed in its commit ran again
    assert_nothing_else(tmp_path, box, "hold.reached")


def test_kill_9_of_the_driver_during_triage_then_resume(tmp_path, plugins, tiny_spec, whole_triaged):
    """Killed in triage once it has minimised, its engines (isolated: processes of their own) still
    running: they end with it; the resume runs no shard, triages again (the killed triage's spill
    removed) and ends with the triage of an uninterrupted run."""
    out, box, hold = tmp_path / "out", tmp_path / "box", tmp_path / "hold"
    hold.touch()
    env = env_in(box, plugins, **{PAUSE_ENV: f"triage:{hold}"})
    proc = start(argv(tiny_spec, out, "--minimize-budget", TRIAGE_BUDGET, isolated=True, limit=TRIAGE_LIMIT), env,
                 cwd=box / "cwd")
    try:
        wait_until(proc, reached(hold).exists)
        assert committed(out) == TRIAGE_SHARDS and list(out.glob(".triage-signatures.*"))
        assert not (out / "clusters.json").exists()
        assert [p for p in alive(env[TAG]) if p.pid != proc.pid]  # the triage's engine workers
        kill_9(proc, env)
    finally:
        if proc.poll() is None:
            proc.kill()
        hold.unlink(missing_ok=True)
    resumed = run(resume_argv(out, "--minimize-budget", TRIAGE_BUDGET, isolated=True), env_in(box, plugins),
                  cwd=box / "cwd")
    assert resumed.returncode == 1, resumed.stderr
    assert_same_results(out, whole_triaged)
    assert manifest(out)["resume"]["shards_run_after_resume"] == 0
    for name in ("triage.jsonl", "clusters.json"):
        assert (out / name).read_bytes() == (whole_triaged / name).read_bytes(), name
    assert not list(out.glob(".triage-signatures.*"))  # the killed triage's spill is gone too
    assert_nothing_else(tmp_path, box, "hold.reached")


def gate_results(out: Path) -> tuple[dict, list[str]]:
    doc = json.loads((out / "gate.json").read_text())
    check = {k: v for k, v in doc["checks"][0].items() if k in ("name", "status", "counts", "problems")}
    verdict = {"verdict": doc["verdict"], "clusters": sorted(c["key"] for c in doc["clusters"]), "check": check}
    return verdict, results(out / "checks" / "slice")[1]


def test_kill_9_of_a_gate_mid_run_then_resume(tmp_path, plugins, tiny_spec):
    """``verify gate`` killed while its corpus check commits a shard; ``--resume`` continues that
    check's run and judges it as the uninterrupted gate did."""
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(reference=tiny_spec, candidate=PLANTED, limit=LIMIT))
    box, hold, out, whole_out = tmp_path / "box", tmp_path / "hold", tmp_path / "out", tmp_path / "whole"
    whole = run(["gate", str(suite), "--out", str(whole_out)], env_in(box, plugins), cwd=box / "cwd")
    assert whole.returncode == 1, whole.stderr  # the planted cluster fails the gate
    env = env_in(box, plugins, **{PAUSE_ENV: f"commit:{hold}"})
    proc = start(["gate", str(suite), "--out", str(out)], env, cwd=box / "cwd")
    try:
        wait_until(proc, lambda: committed(out / "checks" / "slice") >= 5)
        hold.touch()
        wait_until(proc, reached(hold).exists)
        kill_9(proc, env)
    finally:
        if proc.poll() is None:
            proc.kill()
        hold.unlink(missing_ok=True)
    assert not (out / "gate.json").exists()
    resumed = run(["gate", str(suite), "--out", str(out), "--resume"], env_in(box, plugins), cwd=box / "cwd")
    assert resumed.returncode == 1, resumed.stderr
    got, keys = gate_results(out)
    want, expected_keys = gate_results(whole_out)
    assert got == want and got["clusters"]
    assert keys == expected_keys and len(set(keys)) == len(keys)
    assert "resumed" in json.loads((out / "gate.json").read_text())["checks"][0]["note"]
    assert_nothing_else(tmp_path, box, "hold.reached", "suite.toml", "whole")


@pytest.mark.parametrize("after", SIGINT_AFTER, ids=lambda k: f"after-{k}-shards")
def test_sigint_at_a_seeded_moment_exits_130_then_resume_equals_an_uninterrupted_run(
        tmp_path, plugins, tiny_spec, whole, after):
    """Ctrl-C once ``after`` shards are committed (the gated shard waits, so the run cannot end
    first): exit 130, and the resume completes what it left."""
    out, box, block = tmp_path / "out", tmp_path / "box", tmp_path / "block"
    block.touch()
    env = env_in(box, plugins, PLANT_BLOCK=str(block))
    proc = start(argv(tiny_spec, out, "--minimize-budget", "0", "--timeout", "3600"), env, cwd=box / "cwd")
    try:
        wait_until(proc, lambda: committed(out) >= after)
        proc.send_signal(signal.SIGINT)
        # the driver has stopped taking results: the gated shard may go on (its worker, told to
        # close, would otherwise be waited for, then killed), it is not committed
        wait_until(proc, lambda: "interrupted" in status(out))
        block.unlink()
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        block.unlink(missing_ok=True)
    assert code == 130, proc.stderr.read()
    assert left_behind(env) == []
    interrupted = committed(out)
    assert after <= interrupted < SHARDS and GATED_SHARD not in _markers(out)
    assert last_attempt(out)["interrupted"] is True and started(out)
    resumed = run(resume_argv(out, "--minimize-budget", "0"), env_in(box, plugins), cwd=box / "cwd")
    assert resumed.returncode == 1, resumed.stderr
    assert_same_results(out, whole)
    assert manifest(out)["resume"]["shards_run_after_resume"] == SHARDS - interrupted
    assert_nothing_else(tmp_path, box)


def status(out: Path) -> str:
    return (out / "status").read_text() if (out / "status").is_file() else ""


def _markers(out: Path) -> set[int]:
    return {int(p.name.split(".")[0]) for p in (out / "shards").glob("[0-9]*[0-9].json")}
