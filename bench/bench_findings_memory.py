"""Memory flat in the number of findings: the driver's peak resident memory of `verify run`
when every sample diverges, from 10^3 to 10^6 findings.

A planted engine -- a ``python:`` plugin over the real tiktoken ``cl100k_base`` reference that
changes the last id of every sample -- makes every sample a finding. The corpus is N short
generated samples in JSONL files of ``--per-file`` samples each (so every N has shards of the
same size: what grows is the number of findings, not what one shard holds), and

    verify run --reference tiktoken:cl100k_base --candidate python:bench_planted:planted \\
        --corpus DIR --out OUT --workers 1 --in-process --no-progress --minimize-budget B

runs once per N and budget, the whole command (shards, merge, triage, manifest, summary.md,
report.html, ci-summary.md) in the one driver process, whose resident memory psutil samples every
``--interval`` seconds. ``--minimize-budget 0`` skips triage (the reports sign the findings
themselves); a budget above 0 triages (signs, clusters, minimises, writes triage.jsonl). The
budget clock includes signing every finding, so the default is large enough for every N to
be minimised (it caps the stage, it is not time spent). Prints a Markdown table and the
ratios peak(N) / peak(smallest N) per budget; the raw rows go to stderr as JSON.

    python bench/bench_findings_memory.py [--sizes 1000 10000 100000 1000000] [--budgets 0 900]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
REFERENCE = "tiktoken:cl100k_base"
CANDIDATE = "python:bench_planted:planted"

PLUGIN = '''
"""The tiktoken cl100k_base reference with the last id of every sample changed: every sample diverges."""
from verify.engines.tiktoken_engine import TiktokenEngine


class Planted:
    name = "planted-cl100k-last-id"

    def __init__(self):
        self.encoding = TiktokenEngine("cl100k_base").encoding

    def encode_batch(self, texts):
        out = []
        for text in texts:
            ids = self.encoding.encode_ordinary(text)
            if ids:
                ids[-1] = (ids[-1] + 1) % 100_000
            out.append(ids)
        return out


def planted():
    return Planted()
'''

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which but "
         "have straße café naïve façade 東京 данные données 2024 3.14 {\"key\": [1, 2]} "
         "https://example.com/?q=1").split()


def write_corpus(folder: Path, samples: int, per_file: int, seed: int = 0) -> int:
    """``samples`` short texts (3-8 words) in JSONL files of ``per_file`` records; returns the files."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    files = 0
    for start in range(0, samples, per_file):
        lines = [json.dumps({"id": f"s{i}", "text": " ".join(rng.choices(WORDS, k=rng.randint(3, 8)))},
                            ensure_ascii=False) for i in range(start, min(samples, start + per_file))]
        (folder / f"part-{files:05d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        files += 1
    return files


def measure(corpus: Path, out: Path, plugin_dir: Path, budget: float, interval: float) -> dict:
    cmd = [sys.executable, "-m", "verify.cli", "run", "--reference", REFERENCE, "--candidate", CANDIDATE,
           "--corpus", str(corpus), "--out", str(out), "--workers", "1", "--in-process", "--no-progress",
           "--minimize-budget", f"{budget:g}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    driver = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, driver.memory_info().rss)
        except psutil.Error:
            pass
        time.sleep(interval)
    stderr = proc.stderr.read()
    proc.stderr.close()
    wall = time.monotonic() - started
    if proc.returncode != 1:  # every sample diverges: the run must fail
        raise SystemExit(f"verify run exited {proc.returncode}, not 1: {stderr.strip()[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    triage = manifest.get("triage") or {}
    return {"findings": manifest["counts"]["findings"], "samples": manifest["counts"]["samples"],
            "shards": manifest["shards"]["total"], "budget_s": budget, "peak_mib": peak / 2**20, "wall_s": wall,
            "clusters": triage.get("clusters"), "minimised": triage.get("minimised"),
            "triage_s": triage.get("seconds")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--budgets", type=float, nargs="+", default=[0.0, 900.0],
                        help="--minimize-budget values, one row each (0: no triage)")
    parser.add_argument("--per-file", type=int, default=1_000, help="samples per corpus file (= per shard)")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between RSS samples")
    parser.add_argument("--tmp", type=Path, default=None, help="where corpora and run folders go (default: a temp dir)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="bench-findings-", dir=args.tmp))
    try:
        plugin_dir = root / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "bench_planted.py").write_text(PLUGIN, encoding="utf-8")
        rows = []
        for n in args.sizes:
            corpus = root / f"corpus-{n}"
            write_corpus(corpus, n, args.per_file)
            for budget in args.budgets:
                out = root / f"out-{n}-{budget:g}"
                row = measure(corpus, out, plugin_dir, budget, args.interval)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
                shutil.rmtree(out)
            shutil.rmtree(corpus)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print("| findings | shards | --minimize-budget | clusters | minimised | driver peak RSS MiB | vs smallest N "
          "| wall s |")
    print("|---|---|---|---|---|---|---|---|")
    smallest = {}
    for row in rows:
        base = smallest.setdefault(row["budget_s"], row["peak_mib"])
        print(f"| {row['findings']:,} | {row['shards']:,} | {row['budget_s']:g} | {row['clusters'] or '—'} | "
              f"{row['minimised'] if row['minimised'] is not None else '—'} | {row['peak_mib']:.1f} | "
              f"{row['peak_mib'] / base:.2f} | {row['wall_s']:.0f} |")


if __name__ == "__main__":
    main()
