"""Constant memory: peak resident memory of `verify run` does not grow with corpus size.

Builds synthetic Nemotron-CC mirrors (hive partition folders, data-jsonl.paths.gz,
.jsonl.zstd files of generated web-like text) at 1x and 4x size -- by default 20 MB
(4 files of 5 MB) and 80 MB (8 files of 10 MB), so both the number of shards and the
size of each file grow -- and runs

    verify run --corpus nemotron-cc --corpus-root MIRROR --in-process --workers N

on each, sampling with psutil (every ``--interval`` seconds) the resident memory of
the driver process and of each shard worker process. With ``--workers 1`` the shards
run in the driver itself (no worker processes). Prints a Markdown table, side by
side, and the 4x / 1x ratios; the raw rows go to stderr as JSON. Then lists a
full-size paths file (31,279 lines, as Common Crawl's) in a fresh process and says
how long that took and how much resident memory the 31,279 shard descriptors cost.

    python bench/bench_memory.py [--sizes 20 80] [--workers 1 2] [--reference SPEC --candidate SPEC]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import zstandard

REPO = Path(__file__).resolve().parent.parent
WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which but have an "
         "they you were her she there one all we their been has when who will more no if out so said what up its "
         "about into than them can only other new some could time these two may then do first any my now such like "
         "our over man me even most made after also did many before must through back years where much your way "
         "well down should because each just those people how too little state good very make world still own see "
         "men work long get here between both life being under never day same another know while last might us "
         "great old year off come since against go came right used take three straße café naïve façade 東京 "
         "данные données 2024 3.14 #include <stdio.h> {\"key\": [1, 2]} https://example.com/path?q=1").split()


def build_mirror(root: Path, total_mb: int, files: int, seed: int = 0) -> int:
    """A Nemotron-CC-shaped mirror of about ``total_mb`` MB of text in ``files`` files; returns the records."""
    rng = random.Random(seed)
    per_file = total_mb * 1_000_000 // files
    partitions = ["quality=high/kind=actual", "quality=medium/kind=actual", "quality=low/kind=synthetic"]
    lines, records = [], 0
    for n in range(files):
        rel = f"data-jsonl/{partitions[n % len(partitions)]}/kind2=actual/CC-MAIN-2024-10-part-{n:05d}.jsonl.zstd"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with open(path, "wb") as raw, zstandard.ZstdCompressor(level=3).stream_writer(raw) as out:
            while written < per_file:
                text = " ".join(rng.choices(WORDS, k=rng.randint(100, 1200)))
                line = json.dumps({"warc_record_id": f"<urn:uuid:{seed}-{n}-{records}>", "text": text},
                                  ensure_ascii=False).encode() + b"\n"
                out.write(line)
                written += len(text.encode())
                records += 1
        lines.append(f"contrib/Nemotron/Nemotron-CC/{rel}")
    (root / "data-jsonl.paths.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    return records


def _rss(proc: psutil.Process) -> int:
    try:
        return proc.memory_info().rss
    except psutil.Error:
        return 0


def _is_worker(proc: psutil.Process) -> bool:
    try:
        return "resource_tracker" not in " ".join(proc.cmdline())
    except psutil.Error:
        return False


def measure(root: Path, workers: int, reference: str, candidate: str, interval: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [sys.executable, "-m", "verify.cli", "run", "--reference", reference, "--candidate", candidate,
               "--corpus", "nemotron-cc", "--corpus-root", str(root), "--out", str(out), "--in-process",
               "--workers", str(workers), "--no-progress", "--minimize-budget", "0"]
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        driver = psutil.Process(proc.pid)
        parent_peak, worker_peaks = 0, {}
        while proc.poll() is None:
            parent_peak = max(parent_peak, _rss(driver))
            try:
                children = driver.children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                if _is_worker(child):
                    worker_peaks[child.pid] = max(worker_peaks.get(child.pid, 0), _rss(child))
            time.sleep(interval)
        stdout, stderr = proc.communicate()
        wall = time.monotonic() - started
        if proc.returncode not in (0, 1):
            raise SystemExit(f"verify run failed ({proc.returncode}): {stderr.strip()[-2000:]}")
        manifest = json.loads((out / "manifest.json").read_text())
        return {"workers": workers, "parent_peak_mb": parent_peak / 2**20,
                "worker_peak_mb": max(worker_peaks.values()) / 2**20 if worker_peaks else None,
                "worker_processes": len(worker_peaks), "wall_s": wall,
                "samples": manifest["counts"]["samples"], "shards": manifest["shards"]["total"]}


LISTING = r"""
import gzip, json, sys, time, psutil, zstandard
from pathlib import Path
from verify.corpora import open_corpus
root = Path(sys.argv[1])
qualities, kinds = ["high", "medium-high", "medium", "medium-low", "low"], ["actual", "synthetic"]
lines = [f"contrib/Nemotron/Nemotron-CC/data-jsonl/quality={qualities[i % 5]}/kind={kinds[i // 5 % 2]}/"
         f"kind2=actual/CC-MAIN-2024-10-part-{i:05d}.jsonl.zstd" for i in range(31279)]
