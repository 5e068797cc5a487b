"""The issue-24 attacks at the issue's own sizes: how long each takes to its outcome against its
timeout, the peak resident memory of any process of the command, and what it left running.

    python bench/bench_hostile.py [--only 1 9 10 ...]

The tests (tests/faults/test_hostile_*.py) run the same attacks scaled down, to stay fast; this
runs them as the issue did (a 1.5 GB line, 24 GB of short lines, `--timeout 20`, one byte every
2 s with `?timeout=5 --timeout 10`, a 1 GB HTTP body) and prints a Markdown table. Peak memory
and CPU seconds come from getrusage of a wrapper's children (load does not change them); wall
seconds do move with load (quote the load average with them).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests")]

import zstandard  # noqa: E402

from faults.helpers import left_behind, tagged_env  # noqa: E402
from faults.hostile import measured, start_ignoring_sigint, wait_for_file, write_engines  # noqa: E402
from faults.test_hostile_engines import _Drip, _Flood, _serve  # noqa: E402


def tiny_tokenizer(folder: Path) -> Path:
    from conftest import TRAINING_TEXT
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    path = folder / "tiny.json"
    tok.save(str(path))
    return path


class Bench:
    def __init__(self, folder: Path):
        self.folder = folder
        self.plugins = folder / "plugins"
        self.plugins.mkdir()
        self.tiny = tiny_tokenizer(folder)
        write_engines(self.plugins, self.tiny)
        twin = folder / "twin.json"
        twin.write_bytes(self.tiny.read_bytes())
        self.reference, self.twin = f"hf:{self.tiny}", f"hf:{twin}"
        self.corpus = folder / "corpus.jsonl"
        self.corpus.write_text("".join(f'{{"text": "hostile text number {i}"}}\n' for i in range(6)))
        self.rows: list[tuple] = []

    def env(self, **extra) -> dict[str, str]:
        return tagged_env(PYTHONPATH=os.pathsep.join([str(self.plugins), os.environ.get("PYTHONPATH", "")]), **extra)

    def run(self, number: str, what: str, limit: str, argv: list[str], **env_extra) -> None:
        env = self.env(**env_extra)
        out = self.folder / f"out-{number}-{time.monotonic_ns()}"
        started = time.monotonic()
        ran = measured([*argv, "--out", str(out)] if argv[0] == "run" else argv, env, self.folder)
        wall = time.monotonic() - started
        left = left_behind(env)
        self.rows.append((number, what, limit, ran.rc, f"{wall:.1f}", f"{ran.cpu_s:.1f}",
                          f"{ran.peak_bytes / 2**20:.0f}", len(left), (ran.lines or [""])[-1][:80]))

    def run_argv(self, candidate: str, *options: str, corpus: Path | None = None) -> list[str]:
        return ["run", "--reference", self.reference, "--candidate", candidate, "--corpus",
                str(corpus or self.corpus), "--no-progress", "--minimize-budget", "0", *options]

    def interrupt(self, number: str, what: str, factory: str, sig: int) -> None:
        entered = self.folder / f"entered-{time.monotonic_ns()}"
        env = self.env(HOSTILE_ENTERED=str(entered))
        proc = start_ignoring_sigint([*self.run_argv(f"python:hostile_engines:{factory}", "--in-process", "--workers",
                                                     "1"), "--out", str(self.folder / f"out-{number}-{sig}")], env)
        wait_for_file(entered, proc)
        sent = time.monotonic()
        os.kill(proc.pid, sig)
        _, stderr = proc.communicate(timeout=300)
        wall = time.monotonic() - sent
        self.rows.append((number, what, "HARD_STOP_S 5", proc.returncode, f"{wall:.1f} after the signal", "", "",
                          len(left_behind(env)), stderr.strip()[:80]))


def attacks(bench: Bench, only: set[str]) -> None:
    b = bench
    if not only or "1" in only:
        b.run("1", "encode_batch sleeps forever, --timeout 20", "--timeout 20",
              b.run_argv("python:hostile_engines:hangs", "--timeout", "20"))
    if not only or "2" in only:
        b.interrupt("2", "factory sleeps forever, Ctrl-C (SIGINT ignored by the shell)", "sleeps_loading", signal.SIGINT)
        b.interrupt("2", "the same, SIGTERM", "sleeps_loading", signal.SIGTERM)
        b.interrupt("2", "factory inside a C call, Ctrl-C", "spins_in_c", signal.SIGINT)
    if not only or "3" in only:
        b.run("3-5", "start_new_session, setsid, fork+setsid+tracker+double fork", "sweep",
              b.run_argv("python:hostile_engines:forks_and_setsids", "--candidate",
                         "python:hostile_engines:new_session_child"), HOSTILE_PIDS=str(b.folder / "pids"))
    if not only or "6" in only:
        server = _serve(_Drip, every=2.0)
        try:
            b.run("6", "one byte every 2 s, ?timeout=5 --timeout 10", "?timeout=5",
                  b.run_argv(f"http://127.0.0.1:{server.server_address[1]}?timeout=5", "--timeout", "10"))
        finally:
            server.stop.set()
            server.shutdown()
    if not only or "9" in only:
        bomb = b.folder / "bomb.txt.zst"
        with open(bomb, "wb") as fh, zstandard.ZstdCompressor(level=3).stream_writer(fh) as writer:
            for _ in range(1536):
                writer.write(b"a" * (1 << 20))
            writer.write(b"\nafter\n")
        b.run("9", f"one 1.5 GB line in a {bomb.stat().st_size // 1024} KB .txt.zst", "MAX_RECORD_BYTES 32 MiB",
              b.run_argv(b.twin, "--in-process", "--workers", "1", corpus=bomb))
    if not only or "10" in only:
        line = b'{"text": "short"}\n'
        frame = zstandard.ZstdCompressor(level=3).compress(line * ((64 << 20) // len(line)))
        huge = b.folder / "huge.jsonl.zst"
        huge.write_bytes(frame * 384)  # 24 GB decompressed
        b.run("10", f"24 GB of short lines in {huge.stat().st_size / 2**20:.1f} MB, --limit 200", "--limit",
              b.run_argv(b.twin, "--limit", "200", "--in-process", "--workers", "1", corpus=huge))
    if not only or "http" in only:
        server = _serve(_Flood, size=1 << 30, declare=False)
        try:
            b.run("--", "HTTP body of 1 GB (no Content-Length)", "MAX_HTTP_BODY_BYTES 256 MiB",
                  b.run_argv(f"http://127.0.0.1:{server.server_address[1]}?timeout=120", "--in-process", "--workers",
                             "1"))
        finally:
            server.stop.set()
            server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="attack numbers (1 2 3 6 9 10 http)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as folder:
        bench = Bench(Path(folder))
        attacks(bench, set(args.only))
    print(f"load average {os.getloadavg()[0]:.1f} at the end; {threading.active_count()} threads")
    print("| # | attack | limit | exit | wall s | CPU s | peak MB | left | last stderr line |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in bench.rows:
        print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
