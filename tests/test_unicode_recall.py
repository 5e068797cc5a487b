"""Recall of the Unicode sweep on realistic planted engines: the real reference (its
real ranks and real pattern) with ONE class rewritten from another table, for every
supported pattern x class x older/newer table and every other definition of
whitespace. Which changed code points are observable at all is decided by brute
force (a random battery of contexts that shares nothing with the sweep's probes);
the sweep must report at least 99% of those, nothing the fault did not change, and
name the planted version. And nothing where there is nothing: the unmodified
reference's own tables written out, and a second faithful implementation."""

from __future__ import annotations

import pytest

from verify.engines.planted.unicode_tables import TableFault, planted_engine
from verify.adversarial.unicode.table_recall import REFERENCES, faults, measure, version_named
from verify.adversarial.unicode.sweep import sweep
from verify.engines import build_engine
from verify.executors import LocalExecutor

pytestmark = pytest.mark.slow

FAULTS = faults()


@pytest.fixture(scope="module")
def references():
    return {vocab: LocalExecutor(build_engine(spec)) for vocab, spec in REFERENCES.items()}


def test_every_supported_pattern_and_class_is_planted():
    planted = {(f.vocab, f.kind) for f in FAULTS}
    for vocab in REFERENCES:
        assert {(vocab, "letters"), (vocab, "numbers"), (vocab, "whitespace")} <= planted, vocab
    assert {("o200k_base", "marks"), ("deepseek-v3", "marks"), ("tekken", "marks"),
            ("deepseek-v3", "punctuation"), ("deepseek-v3", "symbols")} <= planted
    assert {f.table for f in FAULTS if f.kind == "letters"} == {"15.0.0", "17.0.0"}  # older and newer


@pytest.mark.parametrize("packing", ["auto", "joined"])
@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f"{f.vocab}-{f.kind}-{f.table}")
def test_the_sweep_reports_the_observable_changed_code_points(fault, packing, references):
    """``auto`` packs probes with a special-token separator (reference and planted engine honour
    special tokens); ``joined`` is what an engine without special tokens gets."""
    result = measure(fault, sample=60, contexts=150, reference=references[fault.vocab], packing=packing)
    assert result.changed > 0
    assert result.observable, "a planted fault nothing reveals measures nothing: choose another class or table"
    assert result.recall >= 0.99, ([f"U+{c:04X}" for c in result.missed[:20]], result.by_context)
    assert result.extra == [], [f"U+{c:04X}" for c in result.extra[:20]]
    assert version_named(result), (result.version, result.tied)


def test_recall_is_undefined_when_nothing_is_observable():
    from verify.adversarial.unicode.table_recall import RecallResult, found_share
    from verify.reports.md_templates import render

    blind = RecallResult(TableFault("cl100k_base", "letters", "16.0.0"), changed=0, sampled=0, observable=[],
                         found=[], missed=[], extra=[], version=None, seconds=0.0)
    row = render("table_recall.md.j2", header=False, results=[blind])
    assert blind.recall is None and "n/a" in row and found_share([blind]) is None


@pytest.mark.parametrize("vocab", sorted(REFERENCES))
def test_the_reference_tables_written_out_change_nothing(vocab, references):
    """The planted engine with the reference's own Unicode version is the reference: the
    class rewriting itself changes nothing, on every assigned code point."""
    fault = TableFault(vocab, "letters", "16.0.0")
    # cl100k over the BMP and SMP; the others over the BMP, where almost every assigned code point is
    stop = 0x20000 if vocab == "cl100k_base" else 0x10000
    result = sweep(references[vocab], LocalExecutor(planted_engine(fault)), start=0, stop=stop)
    assert result.ok, result.mismatched[:10]


@pytest.mark.parametrize("vocab,stop", [("cl100k_base", None), ("o200k_base", 0x20000), ("p50k_base", 0x20000)])
def test_tiktoken_and_hf_agree_on_every_code_point(vocab, stop):
    """Every code point for cl100k (all tiers, unassigned included); the BMP and SMP for the
    others (the same sweep code; their full sweeps are in bench/bench_unicode_sweep.py)."""
    from verify.executors.pool import EngineOptions, EnginePool

    with EnginePool(EngineOptions()) as pool:  # isolated: the two engines encode in parallel
        ref, cand = pool.start([f"tiktoken:{vocab}", f"hf:{vocab}"])
        result = sweep(ref, cand) if stop is None else sweep(ref, cand, start=0, stop=stop)
    expected = 1_112_064 if stop is None else stop - 2048  # surrogates excluded
    assert result.code_points == expected and result.packing == "special-token separator"
    assert result.count == 0 and result.errors == [] and result.pack_only == [], result.mismatched[:10]
