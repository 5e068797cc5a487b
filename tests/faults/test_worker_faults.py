"""Worker faults (issue 18, item 5): a worker that dies at any point -- while starting its
engines, while running a shard, while idle -- is replaced and its shard runs again; an engine
that cannot start is a finding for that engine and the run goes on; workers that cannot be
started again and again end the run with exit 1 and a manifest; and no child process (shard
workers, isolated engines, ``subprocess:`` engines and their own children) outlives a run,
however it ends. Each test lists the processes the run left behind."""

from __future__ import annotations

import os
import signal

import pytest

from faults.helpers import (GATE, GATED_SHARD, SIGNALS, committed, findings, hang_spec, last_attempt, left_behind,
                            manifest, run, shard_workers, start, started, tagged_env, wait_until, write_plugins)
from test_pipeline import PLUGIN, results
from verify.executors.workers import PREFETCH

pytestmark = pytest.mark.faults

LIMIT = "400"  # the first 400 documents of the default corpus: 25 shards
SHARDS = 25
GATED = "python:fault_plugin:gated"
PLANTED = "python:pipeline_plugin:planted"


@pytest.fixture
def plugins(plugin_dir, tiny_tokenizer_json):
    write_plugins(plugin_dir, tiny_tokenizer_json)
    (plugin_dir / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    return plugin_dir


def argv(tiny_spec, out, *candidates_and_options):
    return ["run", "--reference", tiny_spec, "--corpus", "default", "--limit", LIMIT, "--out", str(out),
            "--no-progress", "--minimize-budget", "0", *candidates_and_options]


def test_a_worker_killed_while_idle_is_replaced_and_every_shard_runs(tiny_spec):
    """Before: the next shard sent to the dead worker ended the run as a harness bug
    (BrokenPipeError, exit 3)."""
    from verify.corpora.shards import GeneratedShard
    from verify.executors.pool import EngineOptions
    from verify.executors.workers import ProcessShards, WorkerSetup
    from verify.pipeline.records_task import records_task

    shards = [(i, GeneratedShard("generated", start=16 * i, stop=16 * (i + 1), generator=(0, 64, 0)))
              for i in range(4)]
    runner = ProcessShards(WorkerSetup((tiny_spec,), (), EngineOptions(isolate=False), records_task), 2)
    runner.start()
    try:
        victim = runner._workers[0].proc
        os.kill(victim.pid, signal.SIGKILL)
        victim.join()
        got = []
        runner.run(shards, lambda result: got.append(result.index), lambda index: None)
    finally:
        runner.close()
    assert sorted(got) == list(range(4)) and runner.failures == []
    assert any("died while idle" in event and "replaced" in event for event in runner.events), runner.events


def test_a_worker_killed_while_starting_its_engines_is_replaced(tmp_path, plugins, tiny_spec):
    """Before: 'a worker died while starting its engines (exit code -9)', exit 2, no manifest."""
    whole = tmp_path / "whole"
    assert run(argv(tiny_spec, whole, "--candidate", "python:fault_plugin:kills_its_worker", "--candidate",
                    PLANTED, "--workers", "2"), tagged_env()).returncode == 1
    out = tmp_path / "out"
    env = tagged_env(KILL_WORKER="once", KILL_WORKER_ONCE=str(tmp_path / "killed-once"))
    proc = run(argv(tiny_spec, out, "--candidate", "python:fault_plugin:kills_its_worker", "--candidate", PLANTED,
                    "--workers", "2"), env)
    assert proc.returncode == 1, proc.stderr  # the planted divergences, as in the undisturbed run
    assert proc.stderr.strip() == ""
    assert (tmp_path / "killed-once").exists()
    got, expected = results(out), results(whole)
    assert got[0]["complete"] and got[0]["counts"] == expected[0]["counts"] and got[1] == expected[1]
    events = last_attempt(out)["events"]
    assert any("died while starting its engines" in e and "replaced" in e for e in events), events
    assert left_behind(env) == []


def test_workers_that_cannot_start_again_and_again_end_the_run_with_exit_1_and_a_manifest(
        tmp_path, plugins, tiny_spec):
    """Before: exit 2 (taken for a configuration error), no manifest."""
    out = tmp_path / "out"
    env = tagged_env(KILL_WORKER="always")
    proc = run(argv(tiny_spec, out, "--candidate", "python:fault_plugin:kills_its_worker", "--workers", "2"), env)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "harness bug" not in proc.stderr
    m = manifest(out)
    assert m["complete"] is False and m["shards"]["committed"] == 0
    failed = m["shards"]["failed"]
    assert len(failed) == SHARDS and all("could start its engines" in f["reason"] for f in failed), failed[:1]
    events = last_attempt(out)["events"]
    deaths = [e for e in events if e.startswith("worker-") and "died while starting its engines" in e]
    assert len(deaths) == 6, events  # 3 per slot, 2 slots
    assert left_behind(env) == []


def test_an_engine_killed_while_loading_is_a_finding_and_the_run_goes_on_with_the_others(
        tmp_path, plugins, tiny_spec):
    """Before: 'engine ... died while loading (killed by SIGKILL)', exit 2, nothing run."""
    out = tmp_path / "out"
    env = tagged_env()
    proc = run(argv(tiny_spec, out, "--candidate", "python:fault_plugin:dies_loading", "--candidate", PLANTED,
                    "--workers", "2"), env)
    assert proc.returncode == 1, proc.stderr
    m = manifest(out)
    assert m["complete"] and m["counts"]["verified"] == 0 and m["counts"]["crash"] > 0
    records = findings(out)
    dead = [r for r in records if r["engine"] == "python:fault_plugin:dies_loading"]
    assert dead and all(r["kind"] == "crash" and "did not start" in r["error"]["message"] for r in dead)
    assert any(r["engine"] == PLANTED and r["kind"] == "ids" for r in records)  # the others ran
    notes = m["engine_notes"]["python:fault_plugin:dies_loading"]
    assert "did not start" in notes["did_not_start"]
    assert left_behind(env) == []


def test_shard_workers_killed_mid_shard_are_replaced_and_the_shard_runs_again(tmp_path, plugins, tiny_spec):
    """Every shard is committed but the gated one, which waits in its engine, and the one
    prefetched behind it; then every shard worker is killed mid-shard: what they held runs
    again on their replacements."""
    whole = tmp_path / "whole"
    assert run(argv(tiny_spec, whole, "--candidate", GATED, "--candidate", PLANTED, "--workers", "2"),
               tagged_env()).returncode == 1
    out = tmp_path / "out"
    block = tmp_path / "block"
    block.touch()
    env = tagged_env(PLANT_BLOCK=str(block))
    proc = start(argv(tiny_spec, out, "--candidate", GATED, "--candidate", PLANTED, "--workers", "2",
                      "--timeout", "3600"), env)
    try:
        wait_until(proc, lambda: committed(out) >= SHARDS - PREFETCH and GATED_SHARD in started(out))
        for worker in shard_workers(proc):
            worker.kill()
        block.unlink()
        assert proc.wait(timeout=300) == 1, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    got, expected = results(out), results(whole)
    assert got[0]["complete"] and got[0]["counts"] == expected[0]["counts"] and got[1] == expected[1]
    events = last_attempt(out)["events"]
    assert any("on shard generated:" in e and "retried with isolated engines" in e for e in events), events
    assert left_behind(env) == []


def test_a_hung_subprocess_engine_and_its_child_do_not_outlive_the_run(tmp_path, plugins, tiny_spec):
    """The isolated worker holding a hung ``subprocess:`` engine is killed at --timeout (the
    engine's own timeout is longer). Before: the engine process and its child lived on with
    parent 1."""
    out = tmp_path / "out"
    env = tagged_env()
    proc = run(argv(tiny_spec, out, "--candidate", hang_spec(plugins, "timeout=600"), "--timeout", "3",
                    "--workers", "2"), env)
    assert proc.returncode == 1, proc.stderr
    timeouts = [r for r in findings(out) if r["kind"] == "timeout"]
    assert len(timeouts) == 1 and GATE in str(timeouts[0]["input"])
    assert left_behind(env) == []


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_no_child_outlives_a_run_ended_by_a_signal(tmp_path, plugins, tiny_spec, name):
    """The driver alone gets the signal while a shard waits in its engine (shard workers,
    isolated engines, a ``subprocess:`` engine and its own child all running). Before: after
    kill -9 of the driver, processes lived on."""
    out = tmp_path / "out"
    block = tmp_path / "block"
    block.touch()
    env = tagged_env(PLANT_BLOCK=str(block))
    proc = start(argv(tiny_spec, out, "--candidate", GATED, "--candidate", hang_spec(plugins), "--workers", "2",
                      "--timeout", "3600"), env)
    try:
        wait_until(proc, lambda: committed(out) >= 3 and GATED_SHARD in started(out))
        proc.send_signal(SIGNALS[name])
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        block.unlink()
    assert code == {"SIGKILL": -9, "SIGTERM": 143, "SIGINT": 130}[name], proc.stderr.read()
    assert left_behind(env) == []
