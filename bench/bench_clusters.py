"""One bug, one cluster: clusters per real bug, and the history hunt's recall.

    python bench/bench_clusters.py real [--only riptoken,basetenkenizer,tuetoken,deepseek-specials]
    python bench/bench_clusters.py history [--trials 10]

``real``: the hunts of the issue on real engines, each as a user runs it (defaults: 2 workers,
the command's own ``--minimize-budget``), and what ``clusters.json`` says -- clusters, how many
were explained (a cause other than ``unminimised``), the largest ones' keys -- beside the
count before clustering by cause (the issue's runs: riptoken 24, basetenkenizer 39, tuetoken 27,
basetenkenizer DeepSeek-V3 specials 14). Goal: one cluster per cause.

``history``: a planted history fault (``verify.engines.planted.stateful:run_cache``, the real
reference whose cache makes ``' '×N`` wrong after ``' '×N + 'a'``) at ``--trials`` thresholds N
drawn at random in [1000, 9000], found by ``verify check --check stress --stress-phase state``
with its default budget: how many are reported as one ``history`` cluster whose minimised
history is two calls (goal 10/10), and the seconds each took.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

REAL = {  # name -> (the hunt's arguments, clusters before clustering by cause)
    "riptoken": (["length", "sweep", "--reference", "tiktoken:cl100k_base", "--candidate", "riptoken-cl100k"], 24),
    "basetenkenizer": (["length", "sweep", "--reference", "tiktoken:cl100k_base", "--candidate",
                        "basetenkenizer-cl100k-safe"], 39),
    "tuetoken": (["vocab", "sweep", "--reference", "tiktoken:o200k_base", "--candidate", "tuetoken-o200k"], 27),
    "deepseek-specials": (["vocab", "sweep", "--reference", "hf-deepseek-v3", "--candidate",
                           "basetenkenizer-deepseek-v3-safe", "--part", "special"], 14),
}


def verify(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def real(only: list[str]) -> None:
    print("| hunt | wall s | findings | clusters (before) | explained | largest clusters | load |")
    print("|---|---|---|---|---|---|---|")
    for name in only:
        args, before = REAL[name]
        with tempfile.TemporaryDirectory(prefix="bench-clusters-") as tmp:
            started = time.perf_counter()
            proc = verify(*args, "--workers", "2", "--no-progress", "--out", f"{tmp}/out")
            seconds = time.perf_counter() - started
            path = Path(f"{tmp}/out/clusters.json")
            if not path.is_file():
                why = (proc.stderr.strip().splitlines() or [""])[-1]
                print(f"| {name} | {seconds:.0f} | exit {proc.returncode}: no clusters.json | | | {why} | {load()} |")
                continue
            clusters = json.loads(path.read_text())["clusters"]
        kinds = Counter(c.get("cause_kind") for c in clusters)
        top = "; ".join(f"`{c['key']}` ({c['count']})" for c in sorted(clusters, key=lambda c: -c["count"])[:3])
        print(f"| {name} | {seconds:.0f} | {sum(c['count'] for c in clusters)} | {len(clusters)} ({before}) | "
              f"{len(clusters) - kinds.get('unminimised', 0)} | {top} | {load()} |")


def history(trials: int) -> None:
    found, times = 0, []
    for _ in range(trials):
        n = random.randint(1000, 9000)
        with tempfile.TemporaryDirectory(prefix="bench-history-") as tmp:
            started = time.perf_counter()
            verify("check", "--engine", "python:verify.engines.planted.stateful:run_cache", "--reference",
                   "tiktoken:cl100k_base", "--check", "stress", "--stress-phase", "state", "--limit", "2",
                   "--no-progress", "--workers", "1", "--out", f"{tmp}/out", env={"STATE_FAULT_N": str(n)})
            times.append(time.perf_counter() - started)
            path = Path(f"{tmp}/out/clusters.json")
            clusters = json.loads(path.read_text())["clusters"] if path.is_file() else []
        hits = [c for c in clusters if c.get("cause_kind") == "history"]
        ok = len(hits) == 1 and len((hits[0].get("example_minimized") or {}).get("history", {}).get("calls", [])) == 2
        found += ok
        print(f"N={n}: {'found, two calls' if ok else 'MISSED'} in {times[-1]:.0f} s", flush=True)
    print(f"| planted history fault, N random in [1000, 9000] | {found}/{trials} | "
          f"{min(times):.0f}-{max(times):.0f} s each | load {load()} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("real")
    r.add_argument("--only", default=",".join(REAL), help="comma-separated: " + ", ".join(REAL))
    h = sub.add_parser("history")
    h.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    if args.what == "real":
        real([name for name in args.only.split(",") if name])
    else:
        history(args.trials)


if __name__ == "__main__":
    main()
