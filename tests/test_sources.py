"""Corpus files: ids that lead back to the input, streaming formats, compression."""

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from verify.corpora import open_corpus
from verify.errors import CorpusError


def ids_and_texts(source):
    return [(s.id, s.text) for s in source.samples()]


def test_jsonl_uses_record_ids_or_file_and_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a1", "text": "first"}\n\n{"text": "third line"}\n', encoding="utf-8")
    assert ids_and_texts(open_corpus(str(path))) == [("a1", "first"), (f"{path}:3", "third line")]


def test_jsonl_segments_become_typed_segments(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "chat", "segments": [["<|sep|>", True], ["user <|sep|>", False]]}) + "\n")
    (sample,) = list(open_corpus(str(path)).samples())
    assert [(s.text, s.allow_special) for s in sample.segments] == [("<|sep|>", True), ("user <|sep|>", False)]


def test_text_field_option(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"content": "x"}\n')
    assert ids_and_texts(open_corpus(str(path), text_field="content")) == [(f"{path}:1", "x")]


@pytest.mark.parametrize("suffix, compress", [
    (".jsonl.gz", gzip.compress),
    (".jsonl.zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    (".jsonl.zstd", lambda b: zstandard.ZstdCompressor().compress(b)),  # Nemotron-CC's spelling
])
def test_compressed_jsonl(tmp_path, suffix, compress):
    path = tmp_path / f"c{suffix}"
    path.write_bytes(compress(b'{"text": "h\\u00e9llo"}\n{"text": "two"}\n'))
    assert [t for _, t in ids_and_texts(open_corpus(str(path)))] == ["héllo", "two"]


def test_text_files_are_read_line_by_line_with_line_ends(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"one\r\ntwo\nthree")
    assert ids_and_texts(open_corpus(str(path))) == [(f"{path}:1", "one\r\n"), (f"{path}:2", "two\n"),
                                                   (f"{path}:3", "three")]


def test_parquet_streams_rows_with_ids(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"content": ["a", "b", "c"], "id": ["x", None, "z"]}), path, row_group_size=2)
    got = ids_and_texts(open_corpus(str(path), text_field="content"))
    assert got == [("x", "a"), (f"{path}:row1", "b"), ("z", "c")]


def test_parquet_without_id_column_uses_rows(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["a", "b"]}), path)
    assert [i for i, _ in ids_and_texts(open_corpus(str(path)))] == [f"{path}:row0", f"{path}:row1"]


def test_parquet_null_text_is_an_error_not_a_skip(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"text": ["a", None]}), path)
    with pytest.raises(CorpusError, match="row1: 'text' is null"):
        list(open_corpus(str(path)).samples())


def test_directories_read_every_supported_file_in_order(tmp_path):
    (tmp_path / "b.txt").write_text("B\n")
    (tmp_path / "a.jsonl").write_text('{"text": "A"}\n')
    (tmp_path / "notes.md").write_text("ignored\n")
    assert [t for _, t in ids_and_texts(open_corpus(str(tmp_path)))] == ["A", "B\n"]


def test_jsonl_null_or_missing_text_is_a_bad_record_saying_which(tmp_path):
    from verify.sample import BadRecord

    path = tmp_path / "c.jsonl"
    path.write_text('{"text": null}\n{"body": "x"}\n{"text": 3}\n')
    (shard,) = open_corpus(str(path)).shards()
    assert [r.reason for r in shard.records() if isinstance(r, BadRecord)] == [
        "field 'text' is null, not text (use --text-field)", "field 'text' is missing (use --text-field)",
        "field 'text' is int, not text (use --text-field)"]


def test_named_corpus_needs_its_environment_variable(monkeypatch):
    from verify.errors import ConfigError

    monkeypatch.delenv("NEMOTRON_CC_DIR", raising=False)
    with pytest.raises(ConfigError, match="NEMOTRON_CC_DIR"):
        open_corpus("nemotron-cc")


def test_lone_surrogates_escaped_in_json_are_refused(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "ok"}\n{"text": "bad \\ud800 here"}\n')
    with pytest.raises(CorpusError, match=r"c.jsonl:2: lone surrogate U\+D800"):
        list(open_corpus(str(path)).samples())
