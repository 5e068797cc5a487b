"""The comparison step against planted-bug engines: exact locations, accounting, inputs."""

import json

import numpy as np
import pytest

from verify.comparison import Side, all_agree, compare_batch
from verify.counts import STATES
from verify.engines import build_engine
from verify.engines.fake import FakeEngine
from verify.executors import LocalExecutor
from verify.findings import INLINE_INPUT_LIMIT, SCHEMA, FindingWriter
from verify.keys import ids_digest, input_key
from verify.outcome import Failure, Recorded
from verify.batches import encode_all
from verify.sample import Sample

from planted import RaisesOn, ReplacesTokenAt, ZeroesNonAscii


def run_engines(tmp_path, reference, candidates, samples):
    executors = [LocalExecutor(e) for e in [reference, *candidates]]
    samples = list(samples)
    counts, findings = compare_batch(samples, encode_all(executors, samples),
                                     [Side(ex.spec, ex.token_bytes) for ex in executors], "test")
    writer = FindingWriter(tmp_path)
    for finding in findings:
        writer.write(finding)
    writer.close()
    records = [json.loads(line) for line in (tmp_path / "divergences.jsonl").read_text().splitlines()]
    return counts, records


def test_equal_engines_verify_every_sample(tmp_path):
    samples = [Sample.plain(f"s{i}", t) for i, t in enumerate(["a", "bé", "", "日本"])]
    counts, records = run_engines(tmp_path, FakeEngine(), [FakeEngine(spec="fake:copy")], samples)
    assert records == []
    assert counts.states["verified"] == counts.samples == 4


def test_divergence_is_located_exactly(tmp_path):
    text = "hello wörld"  # 'ö' starts at byte 7, char 7
    counts, records = run_engines(tmp_path, FakeEngine(), [ZeroesNonAscii()], [Sample.plain("s1", text)])
    assert counts.states["diverged"] == 1 and len(records) == 1
    r = records[0]
    assert r["schema"] == SCHEMA and r["kind"] == "ids"
    assert r["engine"] == "planted:zeroes-non-ascii" and r["reference"] == "fake:bytes"
    assert (r["token_index"], r["byte_offset"], r["char_offset"]) == (7, 7, 7)
    assert r["offsets_exact"] is True
    assert r["context"] == {"before": "hello w", "after": "örld"}
    assert r["expected"]["ids"][r["token_index"] - r["expected"]["start"]] == 0xC3
    assert r["actual"]["ids"][r["token_index"] - r["actual"]["start"]] == 0
    assert r["expected_len"] == r["actual_len"] == len(text.encode())
    assert r["input"] == [[text, False]] and r["sample_id"] == "s1"
    assert r["input_key"] == input_key([(text, False)]) and len(r["finding_key"]) == 32


def test_the_input_key_is_the_input_alone_not_the_sample_id(tmp_path):
    same = [Sample.plain("first-id", "hello wörld"), Sample.plain("second-id", "hello wörld")]
    _, records = run_engines(tmp_path, FakeEngine(), [ZeroesNonAscii()], same)
    assert records[0]["input_key"] == records[1]["input_key"]
    assert records[0]["finding_key"] != records[1]["finding_key"]  # two findings, one per sample


def test_divergence_offset_in_a_real_bpe_vocabulary(tmp_path, tiny_spec):
    reference = build_engine(tiny_spec)
    candidate = ReplacesTokenAt(reference.tokenizer, "words")
    text = "naïve café: repeated words here"
    enc = reference.tokenizer.encode(text, add_special_tokens=False)
    want_index = next(i for i, (start, _) in enumerate(enc.offsets) if start >= text.find("words"))
    want_char = enc.offsets[want_index][0]
    _, records = run_engines(tmp_path, reference, [candidate], [Sample.plain("x", text)])
    assert len(records) == 1
    r = records[0]
    assert r["token_index"] == want_index
    assert r["char_offset"] == want_char
    assert r["byte_offset"] == len(text[:want_char].encode())