first = root / sorted(lines, key=lambda l: tuple(l.split("/")))[0].split("Nemotron-CC/", 1)[1]
first.parent.mkdir(parents=True)
first.write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "x"}\n'))  # the one file listing checks
(root / "data-jsonl.paths.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
me = psutil.Process()
before, started = me.memory_info().rss, time.perf_counter()
shards = open_corpus("nemotron-cc", root=str(root)).shards()
seconds, after = time.perf_counter() - started, me.memory_info().rss
print(json.dumps({"shards": len(shards), "seconds": seconds, "rss_mb": (after - before) / 2**20,
                  "plan_json_mb": len(json.dumps([s.to_json() for s in shards])) / 1e6}))
"""


def listing(tmp: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", LISTING, str(tmp / "listing")], cwd=REPO, capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, default=[20, 80], metavar=("MB_1X", "MB_4X"))
    parser.add_argument("--files", type=int, nargs=2, default=[4, 8], metavar=("FILES_1X", "FILES_4X"))
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reference", default="tiktoken:cl100k_base")
    parser.add_argument("--candidate", default="hf:cl100k_base")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between RSS samples")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, mb, files in (("1x", args.sizes[0], args.files[0]), ("4x", args.sizes[1], args.files[1])):
            root = Path(tmp) / label
            records = build_mirror(root, mb, files)
            compressed = sum(p.stat().st_size for p in root.rglob("*.jsonl.zstd"))
            for workers in args.workers:
                row = measure(root, workers, args.reference, args.candidate, args.interval)
                row.update({"corpus": label, "text_mb": mb, "files": files, "records": records,
                            "zstd_mb": compressed / 1e6})
                rows.append(row)
                print(f"... {label} workers={workers}: {row}", file=sys.stderr, flush=True)
        listed = listing(Path(tmp))
    print("| corpus | text MB | files | records | workers | parent peak RSS MiB | worker peak RSS MiB "
          "| wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        worker = f"{r['worker_peak_mb']:.0f} ({r['worker_processes']} procs)" if r["worker_peak_mb"] else "— (in parent)"
        print(f"| {r['corpus']} | {r['text_mb']} | {r['files']} | {r['records']} | {r['workers']} "
              f"| {r['parent_peak_mb']:.0f} | {worker} | {r['wall_s']:.1f} |")
    print()
    for workers in args.workers:
        one, four = (next(r for r in rows if r["corpus"] == c and r["workers"] == workers) for c in ("1x", "4x"))
        ratios = [f"parent {four['parent_peak_mb'] / one['parent_peak_mb']:.2f}"]
        if one["worker_peak_mb"] and four["worker_peak_mb"]:
            ratios.append(f"worker {four['worker_peak_mb'] / one['worker_peak_mb']:.2f}")
        print(f"- workers={workers}: 4x / 1x peak RSS: {', '.join(ratios)}")
    print(f"- listing a {listed['shards']:,}-line paths file: {listed['seconds']:.1f} s, "
          f"+{listed['rss_mb']:.0f} MiB resident for its shard descriptors "
          f"({listed['plan_json_mb']:.1f} MB as plan.json)")
    json.dump(rows + [{"listing": listed}], sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
