"""What re-verifying an unchanged corpus costs with the reference ledger, and a projection
for a 10 TiB Nemotron-CC pass.

Side by side, alternating, median of ``--repeat`` (engine start-up excluded everywhere):
  candidate-only  N processes calling only the candidate's encode on the corpus' shards
  no ledger       `verify run` with the reference encoding everything (the usual run)
  ledger re-run   `verify run --ledger L` on a corpus L already holds: the reference encodes nothing
with the ratios ledger/candidate-only (goal <= 1.1) and no-ledger/ledger. The reference is
HuggingFace tokenizers, the candidate tiktoken -- the slow engine as reference, the fast one
under test, as in a deploying team's night. The corpus is the default corpus' plain samples
as Parquet files (``--per-file`` rows each, ``--seeds`` generator seeds).

    python bench/bench_ledger.py [--repeat 3] [--workers 2] [--per-file 500] [--seeds 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pipeline import parquet_corpus, raw  # noqa: E402

REFERENCE, CANDIDATE = "hf:cl100k_base", "tiktoken:cl100k_base"
TIB = 1 << 40


def harness(corpus: str, workers: int, ledger: str | None, out: Path) -> float:
    from verify.driver import RunOptions, run_job
    from verify.rundir.attempts import read_attempts

    run_job(RunOptions(reference=REFERENCE, candidates=[CANDIDATE], corpora=[corpus], out=out, isolate=False,
                       workers=workers, progress=False, minimize_budget_s=0, ledger=ledger))
    (session,) = read_attempts(out)
    return session["finished"] - session["started"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--per-file", type=int, default=500, help="records per Parquet file (= shard)")
    parser.add_argument("--seeds", type=int, default=4, help="generator seeds (2,000 documents each)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # shards of 500 records (a real corpus' shards are files of 10^4-10^6 records: the ledger's
        # per-shard partition read is amortised over them), 4 generator seeds, about 10 MB of text
        corpus = parquet_corpus(tmp, per_file=args.per_file, seeds=tuple(range(args.seeds)))
        from verify.corpora import open_corpus

        shards = open_corpus(corpus).shards()
        megabytes = sum(p.stat().st_size for p in Path(corpus).glob("*.parquet")) / 1e6
        text_mb = sum(len(s.text.encode()) for sh in shards for s in sh.records()) / 1e6
        ledger = str(tmp / "ledger")
        harness(corpus, args.workers, ledger, tmp / "warm")  # fill the ledger
        only, plain, led = [], [], []
        for i in range(args.repeat):
            only.append(raw(shards, args.workers, isolate=False, specs=(CANDIDATE,)))
            plain.append(harness(corpus, args.workers, None, tmp / f"plain{i}"))
            led.append(harness(corpus, args.workers, ledger, tmp / f"ledger{i}"))
    t_only, t_plain, t_led = map(statistics.median, (only, plain, led))
    print(f"corpus: {len(shards)} shards, {text_mb:.1f} MB of text ({megabytes:.1f} MB Parquet); "
          f"{args.workers} workers; median of {args.repeat}\n")
    print("| run | seconds | text MB/s | vs candidate-only |\n|---|---|---|---|")
    for name, t in (("candidate-only encode", t_only), ("verify run, no ledger", t_plain),
                    ("verify run --ledger (re-run)", t_led)):
        print(f"| {name} | {t:.2f} | {text_mb / t:.2f} | {t / t_only:.2f}x |")
    per_core = {name: text_mb / t / args.workers for name, t in (("ledger", t_led), ("no ledger", t_plain))}
    print("\nProjection for a 10 TiB Nemotron-CC pass (text bytes; linear in cores, measured per-core "
          "throughput of this machine):\n")
    print("| run | MB/s per core | core-hours |\n|---|---|---|")
    for name, rate in per_core.items():
        print(f"| {name} | {rate:.2f} | {10 * TIB / 1e6 / rate / 3600:,.0f} |")


if __name__ == "__main__":
    main()
