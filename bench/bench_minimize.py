"""Minimiser cost against document size.

Plants a divergence (a byte engine that zeroes the first byte of a short pattern)
at 61% of a generated document of 10 KB, 100 KB and 1 MB, and times
``minimise`` down to the reproducer through two in-process executors, as
``verify run``'s triage does. Prints seconds (median of R), predicate calls, the
reproducer's length and the time as a ratio to the 10 KB case.

Usage: python bench/bench_minimize.py [--repeat R] [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import random
import statistics

import numpy as np

from verify.engines.fake import FakeEngine
from verify.executors import LocalExecutor
from verify.minimize import minimize
from verify.sample import Sample
from verify.triage import still_fails

PATTERN = "Zq\u00e9"


class Bytes(FakeEngine):
    """One token per UTF-8 byte (vectorised); with ``plant``, id 0 on the pattern's first byte."""

    def __init__(self, plant: bool):
        super().__init__("bench", spec="bench:planted" if plant else "bench:bytes")
        self.plant = PATTERN.encode() if plant else None

    def encode_texts(self, texts, allow_special):
        out = []
        for text in texts:
            data = text.encode("utf-8")
            ids = np.frombuffer(data, dtype=np.uint8).astype(np.uint32)
            at = data.find(self.plant) if self.plant else -1
            if at >= 0:
                ids[at] = 0
            out.append(ids)
        return out


def document(n: int, seed: int = 11) -> str:
    rng = random.Random(seed)
    words = ["the", "token", "naïve", "日本語", "1234", "\n", "  ", "ZZ", "qé", "Zq", "é", "-"]
    parts, size = [], 0
    while size < n:
        w = rng.choice(words)
        parts.append(w + " ")
        size += len(w) + 1
    text = "".join(parts)[:n].replace(PATTERN, "Zqe")
    at = int(n * 0.61)
    return text[:at] + PATTERN + text[at:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    args = ap.parse_args()
    predicate = still_fails("ids", LocalExecutor(Bytes(False)), LocalExecutor(Bytes(True)))
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        sample = Sample.plain(f"doc{n}", document(n))
        runs = [minimize(sample, predicate, budget_s=600) for _ in range(args.repeat)]
        assert all(r.reproduced and not r.stopped_on_budget for r in runs)
        rows.append((n, statistics.median(r.seconds for r in runs), runs[0].calls, runs[0].chars,
                     runs[0].sample.text))
    base = rows[0][1]
    print(f"{'chars':>9} {'seconds':>9} {'calls':>6} {'result':>7} {'x first':>8}  reproducer")
    for n, secs, calls, chars, text in rows:
        print(f"{n:>9} {secs:>9.4f} {calls:>6} {chars:>7} {secs / base:>8.1f}  {text!r}")


if __name__ == "__main__":
    main()