def test_an_exception_is_an_error_finding_with_its_input(tmp_path):
    samples = [Sample.plain(f"s{i}", f"text {i}") for i in range(5)] + [Sample.plain("bad", "a boom here")]
    counts, records = run_engines(tmp_path, FakeEngine(), [RaisesOn("boom")], samples)
    assert counts.states["verified"] == 5 and counts.states["error"] == 1
    assert [r["kind"] for r in records] == ["error"]
    assert records[0]["sample_id"] == "bad" and records[0]["input"] == [["a boom here", False]]
    assert "planted failure" in records[0]["error"]["message"]


def test_a_failing_reference_leaves_the_sample_unverified(tmp_path):
    counts, records = run_engines(tmp_path, RaisesOn("x"), [FakeEngine()], [Sample.plain("s", "x")])
    assert counts.states["verified"] == 0 and counts.states["error"] == 1
    assert records[0]["engine"] == "planted:raises-on-x"
    assert counts.per_engine["fake:bytes"]["verified"] == 0


def test_special_segments_are_skipped_not_verified_for_engines_without_special_support(tmp_path, plugin_dir):
    (plugin_dir / "bytes_plugin.py").write_text(
        "class E:\n    def encode_batch(self, texts):\n        return [list(t.encode()) for t in texts]\n"
        "def make():\n    return E()\n")
    plugin = build_engine("python:bytes_plugin:make")
    samples = [Sample.plain("plain", "abc"), Sample.from_segments("chat", [("hi", False), ("<|sep|>", True)])]
    counts, records = run_engines(tmp_path, FakeEngine(), [plugin], samples)
    assert counts.states == {**dict.fromkeys(STATES, 0), "verified": 1, "skipped": 1}
    assert records == []


def test_every_sample_is_counted_exactly_once(tmp_path):
    samples = [Sample.plain(f"s{i}", t) for i, t in enumerate(["ok", "é", "boom", "fine", "ü boom"])]
    counts, _ = run_engines(tmp_path, FakeEngine(), [ZeroesNonAscii(), RaisesOn("boom")], samples)
    assert sum(counts.states.values()) == counts.samples == 5
    assert counts.states["error"] == 2 and counts.states["diverged"] == 1 and counts.states["verified"] == 2
    for spec, tally in counts.per_engine.items():
        assert sum(tally.values()) == 5, spec


def test_a_large_input_is_stored_beside_the_record(tmp_path):
    import random

    rng = random.Random(3)  # no repetition: the input itself is stored
    text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(INLINE_INPUT_LIMIT + 10)) + "é"
    _, records = run_engines(tmp_path, FakeEngine(), [ZeroesNonAscii()], [Sample.plain("big", text)])
    r = records[0]
    assert "input" not in r and "input_runs" not in r
    stored = json.loads((tmp_path / r["input_file"]).read_text())
    assert stored["segments"] == [[text, False]]
    assert r["byte_offset"] == INLINE_INPUT_LIMIT + 10


def test_a_large_repetitive_input_is_kept_as_runs_that_rebuild_it(tmp_path):
    from verify.findings import sample_from_runs

    text = "a" * (INLINE_INPUT_LIMIT + 10) + "é"
    _, records = run_engines(tmp_path, FakeEngine(), [ZeroesNonAscii()], [Sample.plain("big", text)])
    r = records[0]
    assert "input" not in r and "input_file" not in r
    assert r["input_runs"] == [[[["a", INLINE_INPUT_LIMIT + 10], ["é", 1]], False]]
    assert sample_from_runs("big", r["input_runs"]).text == text
    assert r["byte_offset"] == INLINE_INPUT_LIMIT + 10


def test_segmented_samples_concatenate_per_segment_encodes(tmp_path):
    sample = Sample.from_segments("chat", [("<|sep|>", True), ("user <|sep|>", False)])
    ids = FakeEngine().encode_batch([sample])[0]
    assert ids.tolist() == [257] + list(b"user <|sep|>")


