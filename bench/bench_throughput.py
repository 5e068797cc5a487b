"""Terabyte nights at the limit: what `verify run` costs per MB of text against what the
engines themselves cost, side by side in one run, as CPU seconds per MB of text (a loaded
machine stretches wall time, much less CPU time).

The corpus is a Nemotron-CC-shaped mirror (hive partition folders, ``data-jsonl.paths.gz``,
``.jsonl.zstd`` files of one zstd frame each) of real text read at run time from this
machine's own files (the Python installation's sources and documentation, /usr/share/doc),
cut into documents of 1-8 KB; nothing third-party is committed. Reference
``tiktoken:cl100k_base``, candidate ``gigatoken:cl100k_base``.

Rows (each in a fresh process; engine start-up is excluded everywhere: an in-process row
times only its loop; a `verify run` row subtracts the CPU of the same command on as many shards
of a few documents each, so that what a shard costs whatever its size -- its ledger partition,
its commit, up to three fresh re-checks of one engine's findings, each a fresh process's first
call -- is printed apart, per shard, and the CPU per MB is what grows with the corpus: a
terabyte corpus's shards hold ~400 MB of text each, the mirror's 16):

  read                 the tool's own reader, every record of every shard
  read+cand-own        reading + gigatoken's own fastest batch call (flat uint32 array)
  read+ref-own         reading + tiktoken's own encode (``encode_ordinary``, one thread)
  read+both-own        reading + both engines' own calls: the limit of a first pass
  read+cand-adapter    reading + gigatoken through the tool's adapter (``encode_batch``)
  run                  `verify run` without a ledger (the reference encodes everything)
  run-diverge          the same with a candidate that differs on every document
                       (``gigatoken:o200k_base``), findings, fresh re-checks and triage
  ledger-fill          `verify run --ledger L` on an empty ledger (a first pass)
  ledger-rerun         `verify run --ledger L` again on the unchanged corpus (in-process)
  ledger-rerun-no-audit  the same with ``--ledger-audit 0``: the audit's share is the difference
  ledger-rerun-iso     the same as ledger-rerun without --in-process (the default: the engines in the
                       shard worker, which is the crash boundary; isolated engines only for a shard
                       whose worker crashed or hung)

Every row is measured ``--repeat`` times (default 3), the rows taking turns, and the least CPU
of each row is kept: a shared machine only adds CPU time (this VM moved one row by 35 % between
two runs), so the least is the row's own cost. Children read compiled modules from a warm cache.

and the memory of one shard: peak resident memory of the driver and of the worker running
a single-frame 64 MB file against a 16 MB one (`verify run --workers 2 --in-process`).

The four goals of issue 28, printed at the end:
  ledger re-run / (read + candidate's own)              <= 1.3
  first pass (run) / (read + both engines' own)         <= 1.3
  peak memory 64 MB shard / 16 MB shard (driver, worker) <= 1.2
  run-diverge / run (CPU per MB)                        <= 2

    python bench/bench_throughput.py [--mb 128] [--file-mb 16] [--repeat 3] [--skip-memory]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_memory import measure as measure_memory  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
REFERENCE, CANDIDATE, DIVERGING = "tiktoken:cl100k_base", "gigatoken:cl100k_base", "gigatoken:o200k_base"
PARTITIONS = ("quality=high/kind=actual", "quality=medium/kind=actual", "quality=low/kind=synthetic")
TEXT_SUFFIXES = (".py", ".txt", ".rst", ".md", ".html", ".c", ".h")
BATCH = 64  # the run's default --batch-size
# documents per small shard: more than the 3 fresh re-checks a shard makes of an engine whose findings
# all reproduce (``verify.fresh_check.NO_HISTORY_AFTER``), so every per-shard cost is in the small shards
SMALL_SHARD_DOCS = 6


# --- the corpus -------------------------------------------------------------------------------

def machine_text(limit_bytes: int):
    """Documents of 1-8 KB of real text from this machine's own files, up to ``limit_bytes``,
    repeated from the start when the machine has less (a larger corpus then repeats text,
    which the ledger-free rows do not care about and the ledger rows key by content)."""
    roots = [Path(sys.base_prefix) / "lib", Path("/usr/share/doc"), Path("/usr/share/common-licenses")]
    files = sorted(p for root in roots if root.is_dir() for p in root.rglob("*")
                   if p.suffix in TEXT_SUFFIXES and p.is_file() and not p.is_symlink())
    rng = random.Random(0)
    made, rounds = 0, 0
    while made < limit_bytes:
        before = made
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            while text and made < limit_bytes:
                size = rng.randint(1000, 8000)
                doc, text = text[:size], text[size:]
                doc = doc if rounds == 0 else f"[{rounds}] {doc}"  # repeated text is another input
                made += len(doc.encode())
                yield doc
            if made >= limit_bytes:
                return
        rounds += 1
        if made == before:
            raise SystemExit("no readable text files on this machine")


def write_file(path: Path, docs, prefix: str) -> tuple[int, int]:
    """One ``.jsonl.zstd`` file of one zstd frame; returns (records, text bytes)."""
    lines, text_bytes = [], 0
    for n, doc in enumerate(docs):
        lines.append(orjson.dumps({"warc_record_id": f"<urn:uuid:{prefix}-{n}>", "text": doc}))
        text_bytes += len(doc.encode())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(b"\n".join(lines) + b"\n"))
    return len(lines), text_bytes


def build_mirror(root: Path, total_mb: float, file_mb: float, files: int | None = None,
                 docs_per_file: int | None = None) -> float:
    """A Nemotron-CC-shaped mirror of about ``total_mb`` MB of text in files of ``file_mb``, or of
    ``files`` files of ``docs_per_file`` documents each; returns its text MB."""
    docs = machine_text(int(total_mb * 1e6) if files is None else 10**12)
    rels, total, n = [], 0, 0
    while files is None or n < files:
        chunk, size = [], 0
        for doc in docs:
            chunk.append(doc)
            size += len(doc.encode())
            if (size >= file_mb * 1e6) if docs_per_file is None else len(chunk) >= docs_per_file:
                break
        if not chunk:
            break
        rel = f"data-jsonl/{PARTITIONS[n % len(PARTITIONS)]}/kind2=actual/CC-MAIN-2024-10-part-{n:05d}.jsonl.zstd"
        total += write_file(root / rel, chunk, str(n))[1]
        rels.append(f"contrib/Nemotron/Nemotron-CC/{rel}")
        n += 1
    (root / "data-jsonl.paths.gz").write_bytes(gzip.compress(("\n".join(rels) + "\n").encode()))
    return total / 1e6


# --- measuring ----------------------------------------------------------------------------------

ROW_SCRIPT = r"""
import sys, time, json
from verify.batches import batched
from verify.corpora import open_corpus
from verify.engines import build_engine
from verify.sample import Sample

