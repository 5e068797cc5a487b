"""Hostile files (issue 24, attacks 7-11, 13-15, 17-19 and what was seen beside them): corpus
records nested, empty, endless or countless; a corrupt file in a corpus folder; a symlink out of
it; configuration nested too deeply or past the command line's bounds; committed files changed
after they were written. Each is a ``bad-input`` record with its position (the run goes on) or
one line and exit 2, within 1 GB, never a traceback or exit 3."""

from __future__ import annotations

import json
import os
import random
import shutil

import pytest
import zstandard

from faults.hostile import PEAK_LIMIT, left_behind, manifest, measured, one_line_exit, records, tagged_env
from verify.limits import MAX_RECORD_BYTES

pytestmark = pytest.mark.faults


@pytest.fixture
def twin(tmp_path, tiny_tokenizer_json):
    """A second copy of the tiny vocabulary: a candidate that agrees with the reference everywhere."""
    path = tmp_path / "twin.tokenizer.json"
    path.write_bytes(tiny_tokenizer_json.read_bytes())
    return f"hf:{path}"


def run_argv(tiny_spec, twin, out, corpus, *options):
    return ["run", "--reference", tiny_spec, "--candidate", twin, "--corpus", str(corpus), "--out", str(out),
            "--no-progress", "--minimize-budget", "0", "--in-process", "--workers", "1", *options]


def bad_records(out):
    return {r["sample_id"]: r for r in records(out) if r["kind"] == "bad-input"}


def verified(out):
    return manifest(out)["counts"]["verified"]


# --- 7-9: records nested, empty, endless --------------------------------------------------------

def test_a_jsonl_line_nested_deeper_than_python_parses_is_a_bad_input_record(tmp_path, tiny_spec, twin):
    """Before: exit 3, a 24-line traceback (RecursionError in json.loads)."""
    depth = random.randrange(50_000, 150_000)
    corpus = tmp_path / "nested.jsonl"
    corpus.write_text('{"text": "before"}\n' + "[" * depth + '\n{"text": "after"}\n')
    env = tagged_env()
    ran = measured(run_argv(tiny_spec, twin, tmp_path / "out", corpus), env, tmp_path)
    assert ran.rc == 1 and ran.stderr.strip() == "", ran.stderr
    bad = bad_records(tmp_path / "out")
    assert list(bad) == [f"{corpus}:2"] and "nested deeper" in bad[f"{corpus}:2"]["error"]["message"]
    assert verified(tmp_path / "out") == 2
    assert left_behind(env) == []


def test_a_record_without_segments_is_a_bad_input_record_not_an_engine_error(tmp_path, tiny_spec, twin):
    """Before: an `error` finding for both engines ("need at least one array to concatenate")."""
    corpus = tmp_path / "empty.jsonl"
    corpus.write_text('{"segments": []}\n{"segments": [["fine", false]]}\n')
    ran = measured(run_argv(tiny_spec, twin, tmp_path / "out", corpus), tagged_env(), tmp_path)
    assert ran.rc == 1 and ran.stderr.strip() == "", ran.stderr
    bad = bad_records(tmp_path / "out")
    assert list(bad) == [f"{corpus}:1"] and "'segments'" in bad[f"{corpus}:1"]["error"]["message"]
    assert manifest(tmp_path / "out")["counts"]["error"] == 0 and verified(tmp_path / "out") == 1


def _zst(path, chunks):
    with open(path, "wb") as fh, zstandard.ZstdCompressor(level=1).stream_writer(fh) as writer:
        for chunk in chunks:
            writer.write(chunk)