@pytest.mark.parametrize("bad", [[-1], [2**32], [1.5]])
def test_invalid_ids_from_an_engine_are_errors(tmp_path, bad):
    engine = FakeEngine(spec="fake:bad", encode=lambda t, a: bad)
    counts, records = run_engines(tmp_path, FakeEngine(), [engine], [Sample.plain("s", "x")])
    assert counts.states["error"] == 1 and records[0]["kind"] == "error"


def test_a_batch_call_that_fails_where_single_calls_succeed_is_reported():
    def encode(text, allow_special):
        return list(text.encode())

    class BatchBroken(FakeEngine):
        def encode_texts(self, texts, allow_special):
            if len(texts) > 1:
                raise RuntimeError("batch path broken")
            return super().encode_texts(texts, allow_special)

    ex = LocalExecutor(BatchBroken(spec="planted:batch-broken", encode=encode))
    out = ex.encode([Sample.plain("a", "x"), Sample.plain("b", "y")])
    assert [o.tolist() for o in out] == [[120], [121]]  # each sample alone still gives its ids ...
    notes = ex.run_notes()
    assert notes["batch_fallbacks"] == 1  # ... but the broken batch call is not hidden
    assert "batch path broken" in notes["warnings"][0]


def test_a_batch_is_counted_in_bulk_only_when_every_candidate_equals_the_reference_sample_by_sample():
    a, b = np.array([1, 2, 3], dtype=np.uint32), np.array([4], dtype=np.uint32)
    assert all_agree([[a, b], [a.copy(), b.copy()]])
    assert all_agree([[a, b], [a, b]])  # the same arrays (a ledger stand-in)
    assert not all_agree([[a, b], [np.array([1, 2], dtype=np.uint32), np.array([3, 4], dtype=np.uint32)]])
    assert not all_agree([[a, b], [a, np.array([5], dtype=np.uint32)]])
    assert not all_agree([[a, b], [a, Failure("error", "E", "m")]])
    assert not all_agree([[a, Recorded("00", 1)], [a, b]])  # a ledger entry is checked sample by sample


def test_a_candidate_answering_with_the_recorded_entry_is_verified_only_against_that_entry():
    """An isolated candidate's process that matched the ledger's digest answers with the
    ``Recorded`` entry itself: verified in bulk where it is the reference's entry or an equal
    one (an audited hit, where the reference's fresh ids stand instead: digest and length), and never verified where the reference
    turned out corrupt (nothing was compared)."""
    a, b = np.array([1, 2, 3], dtype=np.uint32), np.array([4, 5], dtype=np.uint32)
    entry = Recorded(ids_digest(b), 2)
    assert all_agree([[a, entry], [a.copy(), entry]])  # the entry itself: no look at ids
    assert all_agree([[a, entry], [a, Recorded(entry.digest, 2)]])  # another object: its digest and length
    assert not all_agree([[a, entry], [a, Recorded("f" * 32, 2)]]) and not all_agree([[a, entry], [a, b[:1]]])
    samples = [Sample.plain("s1", "abc"), Sample.plain("s2", "de")]
    sides = [Side("ref", lambda ids: None), Side("cand", lambda ids: None)]
    counts, findings = compare_batch(samples, [[a, entry], [a.copy(), entry]], sides)
    assert counts.states["verified"] == 2 and counts.tokens == 5 and not findings
    counts, findings = compare_batch(samples, [[a, entry], [a, Recorded(entry.digest, 2)]], sides)
    assert counts.states["verified"] == 2 and counts.tokens == 5 and not findings
    corrupt = Failure("error", "LedgerCorrupt", "the ledger records other ids")
    counts, findings = compare_batch(samples, [[a, corrupt], [a, entry]], sides)
    assert counts.engine("cand")["verified"] == 1 and counts.engine("cand")["skipped"] == 1
    assert counts.states["verified"] == 1 and [f.kind for f in findings] == ["error"]
    with pytest.raises(ValueError, match="re-encode the reference"):
        compare_batch(samples, [[a, b], [a, Recorded(ids_digest(a), 3)]], sides)
