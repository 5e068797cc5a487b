"""The length sweep: its cost on a real pair, and its recall on planted length faults.

    python bench/bench_length_sweep.py time [--candidate hf:cl100k_base] [--max-chars 1000000]
    python bench/bench_length_sweep.py recall [--trials 3] [--max-chars 20000]

``time``: one candidate against tiktoken on cl100k_base, every family, up to ``--max-chars``
(default 10^6), 2 workers: seconds (goal <= 90 s per pair on 2 cores).

``recall``: each planted length fault (``verify.engines.planted.length_faults``: chunking at
N characters, a tie rule at N bytes, a whitespace rule at the cut, a token dropped where
chunks meet) at ``--trials`` thresholds N drawn at random in [300, 6000): the share of
planted thresholds found (N + 1 among the first divergent lengths) and minimised to the
exact length (a run of N + 1 characters) -- goal 100%. A threshold no family can show
(every family's token period divides N) is undefined, drawn again, and counted apart.
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLANTED = "python:verify.engines.planted.length_faults"
RECALL_FAMILIES = ["run:U+0061", "run:U+0020", "run:U+0031", "run:U+0434", "block:U+0061+U+0020", "sep:a|U+0020|a"]


def verify(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def timing(candidate: str, max_chars: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-length-") as tmp:
        started = time.perf_counter()
        proc = verify("length", "sweep", "--reference", "tiktoken:cl100k_base", "--candidate", candidate,
                      "--max-chars", str(max_chars), "--workers", "2", "--minimize-budget", "0", "--no-progress",
                      "--out", f"{tmp}/out")
        seconds = time.perf_counter() - started
        report = json.loads(Path(f"{tmp}/out/length.json").read_text())
    (doc,) = report["candidates"].values()
    print(f"| {candidate} vs tiktoken:cl100k_base, {len(doc['families'])} families to {max_chars:,} chars, "
          f"2 workers | {seconds:.1f} s | exit {proc.returncode} | {doc['families_differing']} families differ | "
          f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())} |")


def observable(fault: str, n: int) -> bool:
    from verify.adversarial.length.families import families_for
    from verify.engines.planted.length_faults import FAULTS, encode

    planted = FAULTS[fault](n)
    return any(planted.encode_batch([f.text(n + 1)])[0] != encode(f.text(n + 1))
               for f in families_for("tiktoken:cl100k_base") if f.name in RECALL_FAMILIES)


def minimized_exactly(out: Path, n: int) -> bool:
    from verify.run_length import to_runs

    findings = {json.loads(line)["finding_key"]: json.loads(line)
                for line in (out / "divergences.jsonl").read_text().splitlines()}
    for line in (out / "triage.jsonl").read_text().splitlines():
        t = json.loads(line)
        first = findings[t["finding_key"]].get("length", {}).get("phase") == "first-divergent"
        if first and t.get("minimized"):
            runs = to_runs("".join(s for s, _ in t["minimized"]["input"]))
            if len(runs) == 1 and runs[0][1] * len(runs[0][0]) == n + 1:
                return True
    return False


def recall(trials: int, max_chars: int) -> None:
    rng = random.Random(0)
    found = minimized = planted = blind = 0
    print("| fault | N | found N+1 | minimised to a run of N+1 | seconds |")
    print("|---|---|---|---|---|")
    for fault in ("chunked", "tie_rule", "whitespace_cut", "dropped_token"):
        for _ in range(trials):
            while True:
                n = rng.randrange(300, 6000)
                if observable(fault, n):
                    break
                blind += 1
            with tempfile.TemporaryDirectory(prefix="bench-length-") as tmp:
                out = Path(tmp) / "out"
                started = time.perf_counter()
                verify("length", "sweep", "--reference", "tiktoken:cl100k_base", "--candidate", f"{PLANTED}:{fault}",
                       *[a for f in RECALL_FAMILIES for a in ("--family", f)], "--max-chars", str(max_chars),
                       "--workers", "1", "--in-process", "--minimize-budget", "30", "--no-progress", "--out", str(out),
                       env={"LENGTH_FAULT_N": str(n)})
                seconds = time.perf_counter() - started
                (doc,) = json.loads((out / "length.json").read_text())["candidates"].values()
                hit = n + 1 in {t["length"] for t in doc["thresholds"]}
                exact = hit and minimized_exactly(out, n)
            planted += 1
            found += hit
            minimized += exact
            print(f"| {fault} | {n} | {'yes' if hit else 'NO'} | {'yes' if exact else 'NO'} | {seconds:.1f} |", flush=True)
    print(f"\nthresholds found: {found}/{planted} ({found / planted:.0%}); minimised to the exact length: "
          f"{minimized}/{planted} ({minimized / planted:.0%}); {blind} draws no family could show, drawn again")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=("time", "recall"))
    parser.add_argument("--candidate", default="hf:cl100k_base")
    parser.add_argument("--max-chars", type=int, default=None)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    if args.which == "time":
        timing(args.candidate, args.max_chars or 1_000_000)
    else:
        recall(args.trials, args.max_chars or 20_000)


if __name__ == "__main__":
    main()