row, root = sys.argv[1], sys.argv[2]
shards = open_corpus("nemotron-cc", root=root).shards()
cand = ref = None
if row in ("read+cand-own", "read+both-own", "read+cand-adapter"):
    cand = build_engine("%(candidate)s")
if row in ("read+ref-own", "read+both-own"):
    ref = build_engine("%(reference)s")
started = time.process_time()
for shard in shards:
    for batch in batched(shard.records(), %(batch)d):
        samples = [r for r in batch if isinstance(r, Sample)]
        texts = [s.text for s in samples]
        if row in ("read+cand-own", "read+both-own"):
            cand.tokenizer.encode_batch(texts, parallel=False)  # gigatoken's flat-array batch call
        if ref is not None:
            for t in texts:
                ref.encoding.encode_ordinary(t)
        if row == "read+cand-adapter":
            cand.encode_batch(samples)
print(json.dumps({"cpu": time.process_time() - started}))
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_env(pycache: Path) -> dict[str, str]:
    """Every measured process reads compiled modules from one warm cache: a machine that sets
    PYTHONDONTWRITEBYTECODE would otherwise compile the whole package again in every command,
    a second of CPU that the start-up subtraction takes off again, but with its noise."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def in_process_row(row: str, root: Path, env: dict[str, str]) -> float:
    script = ROW_SCRIPT % {"candidate": CANDIDATE, "reference": REFERENCE, "batch": BATCH}
    out = subprocess.run([sys.executable, "-c", script, row, str(root)], cwd=REPO, capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])["cpu"]


def run_cpu(root: Path, out: Path, candidate: str, env: dict[str, str], *extra: str) -> float:
    """CPU seconds of a whole `verify run` (driver, workers and engine processes)."""
    cmd = [sys.executable, "-m", "verify.cli", "run", "--reference", REFERENCE, "--candidate", candidate,
           "--corpus", "nemotron-cc", "--corpus-root", str(root), "--out", str(out), "--workers", "1",
           "--no-progress", "--minimize-budget", "0", *extra]
    shutil.rmtree(out, ignore_errors=True)
    before = children_cpu()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"verify run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return children_cpu() - before


def run_row(corpora: "Corpora", tmp: Path, env: dict[str, str], name: str, candidate: str, *extra: str,
            ledger: tuple[str, str, str] | None = None) -> dict[str, float]:
    """CPU of the `verify run` on the corpus (``out``), on as many shards of a few documents each
    (``shards``) and on one such shard (``one``): see ``per_mb_and_shard``."""
    commands = [("out", corpora.root), ("shards", corpora.small), ("one", corpora.one)]
    cpu = {}
    for n, (label, root) in enumerate(commands):
        more = list(extra) + (["--ledger", ledger[n]] if ledger is not None else [])
        cpu[label] = run_cpu(root, tmp / f"{name}-{label}", candidate, env, *more)
    return cpu


def per_mb_and_shard(runs: list[dict[str, float]], corpora: "Corpora") -> tuple[float, float]:
    """(CPU per MB, CPU per shard) of a `verify run` row from its repetitions: each command's
    least CPU (a shared machine only adds), the corpus's less the small shards' per MB of the
    difference -- start-up and what each shard costs whatever its size are not per MB -- and what
    a shard costs, the small shards' less one's. A terabyte corpus's shards are ~400 MB of text
    each, the mirror's ``--file-mb``: the per-MB figure is the one that scales."""
    least = {label: min(run[label] for run in runs) for label in runs[0]}
    per_mb = max(least["out"] - least["shards"], 0.0) / (corpora.mb - corpora.small_mb)
    per_shard = max(least["shards"] - least["one"], 0.0) / max(1, corpora.files - 1)
    return per_mb, per_shard


