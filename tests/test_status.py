"""Progress a person can read: the live line fits the terminal (fields dropped by priority,
the ETA kept), ``OUT/status`` exists from the start and moves inside a long shard (records
and bytes read, from the workers' heartbeats), and large files are cut into shards of a
target size where the format allows (JSONL byte ranges, zstd frames, Parquet row groups)."""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from conftest import REPO
from verify.corpora import files
from verify.corpora import shards as shard_module
from verify.corpora.source import file_source
from verify.counts import Counts
from verify.rundir.status import (KEEP_ALWAYS, PROGRESS_ENV, ProgressScope, RunStatus, ShardHeartbeat, fit,
                                  progress_folder, read_heartbeats)

WAIT_S = 300  # a bound for a broken run, never a pace: every wait below is for a state


def wait_for(predicate, what: str, proc=None):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended (exit {proc.returncode}) before {what}: {proc.stderr.read()}")
        time.sleep(0.02)
    raise AssertionError(f"no {what} within {WAIT_S} s")


# --- the line ---------------------------------------------------------------------------------

def test_fit_drops_the_least_important_fields_first_and_never_the_state_or_eta():
    fields = [(KEEP_ALWAYS, "running"), (2, "verify run [local x2]"), (1, "57/126 shards 45%"), (4, "10,234 samples"),
              (7, "1,234/s"), (6, "2.10 MB/s"), (3, "3 findings"), (KEEP_ALWAYS, "ETA 0:01:23")]
    full = fit(fields)
    assert full.endswith("ETA 0:01:23") and "1,234/s" in full
    for width in range(len(full), 10, -1):
        line = fit(fields, width)
        assert line.startswith("running") and line.endswith("ETA 0:01:23")
        kept = len(line.split("  "))
        assert len(line) <= width or kept == 2  # only the two fields that always stay may overflow
    assert fit(fields, 62) == "running  verify run [local x2]  57/126 shards 45%  ETA 0:01:23"
    assert fit(fields, 45) == "running  57/126 shards 45%  ETA 0:01:23"


def test_the_live_line_fits_an_80_column_terminal_with_the_executor_and_eta(tmp_path):
    from rich.console import Console

    screen = io.StringIO()
    console = Console(file=screen, width=80, force_terminal=True, color_system=None)
    status = RunStatus(tmp_path, 126, 3, label="verify unicode [local x2]", console=console, every_s=3600)
    with status:
        for _ in range(5):
            counts = Counts(samples=123_456, bytes=98_765_432)
            status.shard_done(counts, 1_234_567, None)
        status._progress.refresh()
        assert "ETA" in status._progress.tasks[0].description
        assert len(status._progress.tasks[0].description) <= 79
        assert "[local x2]" in status._progress.tasks[0].description
        status.write("complete")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    drawn = [line.rstrip() for line in plain.replace("\r", "\n").split("\n") if line.strip()]
    assert any(line.startswith("complete") for line in drawn) and all(len(line) <= 80 for line in drawn)
    # the file has every field, whatever the terminal
    written = (tmp_path / "status").read_text()
    assert written.startswith("complete  verify unicode [local x2]  8/126 shards") and "findings" in written


def test_the_status_file_keeps_its_final_state_whatever_the_ticker_does(tmp_path):
    status = RunStatus(tmp_path, 4, 0, terminal=False, every_s=0.001)
    with status:
        status.shard_done(Counts(samples=1), 0, "a")
        status.write("interrupted")
        wait_for(lambda: status._stop.is_set(), "a stopped ticker")
    assert (tmp_path / "status").read_text().startswith("interrupted")


def test_heartbeats_of_shards_in_flight_count_once_and_committed_ones_not(tmp_path):
    folder = progress_folder(tmp_path)
    folder.mkdir(parents=True)
    old = ShardHeartbeat(folder, "s1", size=1000, every_s=0)
    old.path = folder / "111.json"  # a worker that died mid-shard
    old.beat(10, 100)
    (folder / "111.json").write_text(json.dumps({**json.loads((folder / "111.json").read_text()), "at": 1.0}))
    rerun = ShardHeartbeat(folder, "s1", size=1000, every_s=0)
    rerun.path = folder / "222.json"
    rerun.beat(30, 500)
    other = ShardHeartbeat(folder, "s2", every_s=0)
    other.path = folder / "333.json"
    other.beat(7, 70)
    (folder / ".333.json.9.tmp").write_text("{half")  # a write in progress is no heartbeat
    beats = {b["shard"]: b for b in read_heartbeats(folder)}
    assert beats["s1"]["records"] == 30 and beats["s1"]["fraction"] == 0.5 and beats["s2"]["fraction"] is None
    assert [b["shard"] for b in read_heartbeats(folder, {"s1"})] == ["s2"]
    status = RunStatus(tmp_path, 10, 0, terminal=False)
    status.shard_done(Counts(samples=5), 0, "s2")
    line = status.line()
    assert "+30 in flight" in line and "1/10 shards" in line and "ETA" in line


