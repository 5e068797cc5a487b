"""Corpora at scale: small mirrors of both Nemotron-CC layouts (Common Crawl's hive
partitions with data-jsonl.paths.gz and .jsonl.zstd files; the hub's Parquet tree) and
local ``datasets`` directories, through the named-corpus code path and ``verify run``
end to end: ids, partition filters, bad records, descriptors, sampling, resume, and
fsspec URLs giving what plain paths give."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from conftest import run_cli
from verify.corpora import open_corpus
from verify.corpora.shards import Shard
from verify.errors import ConfigError, CorpusError, UsageError
from verify.sample import BadRecord

PARTITIONS = [("high", "actual"), ("high", "synthetic"), ("medium", "actual"), ("low", "actual")]
CC_PREFIX = "contrib/Nemotron/Nemotron-CC/"  # how Common Crawl's paths file spells its lines


def cc_record(quality: str, kind: str, part: int, i: int) -> dict:
    text = f"{quality} {kind} part {part} record {i}: " + ("straße und fuß " if i % 3 == 0 else "plain words ") * 3
    return {"warc_record_id": f"<urn:uuid:{quality}-{kind}-{part}-{i}>", "text": text, "language": "en"}


@pytest.fixture
def cc_mirror(tmp_path) -> Path:
    """quality=*/kind=*/kind2=actual/CC-MAIN-*.jsonl.zstd, 2 files per partition, 12 records each;
    in quality=high/kind=actual part 0: a null text (line 4), a missing text (line 7), a record
    without a warc_record_id (line 9)."""
    root = tmp_path / "nemotron-cc"
    lines = []
    for quality, kind in PARTITIONS:
        for part in range(2):
            rel = f"data-jsonl/quality={quality}/kind={kind}/kind2=actual/CC-MAIN-2024-10-part-{part:05d}.jsonl.zstd"
            records = [cc_record(quality, kind, part, i) for i in range(12)]
            if (quality, kind, part) == ("high", "actual", 0):
                records[3]["text"] = None
                del records[6]["text"]
                del records[8]["warc_record_id"]
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()
            path.write_bytes(zstandard.ZstdCompressor().compress(body))
            lines.append(CC_PREFIX + rel)
    (root / "data-jsonl.paths.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return root


@pytest.fixture
def hub_mirror(tmp_path) -> Path:
    """data/<subset>/part-*.parquet with text and id columns, several row groups, one null text."""
    root = tmp_path / "hub"
    for subset in ("High-Quality", "Medium-Quality"):
        folder = root / "data" / subset
        folder.mkdir(parents=True)
        for part in range(2):
            texts = [f"{subset} {part} row {i} " + ("groß" if i % 4 == 0 else "small") for i in range(10)]
            if (subset, part) == ("High-Quality", 1):
                texts[5] = None
            table = pa.table({"id": [f"{subset}/{part}/{i}" for i in range(10)], "text": texts,
                              "url": [f"https://example.com/{i}" for i in range(10)]})
            pq.write_table(table, folder / f"part-{part:05d}.parquet", row_group_size=4)
    (root / "README.md").write_text("not data\n")
    return root


def records(source_or_shards) -> list:
    shards = source_or_shards.shards() if hasattr(source_or_shards, "shards") else source_or_shards
    return [r for shard in shards for r in shard.records()]


def ids(recs) -> list[str]:
    return [r.position if isinstance(r, BadRecord) else r.id for r in recs]


def roundtrip(shard: Shard) -> Shard:
    return Shard.from_json(json.loads(json.dumps(shard.to_json())))


# --- Common Crawl layout -------------------------------------------------------------

def test_cc_layout_lists_the_paths_file_and_reads_zstd_with_warc_ids(cc_mirror):
    source = open_corpus("nemotron-cc", root=str(cc_mirror))
    described = source.describe()
    assert described["layout"] == "common-crawl" and described["listing"] == "paths file data-jsonl.paths.gz"
    assert described["fields"] == {"quality": ["high", "low", "medium"], "kind": ["actual", "synthetic"],
                                   "kind2": ["actual"]}
    shards = source.shards()
    assert len(shards) == 8 and all(s.kind == "file" and s.path.endswith(".jsonl.zstd") for s in shards)
    assert shards[0].partition == {"quality": "high", "kind": "actual", "kind2": "actual"}
    assert all(f"quality={s.partition['quality']}/kind={s.partition['kind']}/" in s.path for s in shards)
    got = records(source)
    bad = [r for r in got if isinstance(r, BadRecord)]
    first = shards[0].path
    assert [(b.position, b.reason) for b in bad] == [
        (f"{first}:4", "field 'text' is null, not text (use --text-field)"),
        (f"{first}:7", "field 'text' is missing (use --text-field)")]
    samples = [r for r in got if not isinstance(r, BadRecord)]
    assert len(samples) == 8 * 12 - 2
    assert samples[0].id == "<urn:uuid:high-actual-0-0>" and samples[0].text.startswith("high actual part 0")
    assert f"{first}:9" in ids(samples)  # no warc_record_id: file:line
    assert sum(1 for s in samples if s.id.startswith("<urn:uuid:")) == len(samples) - 1


def test_without_a_paths_file_a_walk_finds_the_same_shards(cc_mirror):
    listed = open_corpus("nemotron-cc", root=str(cc_mirror)).shards()
    (cc_mirror / "data-jsonl.paths.gz").unlink()
    (cc_mirror / "data-jsonl" / "notes.txt").write_text("not matched by the layout's patterns\n")
    walked = open_corpus("nemotron-cc", root=str(cc_mirror))
    assert walked.describe()["listing"] == "walk"
    assert walked.shards() == listed


def test_the_root_comes_from_the_environment_and_is_required(cc_mirror, monkeypatch):
    monkeypatch.setenv("NEMOTRON_CC_DIR", str(cc_mirror))
    assert len(open_corpus("nemotron-cc").shards()) == 8
    monkeypatch.delenv("NEMOTRON_CC_DIR")
    with pytest.raises(ConfigError, match="--corpus-root.*NEMOTRON_CC_DIR"):
        open_corpus("nemotron-cc")
    with pytest.raises(CorpusError, match="not a directory"):
        open_corpus("nemotron-cc", root=str(cc_mirror / "missing"))


def test_where_filters_at_listing_time_without_opening_a_data_file(cc_mirror, monkeypatch):
    from verify.corpora import files

    for path in cc_mirror.rglob("*.jsonl.zstd"):  # unreadable unless high: never opened when filtered out
        if "quality=high" not in str(path):
            path.write_bytes(b"not zstd at all")
    opened = []
    real_open = files.open_binary
    monkeypatch.setattr(files, "open_binary", lambda p: opened.append(str(p)) or real_open(p))
    source = open_corpus("nemotron-cc", root=str(cc_mirror), where={"quality": "high"})
    assert opened == [str(cc_mirror / "data-jsonl.paths.gz")]
    shards = source.shards()
    assert len(shards) == 4 and {s.partition["quality"] for s in shards} == {"high"}
    assert source.describe()["files"] == 4 and source.describe()["files_listed"] == 8
    got = records(source)
    assert all("quality=high" in s.path for s in shards)
    assert len([r for r in got if isinstance(r, BadRecord)]) == 2  # the two planted ones, nothing unreadable
    both = open_corpus("nemotron-cc", root=str(cc_mirror), where={"quality": "high", "kind": "synthetic"})
    assert [s.partition["kind"] for s in both.shards()] == ["synthetic", "synthetic"]
    either = open_corpus("nemotron-cc", root=str(cc_mirror), where={"quality": "high,medium"})
    assert len(either.shards()) == 6


def test_where_mistakes_are_one_line_errors_naming_what_exists(cc_mirror):
    with pytest.raises(UsageError, match=r"no field 'qualty' \(its fields: quality, kind, kind2\)"):
        open_corpus("nemotron-cc", root=str(cc_mirror), where={"qualty": "high"})
    with pytest.raises(CorpusError, match=r"quality=hgh.*quality: high, low, medium"):
        open_corpus("nemotron-cc", root=str(cc_mirror), where={"quality": "hgh"})
    with pytest.raises(UsageError, match="no partition fields"):
        open_corpus("smoke", where={"quality": "high"})
    with pytest.raises(UsageError, match="no partition fields"):
        open_corpus(str(cc_mirror), where={"quality": "high"})


def test_paths_file_lines_resolve_against_any_mirror_root(cc_mirror, tmp_path):
    """Lines written relative to the root itself work as well as Common Crawl's own prefix."""
    lines = gzip.decompress((cc_mirror / "data-jsonl.paths.gz").read_bytes()).decode().split()
    (cc_mirror / "data-jsonl.paths.gz").write_bytes(
        gzip.compress("\n".join(line[len(CC_PREFIX):] for line in lines).encode()))
    plain = open_corpus("nemotron-cc", root=str(cc_mirror)).shards()
    assert len(plain) == 8 and all(Path(s.path).is_file() for s in plain)
    # a missing file is a bad-input record when it runs (tests/test_nemotron_partial.py); a partition
    # folder missing under every tail of its path means the root is wrong: refused at listing
    (cc_mirror / "data-jsonl.paths.gz").write_bytes(gzip.compress(b"data-jsonl/quality=nowhere/missing.jsonl.zstd\n"))
    with pytest.raises(CorpusError, match="not found under the root"):
        open_corpus("nemotron-cc", root=str(cc_mirror))