@dataclass(frozen=True)
class Corpora:
    """The measured mirror, as many shards of a few documents each, and one such shard."""

    root: Path
    mb: float
    files: int
    small: Path
    small_mb: float
    one: Path


IN_PROCESS_ROWS = ("read", "read+cand-own", "read+ref-own", "read+both-own", "read+cand-adapter")


def measure_rows(corpora: Corpora, tmp: Path, env: dict[str, str], repeat: int
                 ) -> tuple[dict[str, list[float]], dict[str, list[dict[str, float]]]]:
    """Every row ``repeat`` times, the rows taking turns (a slow minute of a shared machine then
    falls on every row alike); each repetition fills new ledgers, which its re-runs read.
    Returns the in-process rows' CPU per MB and the `verify run` rows' ``run_row``s, by row."""
    cpu: dict[str, list[float]] = {}
    run_cpus: dict[str, list[dict[str, float]]] = {}
    for rep in range(repeat):
        for row in IN_PROCESS_ROWS:
            cpu.setdefault(row, []).append(in_process_row(row, corpora.root, env) / corpora.mb)
        ledger = tuple(str(tmp / f"ledger-{label}-{rep}") for label in ("out", "shards", "one"))
        rows = [("run", CANDIDATE, ("--in-process",), None),
                ("run-diverge", DIVERGING, ("--in-process",), None),
                ("ledger-fill", CANDIDATE, ("--in-process",), ledger),
                ("ledger-rerun", CANDIDATE, ("--in-process",), ledger),
                ("ledger-rerun-no-audit", CANDIDATE, ("--in-process", "--ledger-audit", "0"), ledger),
                ("ledger-rerun-iso", CANDIDATE, (), ledger)]
        for name, candidate, extra, with_ledger in rows:
            run_cpus.setdefault(name, []).append(run_row(corpora, tmp, env, name, candidate, *extra,
                                                         ledger=with_ledger))
        print(f"repetition {rep + 1}/{repeat}: " + ", ".join(f"{k} {v[-1]:.4f}" for k, v in cpu.items()) + ", "
              + ", ".join(f"{k} {v[-1]['out']:.2f}/{v[-1]['shards']:.2f}/{v[-1]['one']:.2f} s"
                          for k, v in run_cpus.items()), file=sys.stderr, flush=True)
    return cpu, run_cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=128, help="MB of text in the corpus")
    parser.add_argument("--file-mb", type=float, default=16, help="MB of text per .jsonl.zstd file (= shard)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="measure every row this many times, taking turns, and keep each row's least CPU "
                             "(a shared machine only ever adds CPU time)")
    parser.add_argument("--skip-memory", action="store_true", help="leave out the 16 MB / 64 MB memory rows")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = child_env(tmp / "pycache")
        root = tmp / "mirror"
        mb = build_mirror(root, args.mb, args.file_mb)
        files = len(list(root.rglob("*.jsonl.zstd")))
        small_mb = build_mirror(tmp / "shards", 0, 0, files=files, docs_per_file=SMALL_SHARD_DOCS)
        build_mirror(tmp / "one", 0, 0, files=1, docs_per_file=SMALL_SHARD_DOCS)
        corpora = Corpora(root, mb, files, tmp / "shards", small_mb, tmp / "one")
        run_cpu(corpora.one, tmp / "warm", CANDIDATE, env, "--in-process")  # fills the module cache
        runs, run_cpus = measure_rows(corpora, tmp, env, max(1, args.repeat))
        per = {row: min(values) for row, values in runs.items()}
        per_shard = {}
        for row, repetitions in run_cpus.items():
            per[row], per_shard[row] = per_mb_and_shard(repetitions, corpora)
            runs[row] = [rep["out"] for rep in repetitions]  # the spread: of the whole corpus's runs
        memory = None
        if not args.skip_memory:
            memory = {}
            for size in (16, 64):
                single = tmp / f"single-{size}"
                build_mirror(single, size, size + 1)  # one file, one frame: one shard
                memory[size] = measure_memory(single, 2, REFERENCE, CANDIDATE, 0.05)
    load_after = os.getloadavg()
    print(f"corpus: {mb:.1f} MB of text in {files} single-frame .jsonl.zstd files of {args.file_mb:g} MB; "
          f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min); "
          f"each row the least CPU of {max(1, args.repeat)} runs (spread: most / least); a `verify run` row "
          f"is per MB beyond {files} shards of {SMALL_SHARD_DOCS} documents, its CPU per shard apart\n")
    print("| path | CPU s per MB | MB/s per core | spread | CPU s per shard |\n|---|---|---|---|---|")
    for row, per_mb in per.items():
        spread = max(runs[row]) / min(runs[row]) if min(runs[row]) else float("nan")
        shard = f"{per_shard[row]:.2f}" if row in per_shard else "-"
        print(f"| {row} | {per_mb:.4f} | {1 / per_mb if per_mb else float('inf'):.1f} | {spread:.2f} | {shard} |")
    goals = [
        ("ledger re-run (in-process) / (read + candidate's own)", per["ledger-rerun"] / per["read+cand-own"], 1.3),
        ("ledger re-run (default, not --in-process) / (read + candidate's own)", per["ledger-rerun-iso"] / per["read+cand-own"], 1.3),
        ("first pass / (read + both engines' own)", per["run"] / per["read+both-own"], 1.3),
        ("every document diverges / all agree", per["run-diverge"] / per["run"], 2.0),
    ]
    if memory is not None:
        small, large = memory[16], memory[64]
        goals.append(("driver peak memory, 64 MB / 16 MB shard", large["parent_peak_mb"] / small["parent_peak_mb"], 1.2))
        if small["worker_peak_mb"] and large["worker_peak_mb"]:
            goals.append(("worker peak memory, 64 MB / 16 MB shard",
                          large["worker_peak_mb"] / small["worker_peak_mb"], 1.2))
        print("\n| shard | driver peak MiB | worker peak MiB |\n|---|---|---|")
        for size, row in memory.items():
            worker = f"{row['worker_peak_mb']:.0f}" if row["worker_peak_mb"] else "-"
            print(f"| {size} MB, one frame | {row['parent_peak_mb']:.0f} | {worker} |")
    print("\n| ratio | measured | goal |\n|---|---|---|")
    for name, value, goal in goals:
        print(f"| {name} | {value:.2f} | <= {goal} {'(met)' if value <= goal else '(NOT met)'} |")
    print(f"\nledger re-run without the audit (--ledger-audit 0) / (read + candidate's own): "
          f"{per['ledger-rerun-no-audit'] / per['read+cand-own']:.2f} (the 1 % audit re-encodes a sample of the "
          f"hits with the reference, {per['read+ref-own'] / per['read+cand-own']:.0f}x the candidate's cost per MB)")


if __name__ == "__main__":
    main()