def test_a_decompression_bomb_of_one_endless_line_is_a_bad_record_read_in_flat_memory(tmp_path, tiny_spec, twin):
    """Before: a 49 KB .txt.zst that decompressed to one 1.5 GB line took memory past 4 GB and
    growing. The line is skipped in chunks; reading resumes at the next newline."""
    size = MAX_RECORD_BYTES + random.randrange(8 << 20, 96 << 20)
    block = b"a" * (1 << 20)
    corpus = tmp_path / "bomb.txt.zst"
    _zst(corpus, [block] * (size // len(block)) + [b"\nafter the bomb\n"])
    env = tagged_env()
    ran = measured(run_argv(tiny_spec, twin, tmp_path / "out", corpus), env, tmp_path)
    assert ran.rc == 1 and ran.stderr.strip() == "", ran.stderr
    bad = bad_records(tmp_path / "out")
    assert list(bad) == [f"{corpus}:1"] and "over the limit" in bad[f"{corpus}:1"]["error"]["message"]
    assert verified(tmp_path / "out") == 1  # line 2: read after the bomb
    assert ran.peak_bytes < PEAK_LIMIT, ran.peak_bytes
    assert left_behind(env) == []


def test_limit_stops_after_n_records_without_counting_the_rest(tmp_path, tiny_spec, twin):
    """Before: `--limit 200` of a 2 MB .jsonl.zst holding 24 GB of short lines ran nothing in 120 s
    (every record of the shard was counted first). The same frame, repeated, makes the size."""
    line = b'{"text": "short"}\n'
    frame = zstandard.ZstdCompressor(level=3).compress(line * ((64 << 20) // len(line)))  # 64 MB, its size declared
    corpus = tmp_path / "huge.jsonl.zst"
    repeats = random.randrange(150, 400)  # 10-25 GB decompressed
    corpus.write_bytes(frame * repeats)
    limit = random.randrange(50, 500)
    ran = measured(run_argv(tiny_spec, twin, tmp_path / "out", corpus, "--limit", str(limit)), tagged_env(), tmp_path)
    assert ran.rc == 0, ran.stderr
    assert manifest(tmp_path / "out")["counts"]["samples"] == limit
    assert ran.cpu_s < 120, ran.cpu_s  # reading it all: minutes of CPU at the least


def test_a_corrupt_parquet_file_in_a_folder_is_one_bad_record_and_the_rest_runs(tmp_path, tiny_spec, twin):
    """Before: exit 2 with two lines (pyarrow's message has a newline) and the whole folder refused."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"text": "one"}\n{"text": "two"}\n')
    (folder / "b.parquet").write_bytes(b"PAR1" + random.randbytes(random.randrange(100, 5000)) + b"PAR1")
    ran = measured(run_argv(tiny_spec, twin, tmp_path / "out", folder), tagged_env(), tmp_path)
    assert ran.rc == 1 and ran.stderr.strip() == "", ran.stderr
    bad = bad_records(tmp_path / "out")
    (position,) = bad
    assert position == f"{folder / 'b.parquet'}:row0" and "\n" not in bad[position]["error"]["message"]
    assert verified(tmp_path / "out") == 2


def test_a_symlink_out_of_a_corpus_folder_is_skipped_and_counted(tmp_path, tiny_spec, twin):
    """Before: a symlink inside a corpus folder to a file outside it was followed."""
    folder, outside = tmp_path / "corpus", tmp_path / "secret"
    folder.mkdir()
    outside.mkdir()
    (folder / "in.jsonl").write_text('{"text": "inside"}\n')
    (outside / "secret.jsonl").write_text('{"text": "outside the corpus"}\n' * 3)
    (folder / "link.jsonl").symlink_to(outside / "secret.jsonl")
    (folder / "linked-folder").symlink_to(outside)
    ran = measured(run_argv(tiny_spec, twin, tmp_path / "out", folder), tagged_env(), tmp_path)
    assert ran.rc == 0, ran.stderr
    got = manifest(tmp_path / "out")
    assert got["counts"]["samples"] == 1 and got["sources"][0]["symlinks_skipped"] == 2
    followed = measured(run_argv(tiny_spec, twin, tmp_path / "followed", folder, "--follow-symlinks"), tagged_env(),
                        tmp_path)
    assert followed.rc == 0, followed.stderr
    assert manifest(tmp_path / "followed")["counts"]["samples"] == 7


# --- 13-15: configuration too deep, or past the command line's bounds --------------------------

SUITE = '''
[gate]
name = "hostile"
reference = "{reference}"
candidates = ["{candidate}"]
in_process = true
minimize_budget = 0
{gate_extra}

[[check]]
kind = "corpus"
corpus = "{corpus}"

[[check]]
kind = "fuzz"
{fuzz}
'''


def suite(tmp_path, tiny_spec, twin, fuzz="examples = 10", gate_extra=""):
    corpus = tmp_path / "gate-corpus.jsonl"
    corpus.write_text('{"text": "gate text"}\n')
    path = tmp_path / "suite.toml"
    path.write_text(SUITE.format(reference=tiny_spec, candidate=twin, corpus=corpus, fuzz=fuzz, gate_extra=gate_extra))
    return path


@pytest.mark.parametrize("fuzz, words", [
    ("examples = 1e21", ["'examples'", "whole number"]),  # a float
    ("examples = BIG", ["'examples'", "must be from 1 to"]),  # BIG: drawn past --max-examples' bound
    ("seconds = 1e308", ["'seconds'", "at most 1e+06"]),  # the CLI refuses --budget 1e308 too
])
def test_suite_values_past_the_command_lines_bounds_are_refused_before_any_check_runs(tmp_path, tiny_spec, twin,
                                                                                      fuzz, words):
    """Before: `examples = 1e21` was refused only once the first check had run; `seconds = 1e308`
    was accepted."""
    out = tmp_path / "gate"
    fuzz = fuzz.replace("BIG", str(random.randrange(10**7, 2**62)))
    ran = measured(["gate", str(suite(tmp_path, tiny_spec, twin, fuzz)), "--out", str(out)], tagged_env(), tmp_path)
    one_line_exit(ran, 2, *words)
    assert not (out / "checks").exists()


@pytest.mark.parametrize("where", ["allowlist", "suite"])
def test_toml_nested_deeper_than_python_parses_is_one_line(tmp_path, tiny_spec, twin, where):
    """Before: exit 3, RecursionError."""
    nested = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    if where == "allowlist":
        (tmp_path / "allowlist.toml").write_text(nested)
        path = suite(tmp_path, tiny_spec, twin, gate_extra='allowlist = "allowlist.toml"')
    else:
        path = tmp_path / "suite.toml"
        path.write_text(nested)
    ran = measured(["gate", str(path), "--out", str(tmp_path / "gate")], tagged_env(), tmp_path)
    one_line_exit(ran, 2, "nested deeper than Python parses")


# --- 17-19: committed files changed after they were written -------------------------------------

@pytest.fixture(scope="module")
def finished_once(tmp_path_factory, tiny_spec, tiny_tokenizer_json):
    """A finished run with findings (the planted engine, in a folder on the runs' PYTHONPATH)."""
    from test_pipeline import PLUGIN

    folder = tmp_path_factory.mktemp("hostile-run")
    (folder / "plugins").mkdir()
    (folder / "plugins" / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    env = {"PYTHONPATH": os.pathsep.join([str(folder / "plugins"), os.environ.get("PYTHONPATH", "")])}
    out = folder / "run"
    ran = measured(["run", "--reference", tiny_spec, "--candidate", "python:pipeline_plugin:planted", "--corpus",
                    "default", "--limit", "64", "--out", str(out), "--no-progress", "--minimize-budget", "0",
                    "--in-process", "--workers", "1"], tagged_env(**env), folder)
    assert ran.rc == 1 and records(out), ran.stderr
    return out, env


@pytest.fixture
def finished(tmp_path, finished_once):
    """A copy of that run, for one test to change; its environment finds the planted engine."""
    out, env = finished_once
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    return copy, tagged_env(**env)


@pytest.mark.parametrize("change", ["nested", "counts", "candidates", "not an object"])
def test_report_on_a_changed_manifest_is_one_line(tmp_path, finished, change):
    """Before: exit 3 (RecursionError, TypeError)."""
    finished, env = finished
    path = finished / "manifest.json"
    doc = json.loads(path.read_text())
    if change == "nested":
        path.write_text('{"counts": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif change == "counts":
        doc["counts"] = "many"
        path.write_text(json.dumps(doc))
    elif change == "candidates":
        doc["candidates"] = [7]
        path.write_text(json.dumps(doc))
    else:
        path.write_text("[1, 2]")
    ran = measured(["report", str(finished)], env, tmp_path)
    one_line_exit(ran, 2, "manifest.json")


def test_a_nested_line_in_a_committed_findings_part_is_one_line_on_resume(tmp_path, finished):
    """Before: exit 3 (RecursionError) when --resume merged the parts."""
    finished, env = finished
    part = sorted((finished / "shards").glob("*.findings.jsonl"))[0]
    with open(part, "a") as fh:
        fh.write("[" * 100_000 + "\n")
    ran = measured(["run", "--resume", "--out", str(finished), "--no-progress", "--in-process", "--workers", "1",
                    "--minimize-budget", "0"], env, tmp_path)
    one_line_exit(ran, 2, part.name, "nested deeper")


def test_a_changed_plan_is_one_line_on_resume(tmp_path, finished):
    finished, env = finished
    plan = json.loads((finished / "plan.json").read_text())
    plan["shards"] = [{"kind": 5}]
    (finished / "plan.json").write_text(json.dumps(plan))
    ran = measured(["run", "--resume", "--out", str(finished), "--no-progress", "--minimize-budget", "0"], env,
                   tmp_path)
    one_line_exit(ran, 2, "plan.json")
