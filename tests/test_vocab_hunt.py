"""``verify vocab sweep`` on the one pipeline: the same findings, counts and part statistics
with 1, 2 and 3 workers and after kill -9 and --resume; the global --max-findings cap keeps
exactly the findings of the sequential sweep; each worker reads the vocabulary once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from conftest import REPO, run_cli
from verify.engines.registry import parse_spec
from verify.adversarial.vocab.hunt import SHARD_KIND, VocabHunt, plan_shards, vocab_shard
from verify.adversarial.vocab.sweep import SweepPlan, agreed_counts, pair_draws, pair_ids, part_samples
from verify.adversarial.vocab.texts import vocabulary_of
from verify.comparison import Side, compare_batch
from verify.errors import VocabError
from verify.executors.setup import TaskContext, WorkerSetup
from verify.pipeline.hunt import JobOptions

# The tiny tokenizer, faithful except that a text holding MISREAD gets an extra id 0 at its end:
# findings in the tokens part (every context of the few tokens holding it) and in the pairs.
PLUGIN = '''
import os, time
from tokenizers import Tokenizer

PATH = {path!r}
MISREAD = "q"


class Misreads:
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True

    def encode_batch(self, texts):
        time.sleep(float(os.environ.get("VOCAB_PLANT_SLEEP_S", "0")))
        out = []
        for text in texts:
            ids = list(self.tok.encode(text, add_special_tokens=False).ids)
            out.append(ids + [0] if MISREAD in text else ids)
        return out


def misreads():
    return Misreads()
'''
CANDIDATE = "python:vocab_hunt_plant:misreads"
SHARD_SAMPLES = "200"  # the tiny vocabulary in 39 shards


@pytest.fixture
def planted(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "vocab_hunt_plant.py").write_text(PLUGIN.format(path=str(tiny_tokenizer_json)))
    return CANDIDATE


def sweep_args(reference, out, *extra):
    return ["vocab", "sweep", "--reference", reference, "--candidate", CANDIDATE, "--out", str(out), "--no-progress",
            "--in-process", "--minimize-budget", "0", "--shard-samples", SHARD_SAMPLES, *extra]


def markers(out) -> int:
    return len(list((out / "shards").glob("[0-9]*[0-9].json"))) if (out / "shards").is_dir() else 0


def no_seconds(doc):
    """A section without its timings (they are the one thing that depends on how it ran)."""
    if isinstance(doc, dict):
        return {k: no_seconds(v) for k, v in doc.items() if k != "seconds"}
    if isinstance(doc, list):
        return [no_seconds(v) for v in doc]
    return doc


def outcome(out):
    """What must not depend on how the sweep ran: finding keys in order, counts, part statistics, sources."""
    manifest = json.loads((out / "manifest.json").read_text())
    keys = [json.loads(line)["finding_key"] for line in (out / "divergences.jsonl").read_text().splitlines() if line]
    return keys, manifest["counts"], no_seconds(manifest["vocab_sweep"]), no_seconds(manifest["sources"])


# --- the pieces -------------------------------------------------------------------------------

def test_shards_cut_every_part_in_sweep_order(tiny_spec):
    plan = SweepPlan.build(vocabulary_of(parse_spec(tiny_spec)))
    shards = plan_shards(plan, ["tokens", "pairs", "special"], 200)
    assert 20 <= len(shards) <= 60 and len({s.id for s in shards}) == len(shards)
    assert [s.part for s in shards] == sorted((s.part for s in shards),
                                                       key=["tokens", "pairs", "special"].index)
    for part, total in (("tokens", len(plan.text_ids)), ("pairs", len(plan.text_ids)), ("special", 2)):
        ranges = [(s.start, s.stop) for s in shards if s.part == part]
        assert ranges[0][0] == 0 and ranges[-1][1] == total and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(s.kind == SHARD_KIND and s.id.startswith(f"vocab:{s.part}[") for s in shards)
    # consecutive ranges give the whole sequential stream of each part
    draws = pair_draws(plan)
    for part in ("tokens", "pairs", "special"):
        joined = [x.id for s in shards if s.part == part for x in part_samples(plan, part, s.start, s.stop, draws)]
        assert joined == [x.id for x in part_samples(plan, part)] and joined
    assert [p for s in shards if s.part == "pairs" for p in pair_ids(plan, s.start, s.stop, draws)] == pair_ids(plan)


def test_a_batch_that_agrees_is_counted_as_the_full_comparison_counts_it(tiny_spec):
    from verify.engines import build_engine

    engine = build_engine(tiny_spec)
    plan = SweepPlan.build(vocabulary_of(parse_spec(tiny_spec)), limit=40)
    batch = list(part_samples(plan, "tokens"))[:300]
    ref = [np.asarray(ids, dtype=np.uint32) for ids in engine.encode_batch(batch)]
    same = [a.copy() for a in ref]
    sides = [Side("ref", engine.token_bytes), Side("cand", engine.token_bytes)]
    fast = agreed_counts(batch, [ref, same], ["ref", "cand"])
    full, findings = compare_batch(batch, [ref, same], sides)
    assert fast is not None and fast.as_dict() == full.as_dict() and findings == []
    changed = [a.copy() for a in ref]
    changed[7] = np.append(changed[7], np.uint32(0))  # one id more
    assert agreed_counts(batch, [ref, changed], ["ref", "cand"]) is None
    changed = [a.copy() for a in ref]
    changed[3][0] += 1  # same lengths, one id differs
    assert agreed_counts(batch, [ref, changed], ["ref", "cand"]) is None


def test_each_worker_reads_the_vocabulary_once_and_checks_it(tiny_spec, planted, monkeypatch, tmp_path):
    from verify.adversarial.vocab import texts
    from verify.executors.pool import EngineOptions, EnginePool

    hunt = VocabHunt(tiny_spec, [planted], JobOptions(out=tmp_path), shard_samples=200)
    hp = hunt.plan()
    reads = []
    real = texts.vocabulary_of
    monkeypatch.setattr(texts, "vocabulary_of", lambda spec: reads.append(spec) or real(spec))
    pool = EnginePool(EngineOptions(isolate=False))
    try:
        executors = pool.start([tiny_spec, planted])
        context = TaskContext(WorkerSetup((tiny_spec,), (), EngineOptions(), params=hp.options), "w0")
        first = vocab_shard(0, hp.shards[0], executors, context)
        later = vocab_shard(len(hp.shards) - 1, hp.shards[-1], executors, context)
        assert reads == [tiny_spec]  # two shards, one read
        assert first.counts.samples > 0 and later.counts.samples > 0 and first.extra["part"] == "tokens"
        other = TaskContext(WorkerSetup((tiny_spec,), (), EngineOptions(),
                                        params={**hp.options, "vocabulary": "0" * 32}), "w1")
        with pytest.raises(VocabError, match="not the one the sweep was planned on"):
            vocab_shard(0, hp.shards[0], executors, other)
    finally:
        pool.close()


# --- end to end -------------------------------------------------------------------------------

def test_one_two_and_three_workers_give_the_same_sweep(tmp_path, tiny_spec, planted):
    seen = []
    for workers in ("1", "2", "3"):
        out = tmp_path / f"w{workers}"
        proc = run_cli(*sweep_args(tiny_spec, out, "--workers", workers))
        assert proc.returncode == 1, proc.stderr + proc.stdout
        seen.append(outcome(out))
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["hunt"] == "vocab-sweep" and manifest["complete"]
        assert manifest["shards"]["committed"] == manifest["shards"]["total"] >= 30
    keys, counts, parts, sources = seen[0]
    assert keys and len(set(keys)) == len(keys) == counts["findings"]
    assert parts["tokens"]["findings"] > 0 and parts["pairs"]["findings"] > 0 and parts["special"]["findings"] == 0
    assert counts["samples"] == sum(p["samples"] for p in parts.values())
    assert counts["skipped"] > 0  # the special part's allow_special samples: the plain plugin is not asked
    assert [s["name"] for s in sources][1:] == ["vocab-sweep/tokens", "vocab-sweep/pairs", "vocab-sweep/special"]
    assert all(other == seen[0] for other in seen[1:])


def test_the_global_cap_keeps_exactly_the_sequential_sweeps_findings(tmp_path, tiny_spec, planted):
    sequential = tmp_path / "sequential"  # one shard per part: the sequential sweep
    proc = run_cli(*sweep_args(tiny_spec, sequential, "--max-findings", "5", "--shard-samples", "100000000",
                               "--workers", "1"))
    assert proc.returncode == 1, proc.stderr + proc.stdout
    assert json.loads((sequential / "manifest.json").read_text())["shards"]["total"] == 3
    sharded = tmp_path / "sharded"
    proc = run_cli(*sweep_args(tiny_spec, sharded, "--max-findings", "5", "--shard-samples", "100", "--workers", "2"))
    assert proc.returncode == 1, proc.stderr + proc.stdout
    assert outcome(sharded) == outcome(sequential)
    keys, counts, parts, _ = outcome(sharded)
    assert len(keys) == counts["findings"] == 10  # 5 per part, for the one candidate
    assert parts["tokens"]["findings"] > 5 and parts["tokens"]["not_written"] == parts["tokens"]["findings"] - 5
    # the tokens' findings were spread over several shards, each of which kept its own first five
    by_shard = [json.loads(p.read_text()) for p in sorted((sharded / "shards").glob("[0-9]*[0-9].json"))]
    with_findings = [m for m in by_shard if m["findings"] and m["shard_id"].startswith("vocab:tokens")]
    assert len(with_findings) >= 2 and sum(m["findings"] for m in with_findings) > 5


def test_kill_9_half_way_then_resume_equals_an_uninterrupted_sweep(tmp_path, tiny_spec, planted):
    whole = tmp_path / "whole"
    assert run_cli(*sweep_args(tiny_spec, whole, "--workers", "2")).returncode == 1
    expected = outcome(whole)
    total = json.loads((whole / "manifest.json").read_text())["shards"]["total"]

    out = tmp_path / "killed"
    env = {**os.environ, "VOCAB_PLANT_SLEEP_S": "0.4"}  # every candidate call: the kill lands mid-run
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", *sweep_args(tiny_spec, out, "--workers", "2")],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and markers(out) < total // 2:
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read().decode()
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its shard workers
    proc.wait()
    committed = markers(out)
    assert total // 2 <= committed < total
    killed = json.loads((out / "manifest.json").read_text())
    assert killed["complete"] is False

    resumed = run_cli("vocab", "sweep", "--resume", "--out", str(out), "--no-progress", "--in-process",
                      "--minimize-budget", "0", "--workers", "2")
    assert resumed.returncode == 1, resumed.stderr + resumed.stdout
    keys, counts, parts, sources = outcome(out)
    assert (keys, counts, parts, sources) == expected
    assert Counter(keys) == Counter(expected[0])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["resumed"]
    assert manifest["resume"]["shards_run_after_resume"] == total - committed
    assert "tokens:" in resumed.stdout and "samples:" in resumed.stdout


def test_a_resume_that_would_change_the_sweep_is_refused(tmp_path, tiny_spec, planted):
    out = tmp_path / "out"
    assert run_cli(*sweep_args(tiny_spec, out, "--part", "tokens")).returncode == 1
    for extra, word in ((["--seed", "3"], "seed"), (["--limit", "31"], "limit"), (["--part", "pairs"], "parts"),
                        (["--max-findings", "7"], "max_findings")):
        proc = run_cli("vocab", "sweep", "--resume", "--out", str(out), "--no-progress", "--in-process", *extra)
        assert proc.returncode == 2, (extra, proc.stderr)
        (line,) = proc.stderr.strip().splitlines()
        assert word in line and "start a new run" in line
    again = run_cli("vocab", "sweep", "--resume", "--out", str(out), "--no-progress", "--in-process",
                    "--minimize-budget", "0", "--workers", "2")  # how it runs may change
    assert again.returncode == 1, again.stderr
    assert json.loads((out / "manifest.json").read_text())["resume"]["shards_run_after_resume"] == 0
    other = run_cli("run", "--resume", "--out", str(out), "--no-progress")
    assert other.returncode == 2 and "verify vocab-sweep" in other.stderr
