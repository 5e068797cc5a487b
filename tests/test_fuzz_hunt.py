"""`verify fuzz` on the one pipeline: a shard is a strategy x seed x budget. With a seed, 1 and
2 workers -- and a run killed with SIGKILL half-way, then resumed -- give the same findings and
counts; one bug does not hide another inside a shard, a cluster found by several shards is
written once, every chunking threshold gets its own shard, and bad numbers are one line, exit 2."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from verify.adversarial.fuzz import strategies
from verify.adversarial.fuzz.clusters import ClusterMerge
from verify.adversarial.fuzz.search import shard_database
from verify.adversarial.fuzz.hunt import fuzz
from verify.executors.pool import EngineOptions

REFERENCE = "tiktoken:cl100k_base"
SEED = "7"
EXAMPLES = "360"  # 30 per strategy family

PLANTED = '''
import os, re, time
_enc = None

def _encoding():
    global _enc
    if _enc is None:
        from verify.engines import build_engine
        _enc = build_engine("tiktoken:cl100k_base").encoding
    return _enc

class Planted:
    """cl100k with planted bugs. digits: a run of 4 or more ASCII digits whose length is not a
    multiple of 3 is grouped from the right ('1234' -> '1', '234'). percent: any '%' raises.
    cut25k: an input of 25,000 to 99,999 characters is encoded as two calls split at 25,000;
    cut400k: one of 400,000 or more, split at 400,000. $PLANT_SLEEP_S slows every call."""
    def __init__(self, digits=False, percent=False, cut25k=False, cut400k=False):
        self.digits, self.percent, self.cut25k, self.cut400k = digits, percent, cut25k, cut400k
        self.sleep = float(os.environ.get("PLANT_SLEEP_S", "0"))
    def encode_batch(self, texts):
        if self.sleep:
            time.sleep(self.sleep)
        return [self._one(t) for t in texts]
    def _one(self, text):
        enc = _encoding()
        if self.percent and "%" in text:
            raise ValueError("planted: percent sign")
        cut = 25_000 if self.cut25k and 25_000 <= len(text) < 100_000 else \\
            400_000 if self.cut400k and len(text) >= 400_000 else None
        if cut is not None:
            return enc.encode_ordinary(text[:cut]) + enc.encode_ordinary(text[cut:])
        ids = enc.encode_ordinary(text)
        return self._regroup(enc, ids) if self.digits else ids
    @staticmethod
    def _regroup(enc, ids):
        out, run = [], []
        def flush():
            digits = b"".join(enc.decode_single_token_bytes(i) for i in run)
            if len(digits) >= 4 and len(digits) % 3:
                head = len(digits) % 3
                groups = [digits[:head]] + [digits[j:j + 3] for j in range(head, len(digits), 3)]
                out.extend(enc.encode_single_token(g) for g in groups)
            else:
                out.extend(run)
            run.clear()
        for i in ids:
            piece = enc.decode_single_token_bytes(i)
            if piece.isascii() and piece.isdigit():
                run.append(i)
                continue
            if run:
                flush()
            out.append(i)
        if run:
            flush()
        return out

def two_bugs():
    return Planted(digits=True, percent=True)

def thresholds():
    return Planted(cut25k=True, cut400k=True)

def correct():
    return Planted()
'''


def _plant(folder: Path) -> str:
    (folder / "fuzz_hunt_planted.py").write_text(PLANTED)
    return "python:fuzz_hunt_planted"


@pytest.fixture
def planted(plugin_dir):
    return _plant(plugin_dir)


def fuzz_args(candidate: str, out: Path, db: Path, *extra: str) -> list[str]:
    return ["fuzz", "--reference", REFERENCE, "--candidate", candidate, "--out", str(out), "--database", str(db),
            "--seed", SEED, "--max-examples", EXAMPLES, "--budget", "3600", "--no-stress", "--in-process",
            "--no-progress", *extra]


def results(out: Path) -> tuple[dict, list[str]]:
    manifest = json.loads((out / "manifest.json").read_text())
    keys = [json.loads(line)["finding_key"] for line in (out / "divergences.jsonl").read_text().splitlines()]
    return manifest, keys


def markers(out: Path) -> int:
    return len(list((out / "shards").glob("[0-9]*[0-9].json"))) if (out / "shards").is_dir() else 0


def shard_extras(out: Path) -> dict[str, dict]:
    plan = json.loads((out / "plan.json").read_text())
    return {shard["path"]: json.loads((out / "shards" / f"{i:06d}.extra.json").read_text())
            for i, shard in enumerate(plan["shards"])}


@pytest.fixture(scope="module")
def seeded_runs(tmp_path_factory):
    """The same seeded search with 1 worker and with 2 (each with its own, empty example database)."""
    root = tmp_path_factory.mktemp("seeded")
    folder = root / "plugins"
    folder.mkdir()
    candidate = f"{_plant(folder)}:two_bugs"
    env = {"PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    runs = {}
    for workers in ("1", "2"):
        out = root / f"w{workers}"
        proc = run_cli(*fuzz_args(candidate, out, root / f"db{workers}", "--workers", workers), env=env)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        runs[workers] = out
    return root, candidate, env, runs


def _without_seconds(rounds: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rounds]


def test_one_and_two_workers_give_the_same_findings_and_counts(seeded_runs):
    root, _, _, runs = seeded_runs
    (one, one_keys), (two, two_keys) = results(runs["1"]), results(runs["2"])
    assert one_keys and one_keys == two_keys  # the same findings, in the same (plan) order
    assert one["counts"] == two["counts"] and one["counts"]["findings"] == len(one_keys)
    assert one["fuzz"]["clusters"] == two["fuzz"]["clusters"]
    assert _without_seconds(one["fuzz"]["rounds"]) == _without_seconds(two["fuzz"]["rounds"])
    assert one["fuzz"]["seed"] == 7 and not one["fuzz"]["seed_drawn"] and one["fuzz"]["capped"] == []
    assert one["hunt"] == "fuzz" and one["shards"]["total"] == len(strategies.STRATEGIES) == one["shards"]["committed"]
    # each run wrote its shards' example saves into its database, the same ones
    files = [sorted(p.relative_to(root / f"db{w}").as_posix() for p in (root / f"db{w}").rglob("*") if p.is_file())
             for w in ("1", "2")]
    assert files[0] and files[0] == files[1]


def test_a_run_killed_half_way_and_resumed_equals_an_uninterrupted_one(seeded_runs):
    root, candidate, env, runs = seeded_runs
    expected, expected_keys = results(runs["1"])
    out = root / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", *fuzz_args(candidate, out, root / "db-killed",
                                                                              "--workers", "2")],
                            cwd=REPO, env={**os.environ, **env, "PLANT_SLEEP_S": "0.01"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    total = expected["shards"]["total"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and markers(out) < total // 2:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its shard workers
    proc.wait()
    committed = markers(out)
    assert 0 < committed < total
    assert not any(p.is_file() for p in (root / "db-killed").rglob("*"))  # shards save only when merged

    resumed = run_cli("fuzz", "--resume", "--out", str(out), "--database", str(root / "db-killed"), "--in-process",
                      "--no-progress", "--workers", "1", env=env)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    manifest, keys = results(out)
    assert keys == expected_keys
    assert manifest["counts"] == expected["counts"]
    assert manifest["fuzz"]["clusters"] == expected["fuzz"]["clusters"]
    assert manifest["complete"] and manifest["resumed"]
    assert manifest["resume"]["shards_run_after_resume"] == total - committed


def test_a_resume_asks_for_the_same_run_and_finishing_again_changes_nothing(seeded_runs):
    _, _, env, runs = seeded_runs
    out = runs["2"]
    before, keys = results(out)
    refused = run_cli("fuzz", "--resume", "--out", str(out), "--seed", "8", "--no-progress", env=env)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert "seed" in line and "start a new run" in line
    again = run_cli("fuzz", "--resume", "--out", str(out), "--in-process", "--no-progress", env=env)
    assert again.returncode == 1, again.stdout + again.stderr
    after, again_keys = results(out)
    assert again_keys == keys and after["counts"] == before["counts"]
    assert after["fuzz"]["clusters"] == before["fuzz"]["clusters"] and after["resume"]["shards_run_after_resume"] == 0


def test_two_bugs_in_one_shard_are_both_found_and_a_cluster_of_several_shards_is_written_once(seeded_runs):
    _, candidate, _, runs = seeded_runs
    out = runs["1"]
    manifest, _ = results(out)
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    extras = shard_extras(out)
    digits = extras["fuzz:digit_groups#0"]["book"]["written"]
    kinds = {key.split("/")[0] for engine, key, *_ in digits}
    assert kinds == {"ids", "error"}, digits  # the digit bug did not hide the '%' bug in its shard
    text = ["".join(t for t, _ in r["input"]) for r in records]
    assert any(re.search(r"[0-9]{4}", t) for t in text) and any("%" in t for t in text), text
    # the error cluster: written by several shards, one finding in divergences.jsonl
    writers = [shard for shard, extra in extras.items()
               if [candidate, "error/ValueError"] in [w[:2] for w in extra["book"]["written"]]]
    assert len(writers) >= 2, writers
    errors = [r for r in records if r["kind"] == "error"]
    assert len(errors) == 1 and errors[0]["input"] == [["%", False]]
    (cluster,) = [c for c in manifest["fuzz"]["clusters"] if c["cluster"] == "error/ValueError"]
    assert cluster["status"] == "found" and cluster["finding_key"] == errors[0]["finding_key"]
    shard_hits = [c["hits"] for extra in extras.values() for c in extra["book"]["clusters"]
                  if c["engine"] == candidate and c["cluster"] == "error/ValueError"]
    assert cluster["hits"] == sum(shard_hits)  # every shard's hits counted in the one cluster
    assert cluster["masked"] >= len(writers) - 1  # the other shards' written findings: counted, not written
    found = [c for c in manifest["fuzz"]["clusters"] if c["status"] == "found"]
    assert len(found) == len(records) == manifest["counts"]["findings"]


def test_a_bug_at_one_cut_does_not_stop_the_search_at_another(tmp_path, planted):
    """The 25,000-character cut's bug is found first; the 400,000 cut has its own shard and budget,
    so a budget that the first cut's inputs would spend still reaches it."""
    result = fuzz(REFERENCE, [f"{planted}:thresholds"], out_dir=tmp_path / "out", database_dir=None,
                  engine=EngineOptions(isolate=False), max_examples=12, budget_s=1.0, seed=1)
    found = {c["cluster"] for c in result.clusters if c["status"] == "found"}
    assert found == {"ids/stress-only/cut-25000", "ids/stress-only/cut-400000"}, result.clusters
    cuts = {int(r["stress"]["cut"]) for r in result.findings}
    assert cuts == {25_000, 400_000}
    stress = result.manifest["fuzz"]["stress"]
    assert set(stress["threshold"]["cuts"]) == {"25000", "400000"}
    assert all(part["inputs"] > 0 for part in stress["threshold"]["cuts"].values())
    plan = json.loads((tmp_path / "out" / "plan.json").read_text())
    caps = plan["options"]["shard_cap_s"]
    # five stress shards share the stress quarter: big batches, the two cuts, length families, state
    assert caps["stress"] == pytest.approx(0.25 / 5, abs=1e-5) and caps["search"] == pytest.approx(0.75 / 12, abs=1e-5)