# --- hub Parquet layout ----------------------------------------------------------------

def test_hub_layout_parquet_with_subset_fields_ids_and_null_text(hub_mirror):
    source = open_corpus("nemotron-cc", root=str(hub_mirror))
    described = source.describe()
    assert described["layout"] == "hub" and described["id_field"] == "id"  # warc_record_id absent: next candidate
    assert described["fields"] == {"subset": ["High-Quality", "Medium-Quality"]}
    got = records(source)
    bad = [r for r in got if isinstance(r, BadRecord)]
    null_file = hub_mirror / "data" / "High-Quality" / "part-00001.parquet"
    assert [(b.position, b.reason) for b in bad] == [(f"{null_file}:row5", "'text' is null, not text")]
    assert ids(got)[:3] == ["High-Quality/0/0", "High-Quality/0/1", "High-Quality/0/2"]
    assert len(got) == 40
    high = open_corpus("nemotron-cc", root=str(hub_mirror), where={"subset": "Medium-Quality"})
    assert {s.partition["subset"] for s in high.shards()} == {"Medium-Quality"}
    assert all(i.startswith("Medium-Quality/") for i in ids(records(high)))
    with pytest.raises(CorpusError, match="no column 'body'"):
        open_corpus("nemotron-cc", root=str(hub_mirror), text_field="body")


