"""verify selftest: planted faults of every kind go through the normal pipeline and the
harness finds each of them where it was planted; a harness that compared decoded text
would miss the bytes-preserving ones, and the self-test says so."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli
from verify.engines.planted.faults import TOKEN_KINDS, corrupt, resplits, token_table
from verify.selftest.run import SelftestOptions, run_selftest
from verify.selftest.shadow_model import PAPER, requests_to_catch, simulate

SMALL = dict(faults=14, after=300, turns=3, isolate=False)


def _by_kind(result):
    return {r["kind"]: r for r in result["kinds"]}


def test_every_token_and_history_fault_is_found_where_it_was_planted(tmp_path, tiny_spec):
    from verify.selftest.report import write_reports

    kinds = (*TOKEN_KINDS, "history")
    result = run_selftest(SelftestOptions(out=tmp_path, reference=tiny_spec, kinds=kinds, **SMALL))
    write_reports(tmp_path, result)
    rows = _by_kind(result)
    assert list(rows) == list(kinds) and result["passed"]
    for kind, row in rows.items():
        assert row["injected"] >= 5, kind
        assert row["found"] == row["located"] == row["injected"], row
        assert row["share_found"] == 1.0 and row["false_positives"] == 0
        assert row["shadow"]["requests"] == 45  # perfect detection at 5%: 1 - 0.95**45 >= 0.9
    boundary = rows["boundary"]
    assert boundary["bytes_preserved"] == boundary["injected"] and boundary["text_visible"] == 0
    assert rows["substitute"]["text_visible"] == rows["substitute"]["injected"]
    assert rows["history"]["engine_states"]["diverged"] > rows["history"]["injected"]  # wrong on every later turn
    saved = json.loads((tmp_path / "selftest.json").read_text())
    assert saved["passed"] and [r["kind"] for r in saved["kinds"]] == list(kinds)
    md = (tmp_path / "selftest.md").read_text()
    assert all(f"| {kind} |" in md for kind in kinds) and "| TokTier paper (" in md and "| pooled: substitute, delete, boundary |" in md


def test_a_harness_comparing_decoded_text_misses_the_boundary_shifts(tmp_path, tiny_spec, monkeypatch):
    import verify.comparison

    table = token_table(tiny_spec.partition(":")[2])
    monkeypatch.setattr(verify.comparison, "agree", lambda a, b: table.decode(a) == table.decode(b))
    result = run_selftest(SelftestOptions(out=tmp_path, reference=tiny_spec, kinds=("substitute", "boundary"),
                                          **SMALL))
    rows = _by_kind(result)
    assert rows["substitute"]["share_found"] == 1.0 and rows["substitute"]["passed"]
    assert rows["boundary"]["injected"] >= 5 and rows["boundary"]["found"] == 0
    assert rows["boundary"]["shadow"]["requests"] is None and not rows["boundary"]["passed"]
    assert not result["passed"]


def test_the_boundary_shift_keeps_bytes_and_count_and_is_deterministic(tiny_spec, tiny_tokenizer_json):
    from tokenizers import Tokenizer

    table = token_table(str(tiny_tokenizer_json))
    ids = np.asarray(Tokenizer.from_file(str(tiny_tokenizer_json)).encode('back  "under" fund').ids,
                     dtype=np.uint32)
    faulty, injection = corrupt("boundary", ids, table, seed=3, key="k")
    assert faulty.size == ids.size and not np.array_equal(faulty, ids)
    assert table.decode(faulty) == table.decode(ids) and injection.bytes_preserved
    i = injection.position
    assert (int(faulty[i]), int(faulty[i + 1])) in resplits(table, int(ids[i]), int(ids[i + 1]))
    again, _ = corrupt("boundary", ids, table, seed=3, key="k")
    assert np.array_equal(again, faulty)
    for kind in ("substitute", "delete", "insert"):
        changed, inj = corrupt(kind, ids, table, seed=3, key="k")
        assert not np.array_equal(changed, ids) and not inj.bytes_preserved


def test_the_shadow_model_gives_the_papers_figure():
    assert requests_to_catch(1.0) == 45
    assert requests_to_catch(0.5) == 91
    assert requests_to_catch(0.0) is None
    low, high = simulate(1.0, PAPER["faults"])["range_5_95"]
    assert low <= PAPER["requests"] <= high


@pytest.mark.slow
def test_the_unicode_class_flip_is_found_on_cl100k(tmp_path):
    result = run_selftest(SelftestOptions(out=tmp_path, reference="tiktoken:cl100k_base", kinds=("unicode",),
                                          faults=8, isolate=False))
    row = _by_kind(result)["unicode"]
    assert row["injected"] == 8 and row["found"] == row["located"] == 8 and row["false_positives"] == 0
    assert row["bytes_preserved"] == 8  # a class flip re-splits the same bytes


def test_bad_options_are_one_line_usage_errors(tmp_path):
    proc = run_cli("selftest", "--rate", "0", "--out", str(tmp_path / "st"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--rate" in proc.stderr
    proc = run_cli("run", "--candidate", "faulty:tiktoken:cl100k_base?kind=nonsense", "--in-process", "--out",
                   str(tmp_path / "r"))
    assert proc.returncode == 2 and "unknown fault kind 'nonsense'" in proc.stderr
