"""Harness overhead: how much slower is `verify run` than calling the engines directly?

Runs, side by side on the same generated corpus:
  raw         the two engines' encode_batch calls alone (the floor)
  in-process  the full run loop (comparison, accounting, findings) with LocalExecutor
  isolated    the same with each engine in its own worker process (the default)
and prints each as a ratio to `raw`. Usage: python bench/bench_run.py [--documents N] [--repeat R]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from verify.corpora.generated import generate
from verify.engines import build_engine
from verify.executors import LocalExecutor
from verify.executors.isolated import IsolatedExecutor
from verify.findings import FindingWriter
from verify.runner import Run, batched

REFERENCE, CANDIDATE = "tiktoken:cl100k_base", "hf:cl100k_base"


def raw(batches) -> float:
    ref, cand = build_engine(REFERENCE), build_engine(CANDIDATE)
    start = time.perf_counter()
    for batch in batches:
        ref.encode_batch(batch)
        cand.encode_batch(batch)
    return time.perf_counter() - start


def through_run(batches, make_executor) -> float:
    executors = [make_executor(REFERENCE), make_executor(CANDIDATE)]
    with tempfile.TemporaryDirectory() as out:
        writer = FindingWriter(Path(out))
        run = Run(executors[0], executors[1:], writer)
        start = time.perf_counter()
        for batch in batches:
            run.process(batch)
        elapsed = time.perf_counter() - start
        writer.close()
    for ex in executors:
        ex.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    batches = list(batched(generate(seed=0, documents=args.documents, long_documents=3), 64))
    mb = sum(len(s.text.encode()) for b in batches for s in b) / 1e6
    modes = {
        "raw": lambda: raw(batches),
        "in-process": lambda: through_run(batches, lambda spec: LocalExecutor(build_engine(spec))),
        "isolated": lambda: through_run(batches, IsolatedExecutor),
    }
    best = {name: min(fn() for _ in range(args.repeat)) for name, fn in modes.items()}
    print(f"corpus: {sum(map(len, batches))} samples, {mb:.1f} MB; best of {args.repeat}")
    for name, seconds in best.items():
        print(f"{name:11} {best[name] / best['raw']:5.2f}x raw   ({mb / seconds:6.1f} MB/s)")


if __name__ == "__main__":
    main()
