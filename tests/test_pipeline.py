"""The sharded pipeline: the same results for any number of workers, kill -9 and resume,
refusing a resume that would mix results, triage as a repeatable stage, bad records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import REPO, run_cli
from verify.corpora import open_corpus
from verify.corpora.shards import Shard

PLUGIN = '''
import os, time
from tokenizers import Tokenizer

class Engine:
    """The tiny reference tokenizer, with one planted bug: in any text holding 'ß' the
    middle token becomes id 0. $PLANT_SLEEP_S slows every call down (to kill a run mid-way)."""
    def __init__(self, plant):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True
        self.plant = plant
        self.sleep = float(os.environ.get("PLANT_SLEEP_S", "0"))
    def encode_batch(self, texts):
        if self.sleep:
            time.sleep(self.sleep)
        out = []
        for text, enc in zip(texts, self.tok.encode_batch(list(texts), add_special_tokens=False)):
            ids = list(enc.ids)
            if self.plant and "\\u00df" in text and ids:
                ids[len(ids) // 2] = 0
            out.append(ids)
        return out

def planted():
    return Engine(True)
'''


@pytest.fixture
def planted(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    return "python:pipeline_plugin:planted"


def base_args(tiny_spec, planted, out, *extra):
    return ["run", "--reference", tiny_spec, "--candidate", planted, "--corpus", "default", "--out", str(out),
            "--no-progress", "--minimize-budget", "0", *extra]


def results(out):
    manifest = json.loads((out / "manifest.json").read_text())
    keys = [json.loads(line)["finding_key"] for line in (out / "divergences.jsonl").read_text().split("\n") if line]
    return manifest, keys


def test_the_default_corpus_is_cut_into_more_than_100_shards():
    shards = open_corpus("default").shards()
    assert len(shards) >= 100
    assert len({s.id for s in shards}) == len(shards)
    again = Shard.from_json(json.loads(json.dumps(shards[7].to_json())))
    assert again == shards[7] and [s.id for s in again.records()] == [s.id for s in shards[7].records()]


def test_one_two_and_three_workers_give_the_same_counts_and_findings(tmp_path, tiny_spec, planted):
    seen = []
    for workers in (1, 2, 3):
        out = tmp_path / f"w{workers}"
        proc = run_cli(*base_args(tiny_spec, planted, out, "--workers", str(workers)))
        assert proc.returncode == 1, proc.stderr
        manifest, keys = results(out)
        assert manifest["complete"] and manifest["shards"]["committed"] == manifest["shards"]["total"] >= 100
        seen.append((manifest["counts"], keys))
    counts, keys = seen[0]
    assert counts["samples"] == 2003 and counts["diverged"] > 10 and len(keys) == counts["findings"]
    assert len(set(keys)) == len(keys)
    for other_counts, other_keys in seen[1:]:
        assert other_counts == counts
        assert other_keys == keys  # the same findings, in the same (plan) order


def test_kill_9_half_way_then_resume_equals_an_uninterrupted_run(tmp_path, tiny_spec, planted):
    whole = tmp_path / "whole"
    assert run_cli(*base_args(tiny_spec, planted, whole, "--workers", "2")).returncode == 1
    expected_manifest, expected_keys = results(whole)

    out = tmp_path / "killed"
    env = {**os.environ, "PLANT_SLEEP_S": "0.05"}
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", *base_args(tiny_spec, planted, out, "--workers", "2")],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    total = expected_manifest["shards"]["total"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        done = len(list((out / "shards").glob("[0-9]*[0-9].json"))) if (out / "shards").is_dir() else 0
        if done >= total // 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the driver, its shard workers and their engine workers
    proc.wait()
    committed = len(list((out / "shards").glob("[0-9]*[0-9].json")))
    killed = json.loads((out / "manifest.json").read_text())  # written while it ran, a second behind at most
    assert killed["complete"] is False and 0 < killed["shards"]["committed"] <= committed < total
    assert "running" in (out / "status").read_text()

    resumed = run_cli("run", "--resume", "--out", str(out), "--no-progress", "--minimize-budget", "0")
    assert resumed.returncode == 1, resumed.stderr
    manifest, keys = results(out)
    assert manifest["counts"] == expected_manifest["counts"]
    assert Counter(keys) == Counter(expected_keys) and len(set(keys)) == len(keys)
    assert manifest["complete"] and manifest["resumed"]
    assert 0 < manifest["resume"]["shards_run_after_resume"] < total
    assert manifest["resume"]["shards_redone"] >= 1  # shards in flight when it was killed ran again
    assert manifest["resume"]["shards_run_after_resume"] == total - committed


def test_a_resume_with_other_engines_corpora_or_options_is_refused(tmp_path, tiny_spec, planted):
    out = tmp_path / "out"
    assert run_cli(*base_args(tiny_spec, planted, out, "--workers", "1", "--limit", "40")).returncode == 1
    for extra, word in [(["--candidate", tiny_spec.replace("hf:", "hf:") + "?x=1"], "--candidate"),
                        (["--corpus", "smoke"], "--corpus"), (["--limit", "41"], "limit"),
                        (["--batch-size", "7"], "batch_size")]:
        proc = run_cli("run", "--resume", "--out", str(out), "--no-progress", *extra)
        assert proc.returncode == 2, (extra, proc.stderr)
        (line,) = proc.stderr.strip().splitlines()
        assert word in line and "start a new run" in line
    again = run_cli("run", "--resume", "--out", str(out), "--no-progress", "--workers", "2")  # how, not what
    assert again.returncode == 1, again.stderr
    assert json.loads((out / "manifest.json").read_text())["resume"]["shards_run_after_resume"] == 0
    fresh = run_cli(*base_args(tiny_spec, planted, out))
    assert fresh.returncode == 2 and "already holds a run" in fresh.stderr


def test_triage_twice_gives_identical_outputs_and_never_touches_the_findings(tmp_path, tiny_spec, planted):
    out = tmp_path / "out"
    assert run_cli(*base_args(tiny_spec, planted, out, "--workers", "1", "--limit", "150")).returncode == 1
    findings = (out / "divergences.jsonl").read_bytes()
    outputs = []
    for _ in range(2):
        proc = run_cli("triage", str(out), "--minimize-budget", "60", "--in-process")
        assert proc.returncode == 0, proc.stderr
        outputs.append(((out / "triage.jsonl").read_bytes(), (out / "clusters.json").read_bytes()))
        assert (out / "divergences.jsonl").read_bytes() == findings
    assert outputs[0] == outputs[1]
    triaged = [json.loads(line) for line in outputs[0][0].decode().splitlines()]
    keys = [json.loads(line)["finding_key"] for line in findings.decode().splitlines()]
    assert [t["finding_key"] for t in triaged] == keys
    clusters = json.loads(outputs[0][1])["clusters"]
    assert clusters and all(c["example"] for c in clusters)  # every cluster its own minimised reproducer
    assert all("\u00df" in "".join(t for t, _ in c["example"]) for c in clusters)
    manifest = json.loads((out / "manifest.json").read_text())
    # every symptom group minimised (one each); groups with one reproducer are one cluster
    assert manifest["triage"]["minimised"] >= len(clusters) and len(clusters) < manifest["triage"]["symptoms"]


def test_triage_runs_on_a_killed_run_from_its_committed_shards(tmp_path, tiny_spec, planted):
    out = tmp_path / "out"
    assert run_cli(*base_args(tiny_spec, planted, out, "--workers", "1", "--limit", "200")).returncode == 1
    (out / "divergences.jsonl").unlink()  # as if killed before the merge
    proc = run_cli("triage", str(out), "--minimize-budget", "0", "--in-process")
    assert proc.returncode == 0, proc.stderr
    assert len((out / "triage.jsonl").read_text().splitlines()) == json.loads(
        (out / "manifest.json").read_text())["counts"]["findings"]


def test_a_null_parquet_text_and_a_broken_jsonl_line_are_bad_input_findings(tmp_path, tiny_spec, planted):
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.table({"text": ["first", None, "third"]}), parquet)
    jsonl = tmp_path / "j.jsonl"
    jsonl.write_text('{"text": "one"}\n{"text": "tw\n{"text": "three"}\n')
    out = tmp_path / "out"
    common = ["run", "--reference", tiny_spec, "--candidate", planted, "--corpus", str(parquet),
              "--corpus", str(jsonl), "--no-progress"]
    proc = run_cli(*common, "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().split("\n") if line]
    bad = {r["sample_id"]: r["error"]["message"] for r in records if r["kind"] == "bad-input"}
    assert bad == {f"{parquet}:row1": "'text' is null, not text", f"{jsonl}:2": bad[f"{jsonl}:2"]}
    assert "invalid JSON" in bad[f"{jsonl}:2"]
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["bad_records"] == 2 and counts["samples"] == counts["verified"] == 4
    strict = run_cli(*common, "--out", str(tmp_path / "strict"), "--strict")
    assert strict.returncode == 2 and len(strict.stderr.strip().splitlines()) == 1
    assert "p.parquet:row1: 'text' is null" in strict.stderr or "j.jsonl:2: invalid JSON" in strict.stderr


def test_large_files_are_read_by_byte_ranges_with_nothing_lost(tmp_path, monkeypatch):
    from verify.corpora import shards as shard_module

    path = tmp_path / "big.jsonl"
    lines = [json.dumps({"text": f"record {i} " + "x" * (i % 37)}) + "\n" for i in range(2000)]
    path.write_text("".join(lines))
    whole = [s.text for s in open_corpus(str(path)).samples()]
    monkeypatch.setattr(shard_module, "SPLIT_BYTES", 997)  # cuts fall mid-line
    source = open_corpus(str(path))
    assert len(source.shards()) > 50 and all(s.kind == "byte-range" for s in source.shards())
    ranged = list(source.samples())
    assert [s.text for s in ranged] == whole
    offsets = [int(s.id.rsplit("@", 1)[1]) for s in ranged]
    raw = path.read_bytes()
    assert all(raw[o:].startswith(line.encode()) for o, line in zip(offsets, lines))


def test_a_harness_bug_exits_3_with_one_line(monkeypatch, capsys):
    from verify import cli
    from verify.commands import engines

    def broken(args):
        raise RuntimeError("planted harness bug")

    monkeypatch.setattr(engines, "run", broken)
    assert cli.main(["engines"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "harness bug" in err[0] and "planted harness bug" in err[0]
