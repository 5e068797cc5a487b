"""``verify certify``: strings compared per CPU second, and the k that fits a budget.

    python bench/bench_certify.py [--pair tiktoken:cl100k_base hf:cl100k_base] [--k 3] [--reps 2]
    python bench/bench_certify.py --recall 5 [--lengths 2,3,4,5]

Runs the certificate of one pair at ``--k`` twice -- engines in-process and isolated (the
default) -- with one worker, and prints for each the strings compared, the wall seconds, the
CPU seconds of the command and its children (getrusage: load-independent), strings per CPU
second, and from that rate the largest k whose space (``verify.adversarial.certify.space``)
fits 5 and 60 minutes on 2 cores. The load average is printed beside it: wall time on a shared
machine is not the figure, CPU seconds are. ``hunt.STRINGS_PER_SECOND`` (what ``--budget``
turns seconds into) is set from this bench's isolated rate.

``--recall N``: N planted faults per length -- the real reference with one wrong split rule on
one atom sequence drawn at random (``verify.adversarial.certify.planted``), redrawn until the cut
shows on the sequence's own strings -- each certified at k = its length (1 representative, 2
in-process workers); found means the certificate's shortest counterexample is that sequence.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def certify(reference: str, candidate: str, k: int, reps: int, in_process: bool, workers: int = 1) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-certify-") as tmp:
        out = Path(tmp) / "out"
        argv = [sys.executable, "-m", "verify.cli", "certify", "--reference", reference, "--candidate", candidate,
                "--k", str(k), "--reps", str(reps), "--workers", str(workers), "--no-progress",
                "--minimize-budget", "0", "--out", str(out)] + (["--in-process"] if in_process else [])
        cpu, wall = children_cpu(), time.monotonic()
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        wall, cpu = time.monotonic() - wall, children_cpu() - cpu
        if proc.returncode not in (0, 1):
            sys.exit(f"certify failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
        cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
        return {"strings": cert["strings"]["compared"], "wall": wall, "cpu": cpu,
                "first": cert["counterexamples"][0] if cert["counterexamples"] else None}


def recall(reference: str, trials: int, lengths: list[int]) -> None:
    import random

    from verify.adversarial.certify.atoms import alphabet_of
    from verify.adversarial.certify.planted import observable

    seed = random.Random().randrange(2**32)
    rng = random.Random(seed)
    atoms = len(alphabet_of(reference))
    print(f"planted wrong splits on {reference} ({atoms} atoms), seed {seed}, load average {os.getloadavg()[0]:.1f}")
    print("| length | draws | observable | found as the shortest counterexample | recall | CPU s per trial |")
    print("|---|---|---|---|---|---|")
    for length in lengths:
        draws = found = 0
        cpu = 0.0
        for _ in range(trials):
            while True:
                draws += 1
                seq = tuple(rng.randrange(atoms) for _ in range(length))
                if observable(reference, seq, 1):
                    break
            spec = f"python:verify.adversarial.certify.planted:planted?reference={reference}&seq=" + \
                ".".join(map(str, seq))
            run = certify(reference, spec, length, 1, in_process=True, workers=2)
            cpu += run["cpu"]
            found += bool(run["first"] and tuple(run["first"]["atoms"]) == seq)
        print(f"| {length} | {draws} | {trials} | {found} | {found / trials:.0%} | {cpu / trials:.1f} |")


def reachable_k(rate: float, seconds: float, cores: int, reps: list) -> int:
    from verify.adversarial.certify.space import k_for

    return k_for(reps, int(rate * seconds * cores))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", nargs=2, default=["tiktoken:cl100k_base", "hf:cl100k_base"])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--recall", type=int, default=0, metavar="N", help="N planted faults per length")
    parser.add_argument("--lengths", default="2,3,4,5")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.recall:
        recall(args.pair[0], args.recall, [int(x) for x in args.lengths.split(",")])
        return
    from verify.adversarial.certify.atoms import alphabet_of

    reps = alphabet_of(args.pair[0]).representatives(args.reps)
    print(f"{args.pair[1]} against {args.pair[0]}, k={args.k}, {args.reps} representatives, 1 worker; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| engines | strings | wall s | CPU s | strings / CPU s | k in 5 min (2 cores) | k in 60 min |")
    print("|---|---|---|---|---|---|---|")
    for in_process in (True, False):
        run = certify(*args.pair, args.k, args.reps, in_process)
        rate = run["strings"] / max(run["cpu"], 1e-9)
        print(f"| {'in-process' if in_process else 'isolated'} | {run['strings']:,} | {run['wall']:.1f} | "
              f"{run['cpu']:.1f} | {rate:,.0f} | {reachable_k(rate, 300, 2, reps)} | "
              f"{reachable_k(rate, 3600, 2, reps)} |")


if __name__ == "__main__":
    main()
