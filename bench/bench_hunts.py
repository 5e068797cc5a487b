"""Every hunt on the one pipeline: what sharding buys, measured side by side in one run.

    python bench/bench_hunts.py unicode      # one full Unicode sweep of a pair, 1 vs 2 workers (goal >= 1.7x)
    python bench/bench_hunts.py vocab        # vocab sweep of one candidate on o200k_base, 2 workers (goal <= 120 s)
    python bench/bench_hunts.py gate         # the example nightly gate, ci/nightly.toml (goal <= 4 minutes)
    python bench/bench_hunts.py reference    # encodes of the reference per input with 3 candidates (goal 1)
    python bench/bench_hunts.py all

Each figure is the wall time of the whole command (``verify ...`` in a subprocess), with
the machine's load average printed beside it: on a shared machine the ratio of two runs
made back to back is what carries over, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERIFY = [sys.executable, "-m", "verify.cli"]

COUNTING = '''
import os
import tiktoken_engine_shim


def reference():
    return tiktoken_engine_shim.Counting()
'''

SHIM = '''
import os
from verify.engines import build_engine
from verify.engines.base import FINGERPRINT_PROBES
from verify.sample import Sample

PROBES = set(FINGERPRINT_PROBES)


class Counting:
    """The real reference (tiktoken on cl100k_base) as a plugin that appends one line to
    $COUNT_FILE per text it encodes (its identity's fingerprint probes left out)."""

    def __init__(self):
        self.inner = build_engine("tiktoken:cl100k_base")

    def encode_batch(self, texts):
        counted = [t for t in texts if t not in PROBES]
        if counted:
            with open(os.environ["COUNT_FILE"], "a") as fh:
                fh.write("x\\n" * len(counted))
        return self.inner.encode_batch([Sample.plain("t", t) for t in texts])
'''


def timed(argv: list[str], env: dict | None = None) -> tuple[float, int, str]:
    started = time.perf_counter()
    proc = subprocess.run([*VERIFY, *argv], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    return time.perf_counter() - started, proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()[-1:]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def unicode(tmp: Path) -> None:
    """In-process engines: one worker is one process on one core, two workers two. (With isolated
    engines -- the default -- one worker already runs the reference and the candidate in two
    processes at once, so on two cores it has the machine to itself.)"""
    pair = ["--reference", "tiktoken:cl100k_base", "--candidate", "hf:cl100k_base", "--no-progress"]
    for mode in (["--in-process"], []):
        rows = {}
        label = "in-process" if mode else "isolated engines"
        for workers in (1, 2):
            seconds, code, last = timed(["unicode", *pair, *mode, "--workers", str(workers),
                                         "--out", str(tmp / f"u{workers}{len(mode)}")])
            rows[workers] = seconds
            print(f"| unicode sweep, cl100k tiktoken vs hf, {label}, {workers} worker(s) | {seconds:.1f} s | "
                  f"exit {code} | load {load()} |")
        print(f"| {label}: 1 -> 2 workers | {rows[1] / rows[2]:.2f}x | goal >= 1.7x | |")


def vocab(tmp: Path) -> None:
    seconds, code, last = timed(["vocab", "sweep", "--reference", "tiktoken:o200k_base", "--candidate", "hf:o200k_base",
                                 "--workers", "2", "--minimize-budget", "0", "--no-progress", "--out", str(tmp / "v")])
    print(f"| vocab sweep, o200k tiktoken vs hf, 2 workers | {seconds:.1f} s | exit {code} | load {load()} | goal <= 120 s |")


def gate(tmp: Path) -> None:
    seconds, code, last = timed(["gate", "ci/nightly.toml", "--out", str(tmp / "g")])
    print(f"| nightly gate (ci/nightly.toml) | {seconds:.1f} s | exit {code} | load {load()} | goal <= 240 s |")


def reference(tmp: Path) -> None:
    plugins = tmp / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "bench_counting.py").write_text(COUNTING)
    (plugins / "tiktoken_engine_shim.py").write_text(SHIM)
    counts = tmp / "reference-calls.txt"
    env = {"PYTHONPATH": str(plugins), "COUNT_FILE": str(counts)}
    out = tmp / "r"
    seconds, code, last = timed(["run", "--reference", "python:bench_counting:reference", "--candidate",
                                 "hf:cl100k_base", "--candidate", "tiktoken:cl100k_base", "--candidate",
                                 "kitoken-cl100k", "--limit", "400", "--workers", "2", "--minimize-budget", "0",
                                 "--no-progress", "--out", str(out)], env)
    manifest = json.loads((out / "manifest.json").read_text())
    # inputs the reference takes: a plugin without special tokens skips samples with special segments
    taken = manifest["counts"]["samples"] - manifest["counts"]["per_engine"]["python:bench_counting:reference"]["skipped"]
    encoded = len(counts.read_text().splitlines())
    print(f"| reference encodes per input, 3 candidates (`verify run`, 2 workers) | {encoded / taken:.2f} | "
          f"{encoded} texts for {taken} inputs, {seconds:.1f} s, exit {code} | goal 1 |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=("unicode", "vocab", "gate", "reference", "all"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hunts-") as tmp:
        for name, fn in (("reference", reference), ("unicode", unicode), ("vocab", vocab), ("gate", gate)):
            if args.which in (name, "all"):
                fn(Path(tmp))


if __name__ == "__main__":
    main()