def test_an_empty_root_names_the_layouts_it_looked_for(tmp_path):
    (tmp_path / "x.md").write_text("nothing\n")
    with pytest.raises(CorpusError, match=r"no corpus files in any known layout \(common-crawl: data-jsonl.paths.gz"):
        open_corpus("nemotron-cc", root=str(tmp_path))


# --- fsspec URLs ------------------------------------------------------------------------

def plain_view(recs) -> list[tuple[str, str]]:
    """(id or position without the URL scheme, text or reason)."""
    return [(i.removeprefix("file://"), r.reason if isinstance(r, BadRecord) else r.text) for i, r in zip(ids(recs), recs)]


@pytest.mark.parametrize("layout", ["cc", "hub"])
def test_a_file_url_root_gives_the_same_samples_as_the_plain_path(cc_mirror, hub_mirror, layout):
    root = cc_mirror if layout == "cc" else hub_mirror
    plain = open_corpus("nemotron-cc", root=str(root), where={"quality": "high"} if layout == "cc" else None)
    url = open_corpus("nemotron-cc", root="file://" + str(root), where={"quality": "high"} if layout == "cc" else None)
    assert [s.path for s in url.shards()] == ["file://" + s.path for s in plain.shards()]
    assert [s.partition for s in url.shards()] == [s.partition for s in plain.shards()]
    assert plain_view(records(url)) == plain_view(records(plain))
    sampled = [replace(s, sample_rate=0.5, sample_seed=11) for s in url.shards()]
    plain_sampled = [replace(s, sample_rate=0.5, sample_seed=11) for s in plain.shards()]

    def with_ids(recs):  # sampling is keyed on record ids; a bad record's key is its position (path included)
        return [(r.id, r.text) for r in recs if not isinstance(r, BadRecord) and not r.id.startswith(("/", "file://"))]

    picked = with_ids(records(sampled))
    assert picked and picked == with_ids(records(plain_sampled))


