"""``verify unicode`` on the one pipeline: the same mismatches and counts with 1, 2 and 3
workers, after kill -9 and --resume, and on Ray; a resume of another sweep is refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, run_cli

PLANTED = r"""
import itertools, os, time


class Engine:
    # whitespace / non-whitespace runs, each a length id then its bytes; ``extra`` joins the
    # whitespace class (U+180E as in Unicode < 6.3), ``sleep`` slows every call
    def __init__(self, extra):
        self.extra = extra

    def is_space(self, c):
        return c.isspace() or c in self.extra

    def encode_batch(self, texts):
        time.sleep(float(os.environ.get("UNICODE_PLANT_SLEEP_S", "0")))
        out = []
        for text in texts:
            ids = []
            for _, run in itertools.groupby(text, key=self.is_space):
                chunk = "".join(run).encode()
                ids += [1000 + len(chunk), *chunk]
            out.append(ids)
        return out


def reference():
    return Engine("")


def u180e_is_space():
    return Engine("\u180e")


def nbsp_is_not_space():
    class NoNbsp(Engine):
        def is_space(self, c):
            return c != "\xa0" and super().is_space(c)
    return NoNbsp("")
"""

REF = "python:uhunt_engines:reference"
CANDIDATES = ["python:uhunt_engines:u180e_is_space", "python:uhunt_engines:nbsp_is_not_space"]
RANGE = ["--start", "0", "--stop", "2000", "--shard-code-points", "1024"]  # U+0000..U+1FFF: 8 shards


@pytest.fixture
def engines(plugin_dir):
    (plugin_dir / "uhunt_engines.py").write_text(PLANTED)


def sweep_args(out, *extra):
    return ["unicode", "--reference", REF, *[a for c in CANDIDATES for a in ("--candidate", c)], *RANGE,
            "--out", str(out), "--no-progress", "--in-process", *extra]


def outcome(out):
    """What must not depend on how the sweep was run: per candidate its mismatches and counts."""
    doc = json.loads((out / "unicode.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    keep = ("count", "mismatched", "errors", "pack_only", "whitespace", "by_context", "unicode_version", "probes",
            "code_points")
    return ({spec: {k: r[k] for k in keep} for spec, r in doc["candidates"].items()}, manifest["counts"])


def test_one_two_and_three_workers_give_the_same_sweep(tmp_path, engines):
    seen = []
    for workers in ("1", "2", "3"):
        out = tmp_path / f"w{workers}"
        proc = run_cli(*sweep_args(out, "--workers", workers))
        assert proc.returncode == 1, proc.stderr
        seen.append(outcome(out))
    candidates, counts = seen[0]
    assert candidates[CANDIDATES[0]]["mismatched"] == [[0x180E, 0x180E]]
    assert candidates[CANDIDATES[1]]["mismatched"] == [[0xA0, 0xA0]]
    assert counts["samples"] == 0x2000 and counts["diverged"] == 2
    assert all(other == seen[0] for other in seen[1:])
    manifest = json.loads((tmp_path / "w2" / "manifest.json").read_text())
    assert manifest["hunt"] == "unicode" and manifest["shards"] == {"total": 8, "committed": 8, "failed": []}


def test_kill_9_half_way_then_resume_equals_an_uninterrupted_sweep(tmp_path, engines):
    whole = tmp_path / "whole"
    assert run_cli(*sweep_args(whole, "--workers", "1")).returncode == 1
    expected = outcome(whole)

    out = tmp_path / "killed"
    env = {**os.environ, "UNICODE_PLANT_SLEEP_S": "0.02"}
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", *sweep_args(out, "--workers", "2")], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "shards").is_dir() and len(list((out / "shards").glob("[0-9]*[0-9].json"))) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    committed = len(list((out / "shards").glob("[0-9]*[0-9].json")))
    assert 3 <= committed < 8

    resumed = run_cli("unicode", "--resume", "--out", str(out), "--no-progress", "--in-process", "--workers", "1")
    assert resumed.returncode == 1, resumed.stderr
    assert outcome(out) == expected
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["resumed"] and manifest["resume"]["shards_run_after_resume"] == 8 - committed


def test_a_resume_that_would_change_the_sweep_is_refused(tmp_path, engines):
    out = tmp_path / "out"
    assert run_cli(*sweep_args(out, "--workers", "1")).returncode == 1
    other = run_cli("unicode", "--resume", "--out", str(out), "--stop", "3000", "--no-progress", "--in-process")
    assert other.returncode == 2 and "stop" in other.stderr and "Traceback" not in other.stderr
    run = run_cli("run", "--resume", "--out", str(out), "--no-progress")
    assert run.returncode == 2 and "verify unicode" in run.stderr


@pytest.mark.slow
def test_the_sweep_on_ray_equals_the_local_sweep(tmp_path, engines):
    pytest.importorskip("ray")
    local = tmp_path / "local"
    assert run_cli(*sweep_args(local, "--workers", "2")).returncode == 1
    on_ray = tmp_path / "ray"
    proc = run_cli(*sweep_args(on_ray, "--executor", "ray", "--ray-actors", "2"),
                   env={"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    assert proc.returncode == 1, proc.stderr
    assert outcome(on_ray) == outcome(local)


def test_each_mismatch_is_a_failing_string_minimised_and_clustered_by_cause(tmp_path, engines):
    """Every hunt ends in triage: each mismatching code point is committed as the probe text that
    differs on its own, and the clusters are causes (one per planted table change), each with a
    reproducer that fails alone."""
    from uhunt_engines import nbsp_is_not_space, reference, u180e_is_space

    out = tmp_path / "out"
    assert run_cli(*sweep_args(out, "--workers", "1")).returncode == 1
    doc = json.loads((out / "unicode.json").read_text())
    findings = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    build = {CANDIDATES[0]: u180e_is_space(), CANDIDATES[1]: nbsp_is_not_space()}
    ref = reference()
    for spec, result in doc["candidates"].items():
        mine = [f for f in findings if f["engine"] == spec]
        assert len(mine) == result["count"] > 0  # one failing string per mismatching code point
        for f in mine:
            text = "".join(t for t, _ in f["input"])
            assert build[spec].encode_batch([text]) != ref.encode_batch([text]), f["sample_id"]
    clusters = json.loads((out / "clusters.json").read_text())["clusters"]
    assert sorted(c["engine"] for c in clusters) == sorted(CANDIDATES), [(c["engine"], c["key"]) for c in clusters]
    for c in clusters:
        assert c["example_minimized"] is not None and c["key"].startswith("ids/unicode/whitespace@"), c["key"]
        text = "".join(t for t, _ in c["example_minimized"]["input"])
        assert build[c["engine"]].encode_batch([text]) != ref.encode_batch([text])
    assert (out / "triage.jsonl").read_text().count("\n") == len(findings)