def test_a_scope_that_never_started_leaves_no_out_behind(tmp_path, monkeypatch):
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    out = tmp_path / "out"
    scope = ProgressScope(out, 12, "verify run [local x1]")
    assert (out / "status").read_text().startswith("starting  verify run [local x1]  12 shards")
    assert os.environ[PROGRESS_ENV] == str(progress_folder(out).resolve())
    scope.end(failed=True)
    assert not out.exists() and PROGRESS_ENV not in os.environ


# --- from inside a long shard, in a real run ---------------------------------------------------

PLUGIN = '''
import os, time
from pathlib import Path
from tokenizers import Tokenizer

HOLD = Path(HOLD_DIR)

def wait_for(name):
    while not (HOLD / name).exists():   # the test says when: never a timing guess
        time.sleep(0.01)

class Engine:
    def __init__(self):
        if os.environ.get("VERIFY_PROGRESS_DIR"):   # only the engine the run starts waits
            wait_for("started")
        self.tok = Tokenizer.from_file(VOCAB)
        self.calls = 0
    def encode_batch(self, texts):
        self.calls += 1
        if self.calls == 3:
            wait_for("finish")
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

def make():
    return Engine()
'''


def test_out_status_exists_from_the_start_and_moves_inside_a_long_shard(tmp_path, plugin_dir, tiny_tokenizer_json,
                                                                        tiny_spec, write_jsonl):
    hold = tmp_path / "hold"
    hold.mkdir()
    (plugin_dir / "slow_plugin.py").write_text(
        PLUGIN.replace("HOLD_DIR", repr(str(hold))).replace("VOCAB", repr(str(tiny_tokenizer_json))))
    corpus = write_jsonl([{"text": f"record {i}: naïve café ünïcode text"} for i in range(400)])
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "verify.cli", "run", "--reference", tiny_spec, "--candidate", "python:slow_plugin:make",
         "--corpus", str(corpus), "--out", str(out), "--workers", "1", "--batch-size", "50", "--timeout", "600",
         "--no-progress", "--minimize-budget", "0"],
        cwd=REPO, env={**os.environ, "VERIFY_HEARTBEAT_S": "0"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        line = wait_for(lambda: (out / "status").is_file() and (out / "status").read_text(), "OUT/status", proc)
        assert line.startswith("starting") and "1 shards" in line and "loading engines" in line
        assert not list((out / "shards").glob("[0-9]*.json"))
        (hold / "started").touch()
        # the one shard is held in its third batch: two batches (100 records) were read and shown
        line = wait_for(lambda: "in flight" in (s := (out / "status").read_text()) and s, "in-shard progress", proc)
        flight = int(line.split("+")[1].split(" in flight")[0].replace(",", ""))
        assert line.startswith("running") and "0/1 shards" in line and flight >= 100
        assert not list((out / "shards").glob("[0-9]*.json"))
        (hold / "finish").touch()
        assert proc.wait(timeout=WAIT_S) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    final = (out / "status").read_text()
    assert final.startswith("complete") and "1/1 shards" in final and "400 samples" in final
    assert not progress_folder(out).exists()  # heartbeats are progress, not results: gone with the run


# --- shards of a target size ---------------------------------------------------------------------

def _lines(n: int, seed: int = 1) -> list[str]:
    rnd = random.Random(seed)
    return [json.dumps({"text": "".join(rnd.choice("abc é😀\n\t") for _ in range(rnd.randint(0, 200)))},
                       ensure_ascii=False) + "\n" for _ in range(n)]


def test_a_zstd_file_of_sized_frames_is_cut_by_frames_with_the_byte_range_ids(tmp_path, monkeypatch):
    lines = _lines(2000)
    data = "".join(lines).encode()
    plain = tmp_path / "a.jsonl"
    plain.write_bytes(data)
    rnd, chunks, pos = random.Random(2), [], 0
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    while pos < len(data):  # frames cut anywhere: mid-line, mid-character
        n = rnd.randint(1, 30000)
        chunks.append(compressor.compress(data[pos:pos + n]))
        pos += n
    chunks.insert(2, compressor.compress(b""))  # an empty frame
    skippable = (0x184D2A5E).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"  # a seek table's kind
    packed = tmp_path / "a.jsonl.zst"
    packed.write_bytes(b"".join(chunks[:4]) + skippable + b"".join(chunks[4:]))
    assert len(files.zstd_frames(packed)) == len(chunks)

    monkeypatch.setattr(shard_module, "SPLIT_BYTES", 40_000)
    monkeypatch.setattr(shard_module, "ZSTD_WALK_BYTES", 0)
    cut = file_source("z", [packed]).shards()
    ranges = file_source("p", [plain]).shards()
    assert len(cut) > 5 and {s.kind for s in cut} == {"zstd-frames"} and {s.kind for s in ranges} == {"byte-range"}
    assert [s.start for s in cut] == sorted(s.start for s in cut) and cut[-1].stop == len(data)
    records = [r for s in cut for r in s.records()]
    whole = list(files.read_jsonl(packed, "text", "id"))  # the file read whole, as one shard is
    assert [r.text for r in records] == [r.text for r in whole] == [json.loads(line)["text"] for line in lines]
    # every record once, with the same file@BYTE id as the uncompressed file's byte ranges give
    assert [r.id.replace(".jsonl.zst", ".jsonl") for r in records] == [r.id for s in ranges for r in s.records()]
    again = shard_module.Shard.from_json(json.loads(json.dumps(cut[3].to_json())))
    assert [r.id for r in again.records()] == [r.id for r in cut[3].records()]


@pytest.mark.parametrize("make", ["stream", "one-frame", "truncated"])
def test_a_zstd_file_that_cannot_be_entered_midway_stays_one_shard(tmp_path, monkeypatch, make):
    data = "".join(_lines(500)).encode()
    path = tmp_path / "b.jsonl.zst"
    if make == "stream":  # a streamed frame does not declare its size
        buffer = io.BytesIO()
        with zstandard.ZstdCompressor().stream_writer(buffer, closefd=False) as writer:
            writer.write(data)
        path.write_bytes(buffer.getvalue())
    elif make == "one-frame":
        path.write_bytes(zstandard.ZstdCompressor().compress(data))
    else:
        path.write_bytes(zstandard.ZstdCompressor().compress(data[:5000]) + zstandard.ZstdCompressor().compress(data)[:-9])
    monkeypatch.setattr(shard_module, "SPLIT_BYTES", 4_000)
    monkeypatch.setattr(shard_module, "ZSTD_WALK_BYTES", 0)
    (shard,) = file_source("b", [path]).shards()
    assert shard.kind == "file"
    first = next(iter(shard.records()))
    assert first.id == f"{path}:1" if make != "truncated" else True


def test_parquet_row_groups_are_joined_up_to_the_target_size(tmp_path, monkeypatch):
    path = tmp_path / "c.parquet"
    texts = ["x" * 1000] * 200
    pq.write_table(pa.table({"text": texts}), path, row_group_size=10)  # 20 row groups of about 10 KB
    sizes = files.parquet_row_group_bytes(path)
    assert len(sizes) == 20
    monkeypatch.setattr(shard_module, "SPLIT_BYTES", 3 * sizes[0])
    cut = file_source("c", [path]).shards()
    assert all(s.kind == "row-groups" for s in cut) and 5 <= len(cut) <= 7
    assert [r.text for s in cut for r in s.records()] == texts
    monkeypatch.setattr(shard_module, "SPLIT_BYTES", 64 << 20)
    assert len(file_source("c", [path]).shards()) == 1  # small groups joined, as before (MIN_SHARD_ROWS)


def test_a_large_jsonl_file_is_cut_into_byte_ranges_of_the_target_size(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(_lines(3000)), encoding="utf-8")
    size = path.stat().st_size
    cut = shard_module.file_shards("d", path, "text", "id", target_bytes=size // 4 + 1)
    assert [s.kind for s in cut] == ["byte-range"] * 4 and cut[-1].stop == size
    assert len([r for s in cut for r in s.records()]) == 3000


def test_a_hunt_whose_shards_are_no_corpus_shows_progress_inside_them_from_the_start(
        tmp_path, plugin_dir, tiny_tokenizer_json, tiny_spec):
    """verify unicode: its shards are code point ranges, not corpus records; the samples its task
    sends through the engines show in OUT/status before any shard commits."""
    hold = tmp_path / "hold"
    hold.mkdir()
    (plugin_dir / "slow_unicode_plugin.py").write_text(
        PLUGIN.replace("HOLD_DIR", repr(str(hold))).replace("VOCAB", repr(str(tiny_tokenizer_json))))
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "verify.cli", "unicode", "--reference", tiny_spec, "--candidate",
         "python:slow_unicode_plugin:make", "--start", "0", "--stop", "3000", "--out", str(out), "--workers", "1",
         "--timeout", "600", "--no-progress"],
        cwd=REPO, env={**os.environ, "VERIFY_HEARTBEAT_S": "0"}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        wait_for(lambda: (out / "status").is_file(), "OUT/status", proc)
        (hold / "started").touch()
        line = wait_for(lambda: "in flight" in (s := (out / "status").read_text()) and s, "in-shard progress", proc)
        flight = int(line.split("+")[1].split(" in flight")[0].replace(",", ""))
        assert line.startswith("running") and " 0/" in line and flight > 0 and "MB/s" in line, line
        assert not list((out / "shards").glob("[0-9]*.json"))
        (hold / "finish").touch()
        assert proc.wait(timeout=WAIT_S) in (0, 1), proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    assert (out / "status").read_text().startswith("complete")
