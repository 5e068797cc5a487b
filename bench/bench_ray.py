"""`verify run --executor local` against `--executor ray`, side by side on the same corpus.

Each repeat runs the same command twice, local then ray (alternating, so a drift in the
machine's speed hits both), as a fresh `verify` process, and records

  wall s    the whole command: start-up (for ray: starting a local Ray, the engine probe,
            the actors), every shard, the merge, shutdown
  shards s  the shards alone: from the session's start line (engines loaded, for ray the
            probe done) to its end line (actors included for ray: they start in there)

The medians of ``--repeat`` runs and the ratios ray / local are printed as a Markdown
table. The default corpus is the generated one (2,003 documents, 126 shards) and the
engines those of bench_pipeline.py; run from the repository root:

    python bench/bench_ray.py [--repeat 3] [--workers N] [--ray-actors N] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE, CANDIDATE = "tiktoken:cl100k_base", "hf:cl100k_base"


def one_run(args, executor: str, out: Path) -> tuple[float, float, dict]:
    argv = [sys.executable, "-m", "verify.cli", "run", "--reference", args.reference, "--candidate", args.candidate,
            "--corpus", args.corpus, "--out", str(out), "--no-progress", "--minimize-budget", "0",
            "--executor", executor, "--workers", str(args.workers)]
    if args.limit:
        argv += ["--limit", str(args.limit)]
    if executor == "ray" and args.ray_actors:
        argv += ["--ray-actors", str(args.ray_actors)]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"{executor} run failed (exit {proc.returncode}): {proc.stderr.strip()}")
    from verify.rundir.attempts import read_attempts

    (session,) = read_attempts(out)
    manifest = json.loads((out / "manifest.json").read_text())
    return wall, session["finished"] - session["started"], manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="local shard workers")
    parser.add_argument("--ray-actors", type=int, help="Ray engine actors (default: the cluster's CPUs)")
    parser.add_argument("--corpus", default="default")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--reference", default=REFERENCE)
    parser.add_argument("--candidate", default=CANDIDATE)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    times: dict[str, dict[str, list[float]]] = {e: {"wall": [], "shards": []} for e in ("local", "ray")}
    counts: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.repeat):
            for executor in ("local", "ray"):
                wall, shards, manifest = one_run(args, executor, Path(tmp) / f"{executor}-{n}")
                times[executor]["wall"].append(wall)
                times[executor]["shards"].append(shards)
                counts.setdefault(executor, manifest["counts"])
                total = manifest["shards"]["total"]
                print(f"  run {n + 1}/{args.repeat} {executor:5}: wall {wall:6.2f} s, shards {shards:6.2f} s",
                      file=sys.stderr)
    if counts["local"] != counts["ray"]:
        sys.exit("local and ray counted differently: a bug, not a benchmark")
    med = {e: {k: statistics.median(v) for k, v in t.items()} for e, t in times.items()}
    ray_actors = args.ray_actors or "cluster CPUs"
    print(f"{counts['local']['samples']} samples, {total} shards, {args.reference} vs {args.candidate}; "
          f"local --workers {args.workers}, ray actors: {ray_actors}; median of {args.repeat}, "
          f"{os.cpu_count()} cores\n")
    print("| executor | wall s | shards s |")
    print("|---|---|---|")
    for executor in ("local", "ray"):
        print(f"| {executor} | {med[executor]['wall']:.2f} | {med[executor]['shards']:.2f} |")
    print(f"| ray / local | {med['ray']['wall'] / med['local']['wall']:.2f} | "
          f"{med['ray']['shards'] / med['local']['shards']:.2f} |")


if __name__ == "__main__":
    main()