def test_remote_globs_and_directories_of_parquet_dumps(tmp_path):
    """A fineweb-style dump tree (text, id, dump, url) through file:// and memory:// URLs."""
    import fsspec

    dump = tmp_path / "fineweb" / "data"
    memory = fsspec.filesystem("memory")
    for name in ("CC-MAIN-2024-10", "CC-MAIN-2024-18"):
        (dump / name).mkdir(parents=True)
        table = pa.table({"text": [f"{name} doc {i}" for i in range(5)], "id": [f"{name}-{i}" for i in range(5)],
                          "dump": [name] * 5, "url": ["https://example.com"] * 5})
        pq.write_table(table, dump / name / "000_00000.parquet")
        with memory.open(f"/fineweb-test/data/{name}/000_00000.parquet", "wb") as fh:
            pq.write_table(table, fh)
    try:
        local = [(s.id, s.text) for s in open_corpus(str(dump)).samples()]
        assert len(local) == 10 and local[0] == ("CC-MAIN-2024-10-0", "CC-MAIN-2024-10 doc 0")
        for value in (f"file://{dump}/**/*.parquet", f"file://{dump}", "memory://fineweb-test/data/*/*.parquet",
                      "memory://fineweb-test/data"):
            source = open_corpus(value)
            assert all(s.kind == "file" and "://" in s.path for s in source.shards()), value
            assert [(s.id, s.text) for s in source.samples()] == local, value
        with pytest.raises(CorpusError, match="no corpus files match"):
            open_corpus(f"file://{dump}/**/*.jsonl")
    finally:
        memory.rm("/fineweb-test", recursive=True)


def test_remote_uncompressed_jsonl_is_read_by_byte_ranges(tmp_path, monkeypatch):
    from verify.corpora import shards as shard_module

    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps({"text": f"record {i} " + "y" * (i % 23)}) + "\n" for i in range(300)))
    whole = [s.text for s in open_corpus(str(path)).samples()]
    monkeypatch.setattr(shard_module, "SPLIT_BYTES", 501)
    source = open_corpus(f"file://{path}")
    assert len(source.shards()) > 10 and all(s.kind == "byte-range" for s in source.shards())
    assert [s.text for s in source.samples()] == whole
    assert roundtrip(source.shards()[3]) == source.shards()[3]


# --- hf: corpora through datasets ---------------------------------------------------------

@pytest.fixture
def saved_dataset(tmp_path) -> Path:
    import datasets

    texts = [f"saved row {i} " + ("ß" if i % 5 == 0 else "") for i in range(20)]
    texts[7] = None
    ds = datasets.Dataset.from_dict({"text": texts, "doc_id": [f"doc-{i}" for i in range(20)]})
    path = tmp_path / "saved"
    ds.save_to_disk(str(path), num_shards=3)
    return path


