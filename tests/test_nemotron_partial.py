"""A partial Nemotron-CC mirror behaves one way (issue 18, item 8).

With the full ``data-jsonl.paths.gz`` and some data files missing, every missing file is one
``bad-input`` record (``PATH:1``, "file not found") and the run goes on -- the same whether it
is the first selected file or a later one; listing never opens or probes a data file. Only a
root holding none of the selected partition folders is refused at listing (a wrong root).
A hub copy whose subset folders sit at the root (no ``data/``) is the ``hub-root`` layout.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import run_cli
import test_corpora_scale as scale
from test_corpora_scale import records
from verify.corpora import open_corpus
from verify.errors import CorpusError
from verify.sample import BadRecord

cc_mirror, hub_mirror, planted = scale.cc_mirror, scale.hub_mirror, scale.planted  # the mirrors' fixtures

HIGH_FIRST = "data-jsonl/quality=high/kind=actual/kind2=actual/CC-MAIN-2024-10-part-00000.jsonl.zstd"
HIGH_LATER = "data-jsonl/quality=high/kind=synthetic/kind2=actual/CC-MAIN-2024-10-part-00001.jsonl.zstd"
MEDIUM_LATER = "data-jsonl/quality=medium/kind=actual/kind2=actual/CC-MAIN-2024-10-part-00001.jsonl.zstd"


def missing_records(got: list) -> list[BadRecord]:
    return [r for r in got if isinstance(r, BadRecord) and "file not found" in r.reason]


@pytest.mark.parametrize("removed", [[HIGH_FIRST], [HIGH_LATER], [HIGH_FIRST, MEDIUM_LATER]])
def test_every_missing_file_is_one_bad_input_record_first_or_later(cc_mirror, removed):
    for rel in removed:
        (cc_mirror / rel).unlink()
    source = open_corpus("nemotron-cc", root=str(cc_mirror))
    shards = source.shards()
    assert len(shards) == 8 and source.describe()["listing"] == "paths file data-jsonl.paths.gz"
    got = records(source)
    missing = missing_records(got)
    assert [m.position for m in missing] == [f"{cc_mirror / rel}:1" for rel in sorted(removed)]
    assert all(m.reason.startswith("file not found") for m in missing)
    samples = [r for r in got if not isinstance(r, BadRecord)]
    planted_bad = 0 if HIGH_FIRST in removed else 2  # the first file holds two planted bad records
    assert len(samples) == 12 * (8 - len(removed)) - planted_bad
    assert len(got) - len(samples) == len(removed) + planted_bad


def test_a_missing_partition_folder_or_a_filtered_selection_starting_with_a_missing_file(cc_mirror):
    shutil.rmtree(cc_mirror / "data-jsonl" / "quality=low")
    (cc_mirror / HIGH_FIRST).unlink()
    everything = records(open_corpus("nemotron-cc", root=str(cc_mirror)))
    assert len(missing_records(everything)) == 3  # two in the vanished folder, one in quality=high
    high = open_corpus("nemotron-cc", root=str(cc_mirror), where={"quality": "high"})
    assert [m.position for m in missing_records(records(high))] == [f"{cc_mirror / HIGH_FIRST}:1"]
    low = open_corpus("nemotron-cc", root=str(cc_mirror), where={"quality": "low"})  # the first line's folder is
    assert len(missing_records(records(low))) == 2                                    # gone: another line decides


def test_a_root_holding_none_of_the_selection_is_refused_at_listing(cc_mirror, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(cc_mirror / "data-jsonl.paths.gz", elsewhere)
    with pytest.raises(CorpusError, match="not found under the root"):
        open_corpus("nemotron-cc", root=str(elsewhere))


def test_verify_run_on_a_partial_mirror_reports_first_and_later_missing_files_alike(tmp_path, cc_mirror, tiny_spec,
                                                                                    planted):
    def run(out: Path, *extra: str):
        return run_cli("run", "--reference", tiny_spec, "--candidate", planted, "--corpus", "nemotron-cc",
                       "--corpus-root", str(cc_mirror), "--where", "quality=high", "--out", str(out),
                       "--no-progress", "--minimize-budget", "0", "--in-process", *extra)

    (cc_mirror / HIGH_FIRST).rename(tmp_path / "first.zstd")
    (cc_mirror / HIGH_LATER).unlink()
    proc = run(tmp_path / "partial")
    assert proc.returncode == 1, proc.stderr
    manifest = json.loads((tmp_path / "partial" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["counts"]["samples"] == 2 * 12
    bad = [json.loads(line) for line in (tmp_path / "partial" / "divergences.jsonl").read_text().splitlines()
           if line and json.loads(line)["kind"] == "bad-input"]
    assert [(b["sample_id"], b["error"]["message"].split(" (")[0]) for b in bad] == [
        (f"{cc_mirror / HIGH_FIRST}:1", "file not found"), (f"{cc_mirror / HIGH_LATER}:1", "file not found")]
    strict = run(tmp_path / "strict", "--strict")
    assert strict.returncode == 2 and len(strict.stderr.strip().splitlines()) == 1
    assert "file not found" in strict.stderr and HIGH_FIRST in strict.stderr


# --- the hub's Parquet tree with its subset folders at the root ------------------------------

def test_hub_subset_folders_at_the_root_are_the_hub_root_layout(hub_mirror, tmp_path):
    nested = open_corpus("nemotron-cc", root=str(hub_mirror))
    flat = tmp_path / "flat"
    shutil.copytree(hub_mirror / "data", flat)
    (flat / "README.md").write_text("not data\n")
    for root in (flat, hub_mirror / "data"):  # a download of data/ alone, or --corpus-root pointing into it
        source = open_corpus("nemotron-cc", root=str(root))
        described = source.describe()
        assert described["layout"] == "hub-root" and described["fields"] == nested.describe()["fields"]
        assert described["id_field"] == "id"
        assert [(getattr(r, "id", None), getattr(r, "text", None)) for r in records(source)] == \
               [(getattr(r, "id", None), getattr(r, "text", None)) for r in records(nested)]
        medium = open_corpus("nemotron-cc", root=str(root), where={"subset": "Medium-Quality"})
        assert {s.partition["subset"] for s in medium.shards()} == {"Medium-Quality"} and len(medium.shards()) == 2
    assert open_corpus("nemotron-cc", root=str(hub_mirror)).describe()["layout"] == "hub"  # data/ still wins


def test_verify_run_on_a_hub_copy_without_data_folder(tmp_path, hub_mirror, tiny_spec, planted):
    flat = tmp_path / "flat"
    shutil.copytree(hub_mirror / "data", flat)
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", planted, "--corpus", "nemotron-cc",
                   "--corpus-root", str(flat), "--where", "subset=High-Quality", "--out", str(tmp_path / "o"),
                   "--no-progress", "--minimize-budget", "0", "--in-process")
    assert proc.returncode == 1, proc.stderr  # the planted divergences and the null text
    plan = json.loads((tmp_path / "o" / "plan.json").read_text())
    assert plan["sources"][0]["layout"] == "hub-root" and plan["options"]["where"] == {"subset": "High-Quality"}
    counts = json.loads((tmp_path / "o" / "manifest.json").read_text())["counts"]
    assert counts["samples"] == 19 and counts["bad_records"] == 1
