"""Stress shapes a serving stack produces: one call with 10^4-10^5 short samples, and inputs
across the legacy tiktoken wrapper's 25,000 / 400,000-character chunking thresholds with every
whitespace-like and control character at the cut. Planted engines that fail only there are
found by `verify fuzz` with its default settings and by `verify check --check stress`."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from verify.adversarial.stress import shapes as S
from verify.adversarial.fuzz.hunt import EXAMPLES_ENV, fuzz
from verify.adversarial.checks.metamorphic import MetamorphicChecker
from verify.adversarial.checks.stress import StressCheck
from verify.adversarial.unicode.contexts import WHITESPACE_LIKE
from verify.executors.pool import EngineOptions, EnginePool
from verify.outcome import agree

REFERENCE = "tiktoken:cl100k_base"

PLANTED = '''
_enc = None

def _encoding():
    global _enc
    if _enc is None:
        from verify.engines import build_engine
        _enc = build_engine("tiktoken:cl100k_base").encoding
    return _enc

class Plain:
    def encode_batch(self, texts):
        enc = _encoding()
        return [enc.encode_ordinary(t) for t in texts]

class WrapsAfter10k(Plain):
    """A 10,000-slot result buffer: in a call with more samples, sample i >= 10,000 gets the
    ids of sample i - 10,000. Every call of up to 10,000 samples is right."""
    def encode_batch(self, texts):
        out = super().encode_batch(texts)
        for i in range(10_000, len(out)):
            out[i] = out[i - 10_000]
        return out

class RaisesOver10k(Plain):
    def encode_batch(self, texts):
        if len(texts) > 10_000:
            raise MemoryError(f"batch of {len(texts)} samples exceeds 10000")
        return super().encode_batch(texts)

class Chunks25k(Plain):
    """Splits every input into 25,000-character chunks and encodes them separately: a
    whitespace character just before the cut loses the word it belongs to."""
    def encode_batch(self, texts):
        enc = _encoding()
        out = []
        for t in texts:
            ids = []
            for i in range(0, max(1, len(t)), 25_000):
                ids.extend(enc.encode_ordinary(t[i:i + 25_000]))
            out.append(ids)
        return out

def plain(): return Plain()
def wraps(): return WrapsAfter10k()
def raises(): return RaisesOver10k()
def chunks(): return Chunks25k()
'''


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "serving_planted.py").write_text(PLANTED)
    return "python:serving_planted"


def records(out):
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text(encoding="utf-8").splitlines()]


# --- the generator ----------------------------------------------------------------------

def test_probes_are_every_whitespace_like_and_control_character():
    listed = {cp for a, b in WHITESPACE_LIKE for cp in range(a, b + 1)}
    controls = {*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF, 0x200B, 0x180E}
    assert set(S.PROBES) == listed | controls and len(S.PROBES) == len(set(S.PROBES))


def test_every_probe_sits_at_and_around_every_cut():
    seen: dict[int, set[tuple[int, int]]] = {cut: set() for cut in S.CUTS}
    for item in S.threshold_plan():
        assert item.length > item.cut and item.at < item.cut + 2 < item.length
        for position in range(item.at, item.at + item.width):
            seen[item.cut].add((item.probe, position - item.cut))
    for cut, pairs in seen.items():
        assert pairs == {(p, d) for p in S.PROBES for d in S.OFFSETS}, cut
    tiers = [item.tier for item in S.threshold_plan()]
    assert tiers == sorted(tiers)  # cheap cut and whitespace-like probes first
    assert S.plan_size()["chars"] < 100_000_000


def test_a_threshold_input_is_rebuilt_from_its_recipe():
    items = [next(S.thresholds(25_000, (0x200B,))), list(S.threshold_plan())[-1]]
    for item in items:
        text = item.text()
        assert len(text) == item.length and text[item.at:item.at + item.width] == chr(item.probe) * item.width
        recipe = json.loads(json.dumps(item.recipe()))
        again = S.from_recipe(recipe)
        assert again.text == text and again.id == item.sample_id
    run = S.Threshold(25_000, "a", 0, 25_000, 0x20, 25_065).text()
    assert run[:25_000] == "a" * 25_000 and run[25_000] == " "


def test_big_batches_are_deterministic_and_short():
    a, b = S.big_batch(16_384), S.big_batch(16_384)
    assert [s.text for s in a] == [s.text for s in b] and len({s.id for s in a}) == len(a)
    assert max(len(s.text) for s in a) <= S.SHORT_MAX and any(s.text == "" for s in a)
    assert any(chr(p) in s.text for s in a for p in (0x180E, 0x2028, 0x00))
    large = S.big_batch(100_000)
    assert len(large) == 100_000 and large[S.DISTINCT + 5].text == a[5].text
    recipe = S.batch_recipe(100_000, S.BATCH_SEED, 54_321)
    assert S.from_recipe(recipe).text == large[54_321].text


# --- the check, in this process ------------------------------------------------------------

def _checker(pool_a, pool_b, spec):
    return MetamorphicChecker(pool_a.get(spec), pool_b.get(spec), checks=("stress",))


def test_repetition_holds_for_a_correct_engine_and_fails_for_a_chunker(planted):
    options = EngineOptions(isolate=False)
    with EnginePool(options) as a, EnginePool(options) as b:
        items = [t for t in S.threshold_plan((25_000,)) if t.probe in (0x20, 0x0B, 0x200B, 0x1C)]
        correct = StressCheck(_checker(a, b, REFERENCE))
        wrong = StressCheck(_checker(a, b, f"{planted}:chunks"))
        violated = 0
        for item in items:
            expected = correct.repetition(item)
            assert expected is not None, item  # the property applies to every unit on cl100k
            assert agree(expected, correct.fresh.encode([item.sample()])[0]), item
            predicted = wrong.repetition(item)
            violated += predicted is not None and not agree(predicted, wrong.fresh.encode([item.sample()])[0])
        assert violated > 0


def test_a_batch_call_that_raises_is_an_error_finding_in_check(planted):
    options = EngineOptions(isolate=False)
    with EnginePool(options) as a, EnginePool(options) as b:
        checker = _checker(a, b, f"{planted}:raises")
        report = StressCheck(checker, cuts=(), batch_sizes=(16_384,)).run(("batches",))
    (record,) = checker.findings
    assert record["kind"] == "error" and record["error"]["type"] == "BatchCallFailed"
    assert "MemoryError" in record["error"]["message"] and record["check"] == "stress"
    assert record["stress"]["shape"] == "big-batch" and report["violations"] == {"big-batch": 1}
    assert checker.tally.states["error"] == 16_384


def test_a_batch_call_that_raises_is_an_error_finding_in_fuzz(tmp_path, planted):
    result = fuzz(REFERENCE, [f"{planted}:raises"], out_dir=tmp_path / "out", database_dir=None,
                  engine=EngineOptions(isolate=False), max_examples=20, stress_cuts=())
    (record,) = result.findings
    assert record["kind"] == "error" and record["error"]["type"] == "BatchCallFailed"
    assert record["stress"]["shape"] == "big-batch" and record["source"] == "fuzz-stress"
    (cluster,) = [c for c in result.clusters if c["status"] == "found"]
    # the big batch and the family batches all hit it: one written, every hit counted
    assert cluster["cluster"] == "error/BatchCallFailed" and cluster["hits"] == cluster["masked"] + 1 >= 16_384
    # its batch bug found, the engine skips the larger batch
    assert [b["size"] for b in result.manifest["fuzz"]["stress"]["batches"]] == [S.BIG_BATCH_SIZES[0]]


# --- the commands, with their defaults ---------------------------------------------------

def test_fuzz_finds_a_big_batch_bug_and_a_chunking_bug_with_its_defaults(tmp_path, planted, monkeypatch):
    monkeypatch.delenv(EXAMPLES_ENV, raising=False)
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--reference", REFERENCE, "--candidate", f"{planted}:wraps",
                   "--candidate", f"{planted}:chunks", "--out", str(out), "--database", str(tmp_path / "db"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = records(out)
    manifest = json.loads((out / "manifest.json").read_text())
    clusters = {(c["engine"], c["cluster"]): c for c in manifest["fuzz"]["clusters"] if c["status"] == "found"}
    batch = clusters[(f"{planted}:wraps", "ids/stress-only/big-batch")]
    assert batch["masked"] > 1000  # every wrong sample of the batch counted, one written
    (written,) = [r for r in found if r["finding_key"] == batch["finding_key"]]
    assert written["stress"]["shape"] == "big-batch" and written["stress"]["index"] >= 10_000
    cut = clusters[(f"{planted}:chunks", "ids/stress-only/cut-25000")]
    (written,) = [r for r in found if r["finding_key"] == cut["finding_key"]]
    recipe = written["stress"]
    assert recipe["shape"] == "threshold" and recipe["cut"] == 25_000 and abs(recipe["at"] - 25_000) <= 1
    assert S.from_recipe(recipe).text == "".join(t for t, _ in written["input"])  # replayable from the recipe
    assert {r["engine"] for r in found} == {f"{planted}:wraps", f"{planted}:chunks"}
    assert len(found) <= 4, [(r["engine"], r.get("stress")) for r in found]
    assert manifest["fuzz"]["stress"]["threshold"]["inputs"] > 0
    assert "sample 1" in proc.stdout and "25064-character input" in proc.stdout


@pytest.mark.parametrize("factory, prop", [("chunks", "repetition"), ("wraps", "big-batch")])
def test_check_stress_finds_the_planted_bug(tmp_path, planted, factory, prop):
    out = tmp_path / "out"
    phase = {"repetition": "thresholds", "big-batch": "batches"}[prop]  # the phase that can show it
    proc = run_cli("check", "--engine", f"{planted}:{factory}", "--check", "stress", "--stress-phase", phase,
                   "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads((out / "check.json").read_text())["stress"]
    assert set(report["violations"]) == {prop} and report["findings_written"] == {prop: 5}
    found = records(out)
    assert len(found) == 5 and all(r["check"] == "stress" and r["property"] == prop for r in found)
    if prop == "repetition":
        assert all(r["stress"]["cut"] == 25_000 or r["stress"]["cut"] == 400_000 for r in found)
        assert report["threshold"]["not_applicable"] == 0
    else:
        assert all(r["stress"]["index"] >= 10_000 and r["batch_size"] == 16_384 for r in found)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["diverged"] == report["violations"][prop]


@pytest.mark.parametrize("args, fragment", [
    (["check", "--engine", "python:serving_planted:plain", "--stress-budget", "0"], "--stress-budget"),
    (["check", "--engine", "python:serving_planted:plain", "--check", "stress", "--no-stress"], "no check"),
    (["fuzz", "--reference", REFERENCE, "--candidate", "python:serving_planted:plain", "--atheris", "--no-stress"],
     "--no-stress"),
])
def test_stress_usage_errors_exit_2(tmp_path, planted, args, fragment):
    proc = run_cli(*args, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