def test_a_shard_that_hits_its_time_cap_says_so(tmp_path, planted):
    result = fuzz(REFERENCE, [f"{planted}:correct"], out_dir=tmp_path / "out", database_dir=None,
                  engine=EngineOptions(isolate=False), max_examples=24, budget_s=0.001, seed=1, stress=False)
    shards = [s["path"] for s in json.loads((tmp_path / "out" / "plan.json").read_text())["shards"]]
    assert result.manifest["fuzz"]["capped"] == shards  # 0.001 s over 12 shards: none had time for a round
    assert all(extra["capped"] for extra in shard_extras(tmp_path / "out").values())
    assert result.counts.samples == 0 and not result.found  # nothing searched, nothing counted as verified


@pytest.mark.parametrize("args, word", [
    (["--budget", "nan"], "--budget"),
    (["--budget", "inf"], "--budget"),
    (["--budget", "-5"], "--budget"),
    (["--max-examples", "-1"], "--max-examples"),
    (["--max-examples", "nan"], "--max-examples"),
    (["--seed", "-1"], "--seed"),
    (["--max-findings", "0"], "--max-findings"),
    (["--timeout", "nan"], "--timeout"),
    (["--workers", "0"], "--workers"),
])
def test_bad_numbers_are_one_line_and_exit_2(tmp_path, args, word):
    proc = run_cli("fuzz", "--reference", REFERENCE, "--candidate", "python:nowhere:x", "--out", str(tmp_path / "o"),
                   *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert word in line
    assert not (tmp_path / "o").exists()


def test_a_database_that_is_a_file_is_a_usage_error(tmp_path):
    afile = tmp_path / "db"
    afile.write_text("not a folder")
    proc = run_cli("fuzz", "--reference", REFERENCE, "--candidate", "python:nowhere:x", "--out", str(tmp_path / "o"),
                   "--database", str(afile))
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "--database" in line and "not a directory" in line


# --- the pieces -------------------------------------------------------------------------

def _book(written: list[tuple[str, int]], clusters: list[dict]) -> dict:
    return {"clusters": clusters, "written": [["e", key, chars, 1] for key, chars in written], "unlisted": {}}


def _found(key: str, hits: int, cause: str | None, finding: str, masked: int = 0) -> dict:
    return {"engine": "e", "cluster": key, "status": "found", "hits": hits, "masked": masked, "sample_id": finding,
            "finding_key": finding, "source": "hypothesis", **({"cause": cause, "minimized": [["<", False]]}
                                                                 if cause else {})}


def test_cluster_merge_keeps_one_finding_per_cluster_and_per_cause():
    merge = ClusterMerge(max_findings=2)
    merge.add(_book([("A", 3), ("B", 9)], [_found("A", 2, "c1", "fA1", masked=1), _found("B", 1, None, "fB1")]))
    merge.add(_book([("A", 3), ("C", 1)], [_found("A", 5, "c1", "fA2", masked=4), _found("C", 1, "c1", "fC2")]))
    merge.add(_book([("D", 2), ("B", 9)], [_found("D", 1, "c2", "fD3"), _found("B", 2, None, "fB3", masked=1),
                                           {"engine": "e", "cluster": "E", "status": "pending", "hits": 3,
                                            "masked": 0}]))
    clusters = {c["cluster"]: c for c in merge.resolve().as_list()}
    # B, written by two shards, keeps the first one's finding; the rest of its hits are masked
    assert clusters["B"]["status"] == "found" and clusters["B"]["finding_key"] == "fB1"
    assert clusters["B"]["hits"] == 3 and clusters["B"]["masked"] == 2
    # A and C were written with one cause: C, the smaller reproducer, is kept; A is same-cause
    assert merge.kept == {"fC2", "fB1"}
    assert clusters["C"]["status"] == "found" and clusters["A"]["status"] == "same-cause"
    assert clusters["A"]["same_as"] == "C" and clusters["A"]["hits"] == clusters["A"]["masked"] == 7
    # a third cause is past max_findings: pending, counted
    assert clusters["D"]["status"] == "pending" and merge.over_cap["e"] == 1
    assert clusters["E"]["status"] == "pending" and clusters["E"]["hits"] == 3


def test_a_shard_database_reads_the_folder_as_it_was_and_keeps_its_writes(tmp_path):
    from hypothesis.database import DirectoryBasedExampleDatabase

    folder = DirectoryBasedExampleDatabase(str(tmp_path))
    folder.save(b"k", b"old")
    db = shard_database(str(tmp_path))
    db.save(b"k", b"new")
    db.delete(b"k", b"old")
    assert list(db.fetch(b"k")) == [b"new"] and set(folder.fetch(b"k")) == {b"old"}  # the folder is untouched
    assert db.changes() == {"save": [[b"k".hex(), b"new".hex()]], "delete": [[b"k".hex(), b"old".hex()]]}
