"""Progress of a long run: a live line on the terminal (rich) and ``OUT/status``, one
line another process or a CI log can read at any time (rewritten atomically).

    running  verify run [local x2]  57/126 shards  10,234 samples  1,234/s  2.10 MB/s  3 findings  ETA 0:01:23
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from verify.counts import Counts
from verify import atomic

STATUS_FILE = "status"


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class RunStatus:
    def __init__(self, out: Path, total_shards: int, done_before: int, label: str = "verify run",
                 terminal: bool | None = None, every_s: float = 1.0):
        self.path = Path(out) / STATUS_FILE
        self.total = total_shards
        self.done_before = done_before
        self.done_now = 0
        self.label = label
        self.every_s = every_s
        self._start = time.monotonic()
        self._last = 0.0
        self._counts = Counts()  # this session's work, for the rates
        self._findings_total = 0
        self._progress = None
        if terminal if terminal is not None else sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), console=Console(stderr=True))
            self._task = self._progress.add_task(label, total=max(1, total_shards), completed=done_before)

    def __enter__(self) -> "RunStatus":
        if self._progress:
            self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        if self._progress:
            self._progress.__exit__(*exc)
        return False

    def line(self, state: str = "running") -> str:
        elapsed = max(time.monotonic() - self._start, 1e-9)
        c = self._counts
        done = self.done_before + self.done_now
        rate = self.done_now / elapsed
        eta = (self.total - done) / rate if rate > 0 and state == "running" else None
        return (f"{state}  {self.label}  {done}/{self.total} shards  {c.samples:,} samples  {c.samples / elapsed:,.0f}/s  "
                f"{c.bytes / elapsed / 1e6:,.2f} MB/s  {self._findings_total:,} findings"
                + (f"  ETA {_eta(eta)}" if state == "running" else f"  {elapsed:,.1f} s"))

    def shard_done(self, counts: Counts, findings_total: int) -> None:
        self.done_now += 1
        self._counts.add(counts)
        self._findings_total = findings_total
        now = time.monotonic()
        if now - self._last >= self.every_s or self.done_before + self.done_now == self.total:
            self._last = now
            self.write()

    def write(self, state: str = "running") -> None:
        line = self.line(state)
        atomic.write_text(self.path, line + "\n")
        if self._progress:
            self._progress.update(self._task, completed=self.done_before + self.done_now, description=line)
