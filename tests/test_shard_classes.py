"""Shards are values with behaviour, one class per kind (issue 26): ``verify.corpora.shards``.

A shard's document has not changed: an ``OUT/plan.json`` written before shards were classes
loads on ``--resume`` to shards of the right classes with the same ids (committed markers and
run folders name shards by them), and writes back the same documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import verify.adversarial.certify.hunt  # noqa: F401  (every hunt's shard class joins the registry)
import verify.adversarial.checks.hunt  # noqa: F401
import verify.adversarial.fuzz.edits_hunt  # noqa: F401
import verify.adversarial.fuzz.hunt  # noqa: F401
import verify.adversarial.length.hunt  # noqa: F401
import verify.adversarial.regressions.hunt  # noqa: F401
import verify.adversarial.unicode.hunt  # noqa: F401
import verify.adversarial.vocab.hunt  # noqa: F401
import verify.shadow.source  # noqa: F401
from verify.corpora import shards as shard_module
from verify.corpora.shards import (GeneratedShard, HuntShard, Shard, UnloadedShard, ZstdFramesShard, count_records,
                                   kinds)
from verify.keys import KEYS_VERSION
from verify.rundir.plan import SCHEMA, load_plan

# Documents as the harness wrote them before shards were classes (one flat dataclass with a
# ``kind`` and an ``extra`` dict), each with its id then and the class it loads to now.
TODAY = [
    ({"source": "generated", "kind": "generated", "path": "", "start": 16, "stop": 32, "text_field": "text", "id_field": "id", "generator": [7, 2000, 3], "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {}},
     "generated:7[16:32]", "GeneratedShard"),
    ({"source": "c4", "kind": "file", "path": "/data/c4/part-0.jsonl.gz", "start": 0, "stop": 0, "text_field": "content", "id_field": "doc_id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"quality": "high", "kind": "actual"}},
     "/data/c4/part-0.jsonl.gz", "FileShard"),
    ({"source": "big", "kind": "byte-range", "path": "/data/big.jsonl", "start": 67108864, "stop": 134217728, "text_field": "text", "id_field": "id", "generator": None, "limit": 200, "sample_rate": None, "sample_seed": 0, "extra": {}},
     "/data/big.jsonl@67108864-134217728|limit=200", "ByteRangeShard"),
    ({"source": "zs", "kind": "zstd-frames", "path": "/data/big.jsonl.zst", "start": 1000, "stop": 2000, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"subset": "Medium-Quality", "zstd": {"seek": 512, "base": 900}}},
     "/data/big.jsonl.zst@1000-2000", "ZstdFramesShard"),
    ({"source": "pq", "kind": "row-groups", "path": "/data/t.parquet", "start": 2, "stop": 5, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": 0.25, "sample_seed": 3, "extra": {}},
     "/data/t.parquet#rg2-5", "RowGroupsShard"),
    ({"source": "hf:/data/saved", "kind": "hf", "path": "/data/saved", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"config": None, "split": "train", "saved": True, "shards": 3, "shard": 1}},
     "hf:/data/saved/default/train/shard-1-of-3", "HfShard"),
    ({"source": "/traces", "kind": "traces", "path": "/traces/s.jsonl", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"format": "verify"}},
     "/traces/s.jsonl", "TraceShard"),
    ({"source": "/traces", "kind": "traces", "path": "/traces/c.jsonl", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"format": "claude-code", "template": "chatml"}},
     "/traces/c.jsonl", "TraceShard"),
    ({"source": "agent:7:40", "kind": "agent", "path": "", "start": 4, "stop": 8, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"seed": 7, "sessions": 40, "template": "chatml"}},
     "agent:7[4:8]", "AgentShard"),
    ({"source": "shadow.jsonl", "kind": "shadow", "path": "/s/shadow.jsonl", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"format": "jsonl"}},
     "/s/shadow.jsonl", "ShadowShard"),
    ({"source": "unicode", "kind": "unicode", "path": "unicode:U+0000..U+7FFF", "start": 0, "stop": 32768, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {}},
     "unicode:U+0000..U+7FFF", "UnicodeShard"),
    ({"source": "vocab-sweep", "kind": "vocab", "path": "vocab:pairs[0:64]", "start": 0, "stop": 64, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"part": "pairs"}},
     "vocab:pairs[0:64]", "VocabShard"),
    ({"source": "stress", "kind": "stress", "path": "stress:batches", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"phase": "batches"}},
     "stress:batches", "StressShard"),
    ({"source": "edits", "kind": "edits", "path": "edits:tiktoken:cl100k_base#1", "start": 50, "stop": 100, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"candidate": "tiktoken:cl100k_base", "seed": 123}},
     "edits:tiktoken:cl100k_base#1", "EditsShard"),
    ({"source": "fuzz", "kind": "fuzz", "path": "fuzz:text#0", "start": 0, "stop": 1000, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"phase": "search", "family": "text", "k": 0, "seed": 99, "examples": 1000, "cap_s": 2.5}},
     "fuzz:text#0", "FuzzSearchShard"),
    ({"source": "fuzz-stress", "kind": "fuzz", "path": "fuzz-stress:cut-400000", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"phase": "stress", "batch_sizes": [], "cuts": [400000], "cap_s": 1.25, "shape": "serving"}},
     "fuzz-stress:cut-400000", "FuzzStressShard"),
    ({"source": "regression-cases", "kind": "recheck", "path": "recheck:cases[0:1]", "start": 0, "stop": 1, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"cases": [{"path": "adversarial/regressions/x.json", "doc": {"reference": "tiktoken:cl100k_base"}}]}},
     "recheck:cases[0:1]", "RecheckShard"),
    ({"source": "length", "kind": "length", "path": "length:a-run..b-run", "start": 0, "stop": 0, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"families": [{"name": "a-run", "kind": "run"}, {"name": "b-run", "kind": "run"}]}},
     "length:a-run..b-run", "LengthShard"),
    ({"source": "certify", "kind": "certify", "path": "certify:L2[0:128]", "start": 0, "stop": 128, "text_field": "text", "id_field": "id", "generator": None, "limit": None, "sample_rate": None, "sample_seed": 0, "extra": {"length": 2}},
     "certify:L2[0:128]", "CertifyShard"),
]
IDS = [f"{doc['kind']}-{i}" for i, (doc, _, _) in enumerate(TODAY)]


@pytest.mark.parametrize("doc, shard_id, class_name", TODAY, ids=IDS)
def test_a_shard_document_of_today_loads_to_its_class_with_the_same_id_and_writes_back_the_same(doc, shard_id,
                                                                                                 class_name):
    shard = Shard.from_json(json.loads(json.dumps(doc)))
    assert type(shard).__name__ == class_name and shard.kind == doc["kind"] and shard.id == shard_id
    assert shard.to_json() == doc
    again = Shard.from_json(json.loads(json.dumps(shard.to_json())))
    assert again == shard and again.id == shard_id and hash(again) == hash(shard)


def test_every_kind_has_a_document_of_today_here():
    """A new shard kind adds its document to ``TODAY`` (and keeps its id from then on)."""
    assert set(kinds()) == {doc["kind"] for doc, _, _ in TODAY}


def test_a_plan_json_of_today_resumes_with_the_same_shard_ids(tmp_path):
    plan = {"schema": SCHEMA, "keys_version": KEYS_VERSION, "hunt": "run", "reference": "tiktoken:cl100k_base",
            "requested": [], "candidates": [], "optional": [], "corpora": [], "sources": [], "options": {},
            "identities": {}, "not_loaded": {}, "traces": [], "shards": [doc for doc, _, _ in TODAY]}
    (tmp_path / "plan.json").write_text(json.dumps(plan, indent=1))
    loaded = load_plan(tmp_path)
    assert [s.id for s in loaded.shards] == [shard_id for _, shard_id, _ in TODAY]
    assert [type(s).__name__ for s in loaded.shards] == [name for _, _, name in TODAY]
    loaded.save(tmp_path)
    assert json.loads((tmp_path / "plan.json").read_text())["shards"] == plan["shards"]


def test_the_typed_fields_come_from_the_old_extra():
    zstd = Shard.from_json(TODAY[3][0])
    assert isinstance(zstd, ZstdFramesShard) and (zstd.frame_seek, zstd.frame_base) == (512, 900)
    assert zstd.partition == {"subset": "Medium-Quality"} and zstd.byte_size == 1000
    fuzz = Shard.from_json(TODAY[15][0])
    assert fuzz.phase == "stress" and fuzz.cuts == (400000,) and fuzz.batch_sizes == () and fuzz.cap_s == 1.25
    assert Shard.from_json(TODAY[5][0]).label == "hf:/data/saved/default/train"
    assert Shard.from_json(TODAY[6][0]).template is None and Shard.from_json(TODAY[7][0]).template == "chatml"


@pytest.mark.parametrize("doc, shard_id, class_name", TODAY, ids=IDS)
def test_a_kind_not_imported_loads_with_its_id_and_its_document(doc, shard_id, class_name, monkeypatch):
    """A report reading a hunt's run folder may not have imported the hunt: its shards load as
    ``UnloadedShard`` -- so a kind defined outside ``verify.corpora`` keeps the id that gives."""
    shard = Shard.from_json(doc)
    if type(shard).__module__.startswith("verify.corpora."):
        return  # importing verify.corpora defines every corpus kind (next test)
    monkeypatch.delitem(shard_module._KINDS, doc["kind"])
    unloaded = Shard.from_json(doc)
    assert isinstance(unloaded, UnloadedShard) and unloaded.id == shard_id and unloaded.to_json() == doc
    assert not unloaded.has_records
    with pytest.raises(ValueError, match="no records"):
        unloaded.read()


def test_a_fresh_process_knows_every_corpus_kind_once_it_reads_a_shard():
    code = "import verify.corpora.shards as s; print(' '.join(sorted(s.kinds())))"
    env = {**os.environ, "PYTHONPATH": str(Path(shard_module.__file__).parents[2])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    corpus_kinds = {doc["kind"] for doc, _, name in TODAY
                    if Shard.from_json(doc).__class__.__module__.startswith("verify.corpora.")}
    assert set(out.split()) == corpus_kinds


def test_a_kind_is_one_class():
    with pytest.raises(TypeError, match="already"):
        type("Another", (HuntShard,), {"kind": "unicode"})


def test_a_document_that_is_no_shard_is_refused():
    for doc in ({"kind": "generated"}, {**TODAY[0][0], "colour": "red"}, {**TODAY[0][0], "extra": [1]},
                {**TODAY[14][0], "extra": {"phase": "sideways"}}):
        with pytest.raises((TypeError, KeyError, ValueError)):
            Shard.from_json(doc)


def test_hunt_shards_have_no_records_and_corpus_shards_count_without_reading_where_they_can():
    hunt = Shard.from_json(TODAY[10][0])
    assert not hunt.has_records and hunt.byte_size is None
    generated = GeneratedShard("g", start=0, stop=16, generator=(0, 16, 0))
    assert generated.has_records and generated.record_count() == 16 == count_records(generated)
    assert len(list(generated.with_limit(5).records())) == 5 and generated.with_limit(5).id == "generated:0[0:16]|limit=5"
