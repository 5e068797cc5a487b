"""``verify run --executor ray`` on a real local Ray cluster: the same counts and findings
as the local executor, an actor killed mid-run changes nothing, a Ray run resumes with
the local executor, a missing engine is one line and exit 2; and the driver commits
each shard once whatever Ray hands back."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time

import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from conftest import REPO, run_cli  # noqa: E402
from test_pipeline import PLUGIN, base_args, results  # noqa: E402
from verify.errors import VerifyError  # noqa: E402

LIMIT = "400"  # the first 400 documents of the default corpus: 25 shards
SHARDS = 25
GATE = "Leeboondstail"  # a word of one document among the first 400 (shard 19)
CRASHER = '''
import os, signal, time
from tokenizers import Tokenizer

class Engine:
    """The tiny tokenizer, segfaulting on any text with a snake in it (2 of the first 400 documents).
    While the file $PLANT_BLOCK names exists, a text holding GATE waits (its shard cannot finish)."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True
    def encode_batch(self, texts):
        if any("\\U0001f40d" in text for text in texts):
            os.kill(os.getpid(), signal.SIGSEGV)
        block = os.environ.get("PLANT_BLOCK")
        while block and os.path.exists(block) and any("GATE" in text for text in texts):
            time.sleep(0.05)
        return [list(e.ids) for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

def crasher():
    return Engine()
'''


@pytest.fixture
def planted(plugin_dir, tiny_tokenizer_json):
    """The planted divergence of test_pipeline, and an engine that segfaults: both candidates."""
    path = repr(str(tiny_tokenizer_json))
    (plugin_dir / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", path))
    (plugin_dir / "ray_crash_plugin.py").write_text(CRASHER.replace("PATH", path).replace("GATE", GATE))
    return "python:pipeline_plugin:planted"


CRASHING = "python:ray_crash_plugin:crasher"


def args(tiny_spec, planted, out, *extra):
    return base_args(tiny_spec, planted, out, "--candidate", CRASHING, "--limit", LIMIT, *extra)


def committed(out):
    return len(list((out / "shards").glob("[0-9]*[0-9].json"))) if (out / "shards").is_dir() else 0


def sessions(out):
    from verify.rundir.attempts import read_attempts

    return read_attempts(out)


def start(argv, env=None):
    return subprocess.Popen([sys.executable, "-m", "verify.cli", *argv], cwd=REPO, env={**os.environ, **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for(proc, out, shards, deadline_s=240):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and proc.poll() is None and committed(out) < shards:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read()


def actor_pids(proc) -> list[int]:
    """The engine actors of a run (processes named ``ray::ShardActor``)."""
    pids = []
    for child in psutil.Process(proc.pid).children(recursive=True):
        try:
            if " ".join(child.cmdline()).startswith("ray::ShardActor"):
                pids.append(child.pid)
        except psutil.Error:
            continue
    return pids


@pytest.fixture
def local_run(tmp_path, tiny_spec, planted):
    out = tmp_path / "local"
    proc = run_cli(*args(tiny_spec, planted, out, "--workers", "2"))
    assert proc.returncode == 1, proc.stderr
    return results(out)


def test_ray_and_local_executors_give_the_same_counts_and_findings(tmp_path, tiny_spec, planted, local_run):
    expected_manifest, expected_keys = local_run
    inline = tmp_path / "inline"
    assert run_cli(*args(tiny_spec, planted, inline, "--workers", "1")).returncode == 1
    out = tmp_path / "ray"
    proc = run_cli(*args(tiny_spec, planted, out, "--executor", "ray", "--ray-actors", "2"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == ""  # Ray starts and stops quietly
    manifest, keys = results(out)
    assert manifest["complete"] and manifest["shards"]["committed"] == manifest["shards"]["total"] == SHARDS
    counts = manifest["counts"]
    assert counts["diverged"] > 10 and len(keys) == counts["findings"] == len(set(keys))
    assert counts["crash"] == 2  # an engine segfault inside an actor is a finding, not a dead actor
    for other_manifest, other_keys in (expected_manifest, expected_keys), results(inline):
        assert manifest["counts"] == other_manifest["counts"]
        assert keys == other_keys  # committed by plan index: the same order, whichever actor ran a shard
    notes = manifest["engine_notes"]
    assert set(notes) == {tiny_spec, planted, CRASHING} and all(n["isolated"] is True for n in notes.values())
    restarts = {spec: n["worker_restarts"] for spec, n in notes.items()}
    assert restarts == {spec: n["worker_restarts"] for spec, n in expected_manifest["engine_notes"].items()}
    assert restarts[CRASHING] > 0 and restarts[tiny_spec] == restarts[planted] == 0
    (session,) = sessions(out)
    assert session["events"] == [] and session["failed"] == []
    markers = [json.loads(p.read_text()) for p in (out / "shards").glob("[0-9]*[0-9].json")]
    assert all(m["worker"].startswith("ray-") for m in markers)


def test_an_actor_killed_mid_run_is_restarted_and_nothing_is_lost_or_counted_twice(
        tmp_path, tiny_spec, planted, local_run):
    expected_manifest, expected_keys = local_run
    out = tmp_path / "ray"
    proc = start(args(tiny_spec, planted, out, "--executor", "ray", "--ray-actors", "2"),
                 env={"PLANT_SLEEP_S": "0.2"})
    try:
        wait_for(proc, out, SHARDS // 4)
        pids = actor_pids(proc)
        assert pids, "no Ray actor found"
        os.kill(pids[0], signal.SIGKILL)
        assert proc.wait(timeout=300) == 1, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    manifest, keys = results(out)
    assert manifest["complete"] and manifest["shards"]["failed"] == []
    assert manifest["counts"] == expected_manifest["counts"]
    assert keys == expected_keys and len(set(keys)) == len(keys)
    (session,) = sessions(out)
    assert any("restarted a dead actor" in event for event in session["events"]), session["events"]


def test_a_ray_run_interrupted_half_way_resumes_with_the_local_executor(tmp_path, tiny_spec, planted, local_run):
    """The run cannot finish before the signal: the shard holding GATE waits while the block
    file exists (and no engine timeout ends that wait), so the signal finds it running
    whatever the machine's load."""
    expected_manifest, expected_keys = local_run
    out = tmp_path / "ray"
    block = tmp_path / "block"
    block.touch()
    proc = start(args(tiny_spec, planted, out, "--executor", "ray", "--ray-actors", "2", "--timeout", "3600"),
                 env={"PLANT_BLOCK": str(block)})
    try:
        wait_for(proc, out, SHARDS // 3)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        block.unlink()
    before = committed(out)
    assert 0 < before < SHARDS
    resumed = run_cli("run", "--resume", "--out", str(out), "--no-progress", "--minimize-budget", "0",
                      "--executor", "local", "--workers", "2")
    assert resumed.returncode == 1, resumed.stderr
    manifest, keys = results(out)
    assert manifest["complete"] and manifest["resumed"]
    assert manifest["counts"] == expected_manifest["counts"]
    assert keys == expected_keys and len(set(keys)) == len(keys)
    assert manifest["resume"]["shards_run_after_resume"] == SHARDS - before


def test_a_missing_engine_is_one_line_and_exit_2_as_with_the_local_executor(tmp_path, tiny_spec):
    missing = f"hf:{tmp_path / 'no-such.tokenizer.json'}"
    lines = []
    for executor in ("local", "ray"):
        proc = run_cli("run", "--reference", tiny_spec, "--candidate", missing, "--corpus", "default",
                       "--limit", "20", "--out", str(tmp_path / executor), "--no-progress", "--executor", executor)
        assert proc.returncode == 2, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        lines.append(line)
    assert lines[0] == lines[1] and "no-such.tokenizer.json" in lines[0]


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    from verify.executors import ray_shards
    from verify.executors.pool import EngineOptions
    from verify.executors.workers import RayOptions, WorkerSetup, make_shard_runner

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    executor = make_shard_runner(WorkerSetup(("a", "b"), (), EngineOptions()), 1, "ray", RayOptions())
    with pytest.raises(VerifyError) as caught:
        executor.start()
    assert str(caught.value) == ray_shards.RAY_MISSING
    assert "pip install 'verify-tokenizers[ray]'" in str(caught.value)


def test_the_driver_commits_each_shard_once_whatever_ray_hands_back(monkeypatch):
    """A retried shard could only be counted twice if two results for one index were
    committed: the driver commits by index, once; a shard that never came back is failed."""
    from verify.corpora.shards import GeneratedShard
    from verify.counts import Counts
    from verify.executors.pool import EngineOptions
    from verify.executors.ray_shards import RayShards
    from verify.executors.workers import RayOptions, WorkerSetup
    from verify.rundir.result import ShardResult

    shards = [(i, GeneratedShard("generated", start=16 * i, stop=16 * (i + 1), generator=(0, 64, 0)))
              for i in range(4)]

    def row(index, actor="ray-a", restarted=False):
        result = ShardResult(index, shards[index][1].id, Counts(samples=16), worker=actor)
        notes = {"e": {"isolated": True, "worker_restarts": 1 if restarted else 0}}
        return {"index": index, "result": pickle.dumps(result), "error": "", "expected": True,
                "notes": pickle.dumps(notes), "actor": actor}

    def rows(tasks, on_start):  # shard 1 twice (a retry that also returned), shard 3 never
        for index, _ in tasks:
            on_start(index)
        yield from [row(0), row(1), row(1, "ray-b", True), row(2, "ray-b", True)]

    executor = RayShards(WorkerSetup(("e",), (), EngineOptions()), RayOptions(cpus_per_actor=2))
    assert executor.setup.engine_options.threads == 2  # engines pinned to the actor's CPUs
    monkeypatch.setattr(executor, "_rows", rows)
    got, started = [], []
    executor.run(shards, lambda r: got.append(r.index), started.append)
    assert got == [0, 1, 2] and started == [0, 1, 2, 3]
    assert [f.index for f in executor.failures] == [3]
    assert any("came back twice" in e for e in executor.events)
    assert executor.notes() == {"e": {"isolated": True, "worker_restarts": 1}}  # merged over actors
