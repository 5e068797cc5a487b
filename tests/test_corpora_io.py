"""The corpus I/O libraries (issue 26): local paths and URLs through one fsspec code path
(``verify.corpora.remote``), hive folders parsed by ``pyarrow.dataset`` and ``--where``
applied with ``pyarrow.compute`` (``verify.corpora.partitioned``), each keeping what the
hand-written code did."""

from __future__ import annotations

import gzip

import fsspec
import pytest
import zstandard

from verify.corpora import files, partitioned, remote


def test_hive_folders_are_fields_with_their_values_as_written():
    rels = ["pre/quality=high/kind=actual/kind2=01/a.jsonl.zstd", "quality=low/kind=a%20b/k=/b.jsonl",
            "=v/a=1=2/c.jsonl", "q=__HIVE_DEFAULT_PARTITION__/d.parquet", "plain/e.txt", "top=1/file=x.txt"]
    assert partitioned.hive_fields("/nowhere", rels) == [
        {"quality": "high", "kind": "actual", "kind2": "01"},  # text, not the number pyarrow would infer
        {"quality": "low", "kind": "a%20b", "k": ""},  # not URL-decoded; an empty value is a value
        {"a": "1=2"},  # a folder without a key is no field; a value may hold "="
        {"q": "__HIVE_DEFAULT_PARTITION__"},  # not null
        {}, {"top": "1"}]  # the file name is no folder


def test_where_keeps_the_files_matching_every_field_and_drops_those_without_it():
    listed = [("a", None, {"quality": "high", "kind": "actual"}), ("b", None, {"quality": "low"}),
              ("c", None, {"kind": "actual"}), ("d", None, {"quality": "high", "kind": "synthetic"})]
    assert partitioned.matching_rows(listed, {"quality": "high"}) == [0, 3]
    assert partitioned.matching_rows(listed, {"quality": "high,low"}) == [0, 1, 3]
    assert partitioned.matching_rows(listed, {"quality": "high", "kind": "actual"}) == [0]
    assert partitioned.matching_rows(listed, {"kind": "actual"}) == [0, 2]


def test_listing_a_paths_file_touches_no_listed_file(tmp_path, monkeypatch):
    """Hive discovery reads paths only: a paths file may list files the mirror lacks."""
    calls = []
    real = remote.url_to_fs

    def counted(path):
        fs, stripped = real(path)
        for name in ("info", "exists", "open", "_open", "ls", "find"):
            method = getattr(fs, name)
            monkeypatch.setattr(fs, name, lambda *a, _m=method, _n=name, **k: calls.append((_n, a[:1])) or _m(*a, **k))
        return fs, stripped

    lines = [f"data/quality={q}/part-{i}.jsonl.zstd" for q in ("high", "low") for i in range(3)]
    monkeypatch.setattr(remote, "url_to_fs", counted)
    fields = partitioned.hive_fields(str(tmp_path), lines)
    assert fields == [{"quality": q} for q in ("high", "low") for _ in range(3)] and calls == []


def test_a_local_walk_lists_symlinked_files_but_not_symlinked_folders(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "k=1").mkdir(parents=True)
    outside.mkdir()
    (root / "k=1" / "a.jsonl").write_text('{"text": "a"}\n')
    (outside / "b.jsonl").write_text('{"text": "b"}\n')
    (root / "k=1" / "b.jsonl").symlink_to(outside / "b.jsonl")
    (root / "k=2").symlink_to(outside)
    assert list(remote.walk(root)) == [("k=1/a.jsonl", 14), ("k=1/b.jsonl", 14)]
    assert list(remote.walk(f"file://{root}")) == list(remote.walk(root))


def test_a_local_path_is_taken_literally(tmp_path):
    folder = tmp_path / "a::b"  # a URL chain to fsspec.core.url_to_fs
    folder.mkdir()
    (folder / "x.txt").write_text("one\ntwo\n")
    path = str(folder / "x.txt")
    assert remote.is_file(path) and remote.size(path) == 8
    assert [s.text for s in files.read_text(path)] == ["one\n", "two\n"]


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".zstd"])
def test_compressed_files_read_alike_local_and_remote(tmp_path, suffix):
    body = b"".join(b'{"text": "line %d"}\n' % i for i in range(50))
    packed = gzip.compress(body) if suffix == ".gz" else (zstandard.ZstdCompressor().compress(body[:400])
                                                          + zstandard.ZstdCompressor().compress(body[400:]))
    local = tmp_path / f"a.jsonl{suffix}"
    local.write_bytes(packed)
    memory = fsspec.filesystem("memory")
    memory.pipe(f"/io-test/a.jsonl{suffix}", packed)
    try:
        for path in (str(local), f"file://{local}", f"memory://io-test/a.jsonl{suffix}"):
            with files.open_binary(path) as fh:
                assert list(fh) == body.splitlines(keepends=True), path
            assert [s.text for s in files.read_jsonl(path, "text", "id")] == [f"line {i}" for i in range(50)]
    finally:
        memory.rm("/io-test", recursive=True)
