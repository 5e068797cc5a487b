"""Shard-parallel scaling and harness overhead of `verify run`, measured side by side.

For each parallelism N (``--workers``) and engine placement (in-process, isolated):
  raw      N processes, each with both engines loaded, read the same shards and call
           the engines' own encode_batch on every batch -- nothing else (the floor)
  harness  `verify run --workers N` on the same shards: batching, every engine, the
           comparison, per-shard commits, the live manifest and status, the final merge
Times exclude engine start-up on both sides (the harness: its session's start line is
written once every worker has loaded its engines). Runs alternate (raw, harness,
raw, ...) and the median of ``--repeat`` is reported, with the ratios

  harness / raw at the same N   (goal <= 1.05)
  N=1 / N=2                     (goal >= 1.8 on 2 cores)

The corpus is the default generated corpus written once to Parquet (so reading it costs
the same on both sides and little), plus, with ``--generated``, the generator itself.

    python bench/bench_pipeline.py [--repeat 3] [--workers 1 2] [--generated]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path

REFERENCE, CANDIDATE = "tiktoken:cl100k_base", "hf:cl100k_base"
THREADS = None


def _raw_worker(conn, threads: int, isolate: bool, specs: tuple[str, ...]) -> None:
    from verify.executors.pool import EngineOptions, EnginePool
    from verify.executors.threads import pin_threads
    from verify.batches import batched
    from verify.sample import Sample

    pin_threads(threads)
    pool = EnginePool(EngineOptions(isolate=isolate, threads=threads))
    executors = pool.start(list(specs))
    conn.send("ready")
    while True:
        shard = conn.recv()
        if shard is None:
            break
        for batch in batched(shard.records()):
            samples = [r for r in batch if isinstance(r, Sample)]
            for ex in executors:  # the engines' own calls, as the harness makes them
                ex.submit(samples)
            for ex in executors:
                ex.collect()
        conn.send("done")
    pool.close()


def raw(shards, workers: int, isolate: bool, specs: tuple[str, ...] | None = None) -> float:
    """Seconds for N processes to call only the engines' encode on every shard."""
    from multiprocessing.connection import wait

    from verify.executors.threads import threads_per_worker

    ctx = mp.get_context("spawn")
    threads = THREADS or threads_per_worker(workers)
    conns, procs = [], []
    for _ in range(workers):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_raw_worker, args=(child, threads, isolate, specs or (REFERENCE, CANDIDATE)))
        proc.start()
        conns.append(parent)
        procs.append(proc)
    for conn in conns:
        conn.recv()
    pending = list(shards)
    start = time.perf_counter()
    busy = set()
    for conn in conns:
        if pending:
            conn.send(pending.pop(0))
            busy.add(conn)
    while busy:
        for conn in wait(list(busy)):
            conn.recv()
            if pending:
                conn.send(pending.pop(0))
            else:
                busy.discard(conn)
    elapsed = time.perf_counter() - start
    for conn in conns:
        conn.send(None)
    for proc in procs:
        proc.join()
    return elapsed


def harness(corpus: str, workers: int, isolate: bool) -> float:
    from verify.driver import RunOptions, run_job
    from verify.rundir.attempts import read_attempts

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        run_job(RunOptions(reference=REFERENCE, candidates=[CANDIDATE], corpora=[corpus], out=out,
                           isolate=isolate, workers=workers, progress=False, minimize_budget_s=0))
        (session,) = read_attempts(out)
        return session["finished"] - session["started"]


def parquet_corpus(folder: Path, per_file: int = 16, seeds: tuple[int, ...] = (0,)) -> str:
    """The default corpus' plain samples (one generator seed, or several for a bigger corpus)
    as Parquet files of ``per_file`` rows (one shard each)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from verify.corpora.generated import generate

    samples = [s for seed in seeds for s in generate(seed, 2000, 3) if s.is_plain]
    folder = folder / "parquet"
    folder.mkdir()
    for n, i in enumerate(range(0, len(samples), per_file)):
        part = samples[i:i + per_file]
        pq.write_table(pa.table({"id": [s.id for s in part], "text": [s.text for s in part]}),
                       folder / f"part-{n:05d}.parquet")
    return str(folder)


def main() -> None:
    from verify.corpora import open_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--generated", action="store_true", help="also measure on the generator itself")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {"parquet": parquet_corpus(Path(tmp))}
        if args.generated:
            corpora["generated"] = "default"
        rows = []
        for name, corpus in corpora.items():
            shards = open_corpus(corpus).shards()
            for isolate in (False, True):
                for workers in args.workers:
                    raws, runs = [], []
                    for _ in range(args.repeat):
                        raws.append(raw(shards, workers, isolate))
                        runs.append(harness(corpus, workers, isolate))
                    rows.append({"corpus": name, "shards": len(shards), "engines": "isolated" if isolate else "in-process",
                                 "workers": workers, "raw_s": statistics.median(raws),
                                 "harness_s": statistics.median(runs)})
    print(f"{'corpus':10} {'engines':10} {'workers':>7} {'raw s':>7} {'harness s':>9} {'harness/raw':>11} "
          f"{'speed-up vs 1':>13}")
    for row in rows:
        one = next(r for r in rows if r["corpus"] == row["corpus"] and r["engines"] == row["engines"]
                   and r["workers"] == args.workers[0])
        print(f"{row['corpus']:10} {row['engines']:10} {row['workers']:7d} {row['raw_s']:7.2f} "
              f"{row['harness_s']:9.2f} {row['harness_s'] / row['raw_s']:11.2f} "
              f"{one['harness_s'] / row['harness_s']:13.2f}")
    json.dump(rows, sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