@pytest.fixture
def dataset_folder(tmp_path) -> Path:
    folder = tmp_path / "folder" / "data"
    folder.mkdir(parents=True)
    for n in range(3):
        pq.write_table(pa.table({"text": [f"file {n} row {i}" for i in range(4)], "id": [f"{n}:{i}" for i in range(4)]}),
                       folder / f"train-{n:05d}-of-00003.parquet")
    return folder.parent


def test_a_saved_dataset_is_one_shard_per_arrow_file_with_split_wide_rows(saved_dataset):
    source = open_corpus(f"hf:{saved_dataset}")
    shards = source.shards()
    assert source.describe()["mode"] == "saved" and source.describe()["rows"] == 20
    assert len(shards) == 3 and len({s.id for s in shards}) == 3 and all(s.kind == "hf" for s in shards)
    got = records(source)
    assert len(got) == 20
    label = f"hf:{saved_dataset}/default/train"
    assert ids(got) == [f"{label}#{i}" for i in range(20)]  # --id-field id: absent, rows count the split
    assert [(b.position, b.reason) for b in got if isinstance(b, BadRecord)] == [(f"{label}#7", "'text' is null, not text")]
    with_ids = open_corpus(f"hf:{saved_dataset}", id_field="doc_id")
    assert ids(records(with_ids))[:3] == ["doc-0", "doc-1", "doc-2"]
    for shard in with_ids.shards():
        assert ids(roundtrip(shard).records()) == ids(shard.records())


def test_a_data_folder_streams_one_shard_per_file(dataset_folder):
    source = open_corpus(f"hf:{dataset_folder}::train")
    shards = source.shards()
    assert source.describe()["mode"] == "streaming" and len(shards) == 3
    assert [ids(s.records()) for s in shards] == [[f"{n}:{i}" for i in range(4)] for n in range(3)]
    no_ids = open_corpus(f"hf:{dataset_folder}", id_field="missing")
    assert ids(no_ids.shards()[1].records())[0] == f"hf:{dataset_folder}/default/train/shard-1#0"
    again = roundtrip(shards[2])
    assert again == shards[2] and [r.text for r in again.records()] == [f"file 2 row {i}" for i in range(4)]
    with pytest.raises(CorpusError, match="no column 'body'"):
        open_corpus(f"hf:{dataset_folder}", text_field="body")
    with pytest.raises(CorpusError, match="cannot load"):
        open_corpus(f"hf:{dataset_folder}::validation")
    with pytest.raises(ConfigError, match="hf:NAME_OR_PATH"):
        open_corpus(f"hf:{dataset_folder}:a:b:c")


# --- descriptors and sampling on every kind ----------------------------------------------

@pytest.fixture
def every_kind(cc_mirror, hub_mirror, saved_dataset, dataset_folder) -> dict[str, list[Shard]]:
    return {"cc": open_corpus("nemotron-cc", root=str(cc_mirror)).shards(),
            "cc-url": open_corpus("nemotron-cc", root="file://" + str(cc_mirror)).shards(),
            "hub": open_corpus("nemotron-cc", root=str(hub_mirror)).shards(),
            "hf-saved": open_corpus(f"hf:{saved_dataset}").shards(),
            "hf-stream": open_corpus(f"hf:{dataset_folder}").shards()}


def test_every_shard_kind_round_trips_and_samples_the_same_records_twice(every_kind):
    for kind, shards in every_kind.items():
        again = [roundtrip(s) for s in shards]
        assert again == shards, kind
        assert ids(records(again)) == ids(records(shards)), kind
        sampled = [replace(s, sample_rate=0.4, sample_seed=5) for s in shards]
        picked = ids(records(sampled))
        assert picked == ids(records([roundtrip(s) for s in sampled])), kind
        everything = ids(records(shards))
        assert 0 < len(picked) < len(everything) and set(picked) <= set(everything), kind
        other = ids(records([replace(s, sample_seed=6) for s in sampled]))
        assert other != picked, kind


# --- verify run end to end ----------------------------------------------------------------

PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    """The tiny tokenizer with a planted bug: in a text holding 'ß' the middle token becomes 0."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def encode_batch(self, texts):
        out = []
        for text, enc in zip(texts, self.tok.encode_batch(list(texts), add_special_tokens=False)):
            ids = list(enc.ids)
            if "\\u00df" in text and ids:
                ids[len(ids) // 2] = 0
            out.append(ids)
        return out

def planted():
    return Engine()
'''


@pytest.fixture
def planted(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "scale_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    return "python:scale_plugin:planted"


def finding_records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines() if line]


def test_verify_run_on_nemotron_cc_with_where_sample_and_resume(tmp_path, cc_mirror, tiny_spec, planted):
    def run(out: Path, root: str, *extra: str):
        return run_cli("run", "--reference", tiny_spec, "--candidate", planted, "--corpus", "nemotron-cc",
                       "--corpus-root", root, "--where", "quality=high", "--sample", "0.6", "--seed", "3",
                       "--out", str(out), "--no-progress", "--minimize-budget", "0", "--in-process", *extra)

    first = tmp_path / "first"
    proc = run(first, str(cc_mirror), "--workers", "2")
    assert proc.returncode == 1, proc.stderr
    manifest = json.loads((first / "manifest.json").read_text())
    plan = json.loads((first / "plan.json").read_text())
    assert plan["options"]["where"] == {"quality": "high"}
    assert [s["extra"]["quality"] for s in plan["shards"]] == ["high"] * 4
    (source,) = plan["sources"]
    assert source["layout"] == "common-crawl" and source["files"] == 4 and source["where"] == {"quality": "high"}
    found = finding_records(first)
    assert found and all("quality=high" in r["sample_id"] or r["sample_id"].startswith("<urn:uuid:high-")
                         for r in found)
    divergent = [r for r in found if r["kind"] == "ids"]
    assert divergent and all("ß" in "".join(t for t, _ in r["input"]) for r in divergent)
    counts = manifest["counts"]
    # the sample is a deterministic subset: the planted bad records fall in it or not, never differently
    expected = [s for shard in plan["shards"] for s in Shard.from_json(shard).records()]
    assert counts["samples"] == sum(1 for r in expected if not isinstance(r, BadRecord)) < 4 * 12
    assert counts["bad_records"] == sum(1 for r in expected if isinstance(r, BadRecord))

    second = tmp_path / "second"
    assert run(second, str(cc_mirror), "--workers", "1").returncode == 1
    assert finding_records(second) == found
    assert json.loads((second / "manifest.json").read_text())["counts"] == counts

    for marker in sorted((second / "shards").glob("[0-9]*[0-9].json"))[2:]:  # as if killed after two shards
        marker.unlink()
    (second / "divergences.jsonl").unlink()
    # as the README says it: the plan recorded the root, so --out is all a resume needs
    resumed = run_cli("run", "--resume", "--out", str(second), "--no-progress", "--minimize-budget", "0",
                      "--in-process")
    assert resumed.returncode == 1, resumed.stderr
    after = json.loads((second / "manifest.json").read_text())
    assert after["counts"] == counts and after["resume"]["shards_run_after_resume"] == 2
    assert finding_records(second) == found

    url = tmp_path / "url"  # the same samples by record id; id-less records are keyed on their path
    assert run(url, f"file://{cc_mirror}", "--workers", "1").returncode == 1
    assert [r["sample_id"] for r in finding_records(url) if r["kind"] == "ids"] == [r["sample_id"] for r in divergent]
    assert all(r["sample_id"].startswith("file://") for r in finding_records(url) if r["kind"] == "bad-input")


def test_verify_run_where_with_an_unknown_field_is_a_usage_error(tmp_path, cc_mirror, tiny_spec, planted):
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", planted, "--corpus", "nemotron-cc",
                   "--corpus-root", str(cc_mirror), "--where", "lang=en", "--out", str(tmp_path / "o"),
                   "--no-progress", "--in-process")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert "no field 'lang'" in line and "quality, kind, kind2" in line
