"""Progress of a long run: a live line on the terminal (rich) and ``OUT/status``, one
line another process or a CI log can read at any time (rewritten atomically).

    running  verify run [local x2]  57/126 shards 45%  10,234 samples  +3,100 in flight  1,234/s  2.10 MB/s  3 findings  ETA 0:01:23

``OUT/status`` exists from the start (``starting`` while the engines load) and is
rewritten every ``every_s`` seconds by a ticker thread, not only when a shard commits:
a single shard of a large file can take minutes. What happens *inside* the shards in
flight comes from per-worker heartbeats: the driver names a folder in ``$VERIFY_PROGRESS_DIR``
(``OUT/shards/.progress``) before its workers start, and a worker reading a corpus shard
(``verify.corpora.shards.Shard.records``) rewrites ``<pid>.json`` there at most once a
second with the records and bytes it has read so far (``ShardHeartbeat``). Heartbeats
are progress only, never results: counts and findings come from committed shards.

The terminal line fits the terminal: fields are dropped by priority (``fit``), the state,
the shards done and the ETA last.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Iterable, Iterator

from verify import atomic
from verify.counts import Counts
from verify.rundir.layout import RunFolder
from verify.sample import utf8_len

PROGRESS_DIR = ".progress"  # under OUT/shards/: one heartbeat file per worker process
PROGRESS_ENV = "VERIFY_PROGRESS_DIR"
HEARTBEAT_EVERY_S = 1.0
HEARTBEAT_ENV = "VERIFY_HEARTBEAT_S"  # seconds between a worker's heartbeats (tests: 0, every record)

# Field priorities: the lower, the longer a field survives a narrow terminal.
KEEP_ALWAYS, KEEP_SHARDS, KEEP_LABEL, KEEP_FINDINGS, KEEP_SAMPLES, KEEP_IN_FLIGHT, KEEP_MB, KEEP_RATE = range(8)


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def fit(fields: Iterable[tuple[int, str]], width: int | None = None, sep: str = "  ") -> str:
    """The fields (``(priority, text)``, in display order) joined by ``sep``; with a ``width``,
    the least important are dropped until the line fits (``KEEP_ALWAYS`` ones never are)."""
    fields = [(p, t) for p, t in fields if t]
    line = sep.join(t for _, t in fields)
    while width is not None and len(line) > width:
        droppable = [p for p, _ in fields if p != KEEP_ALWAYS]
        if not droppable:
            break
        worst = max(droppable)
        at = max(i for i, (p, _) in enumerate(fields) if p == worst)  # the rightmost of the least important
        del fields[at]
        line = sep.join(t for _, t in fields)
    return line


# --- worker side: heartbeats of the shard being read ------------------------------------

class ShardHeartbeat:
    """Rewrites ``<folder>/<pid>.json`` with how far this process is into ``shard_id``, at
    most every ``every_s`` seconds. ``size``: the bytes the shard spans, when known (a byte
    range), which makes a ``fraction`` the driver's ETA can use; it is an estimate (text
    bytes read against raw bytes spanned), capped below 1."""

    def __init__(self, folder: Path, shard_id: str, size: int | None = None, every_s: float | None = None):
        self.path = Path(folder) / f"{os.getpid()}.json"
        self.shard_id, self.size = shard_id, size
        self.every_s = heartbeat_interval() if every_s is None else every_s
        self.records = self.bytes = 0
        self._last = time.monotonic()

    def beat(self, records: int, nbytes: int, force: bool = False) -> None:
        self.records, self.bytes = records, nbytes
        now = time.monotonic()
        if not force and now - self._last < self.every_s:
            return
        self._last = now
        fraction = min(0.99, nbytes / self.size) if self.size else None
        try:
            atomic.write_json(self.path, {"shard": self.shard_id, "records": records, "bytes": nbytes,
                                          "fraction": fraction, "at": time.time()}, indent=None)
        except OSError:  # progress is best effort: a folder gone (run finished, remote node) is no error
            pass


def heartbeat_interval() -> float:
    try:
        return max(0.0, float(os.environ.get(HEARTBEAT_ENV, HEARTBEAT_EVERY_S)))
    except ValueError:
        return HEARTBEAT_EVERY_S


def heartbeat_records(records: Iterator, shard_id: str, size: int | None = None) -> Iterator:
    """``records`` unchanged, with heartbeats when the driver asked for them (``$VERIFY_PROGRESS_DIR``)."""
    folder = os.environ.get(PROGRESS_ENV)
    if not folder:
        return records
    return _beating(records, ShardHeartbeat(Path(folder), shard_id, size))


def shard_records(shard) -> Iterator:
    """A shard's records (``Shard.records()``) as a worker reads them: with its heartbeats."""
    return heartbeat_records(shard.records(), shard.id, shard.byte_size)


def shard_heartbeat(shard) -> ShardHeartbeat | None:
    """The heartbeat of a shard whose task beats it itself, once per batch (``beat(records,
    bytes)``) -- the corpus task, whose comparison counts the bytes anyway; None when the driver
    asked for no heartbeats. It has beaten once already: the shard shows at once."""
    folder = os.environ.get(PROGRESS_ENV)
    if not folder:
        return None
    heart = ShardHeartbeat(Path(folder), shard.id, shard.byte_size)
    heart.beat(0, 0, force=True)
    return heart


def _beating(records: Iterator, heart: ShardHeartbeat) -> Iterator:
    n = nbytes = 0
    heart.beat(0, 0, force=True)  # the shard has started: it shows at once
    for record in records:
        n += 1
        segments = getattr(record, "segments", None)
        if segments is not None:
            nbytes += sum(utf8_len(s.text) for s in segments)
        heart.beat(n, nbytes)
        yield record


class CountingExecutor:
    """An executor as a hunt's task sees it, counting the distinct samples (and their text bytes)
    sent through it for the shard in hand, beating them to the shard's heartbeat: a hunt whose
    shards are no corpus (code points, vocabulary tokens, lengths, cases) shows progress inside
    its shards as a corpus run does. Everything else is the executor's own."""

    def __init__(self, inner, heart: ShardHeartbeat):
        self._inner, self._heart = inner, heart
        self._seen: set[str] = set()
        self._bytes = 0

    def _count(self, samples) -> None:
        for sample in samples:
            key = getattr(sample, "id", None)
            if key is None or key in self._seen:
                continue
            self._seen.add(key)
            self._bytes += sum(len(s.text.encode("utf-8", "surrogatepass")) for s in getattr(sample, "segments", ()))
        self._heart.beat(len(self._seen), self._bytes)

    def submit(self, samples, expected=None):
        self._count(samples)
        return self._inner.submit(samples, expected)

    def encode(self, samples):
        self._count(samples)
        return self._inner.encode(samples)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def watched(executors: list, shard_id: str, counted: bool) -> list:
    """The executors a task gets for one shard: the first counting its samples into the shard's
    heartbeat when the driver asked for heartbeats and the shard's records do not beat already
    (``counted``: a corpus shard, read through ``heartbeat_records``)."""
    folder = os.environ.get(PROGRESS_ENV)
    if not folder or counted or not executors:
        return executors
    heart = ShardHeartbeat(Path(folder), shard_id)
    heart.beat(0, 0, force=True)  # the shard has started: it shows at once
    return [CountingExecutor(executors[0], heart), *executors[1:]]


# --- driver side --------------------------------------------------------------------------

def progress_folder(out: Path) -> Path:
    return RunFolder(out).shards / PROGRESS_DIR


def read_heartbeats(folder: Path, done: set[str] = frozenset()) -> list[dict]:
    """The newest heartbeat of every shard in flight (shards in ``done`` are left out: a
    worker that died mid-shard left one, and the shard's rerun writes a newer one)."""
    newest: dict[str, dict] = {}
    try:
        paths = list(Path(folder).glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            beat = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # replaced or removed while read
            continue
        shard = beat.get("shard") if isinstance(beat, dict) else None
        if not isinstance(shard, str) or shard in done:
            continue
        if shard not in newest or beat.get("at", 0) > newest[shard].get("at", 0):
            newest[shard] = beat
    return list(newest.values())


class RunStatus:
    """The live line and ``OUT/status`` of one run attempt. ``terminal``: draw the line on
    stderr (default: when stderr is a terminal); ``console``: a rich console to draw on
    (tests give one of a set width); ``every_s``: how often the ticker rewrites both."""

    def __init__(self, out: Path, total_shards: int, done_before: int, label: str = "verify run",
                 terminal: bool | None = None, every_s: float = 1.0, console=None):
        self.out = Path(out)
        self.path = RunFolder(self.out).status
        self.total = total_shards
        self.done_before = done_before
        self.done_now = 0
        self.label = label
        self.every_s = every_s
        self._start = time.monotonic()
        self._last = 0.0
        self._counts = Counts()  # this session's work, for the rates
        self._findings_total = 0
        self._pace: float | None = None  # shards per second, smoothed (the ETA)
        self._done_ids: set[str] = set()
        self._final: str | None = None  # once complete, interrupted or incomplete, the ticker stops writing
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._progress = None
        if console is not None or (terminal if terminal is not None else sys.stderr.isatty()):
            from rich.console import Console
            from rich.progress import Progress, TextColumn

            self._console = console or Console(stderr=True)
            # no bar: the line itself says how far, and every column of an 80-column terminal counts
            self._progress = Progress(TextColumn("{task.description}", markup=False), console=self._console)
            self._task = self._progress.add_task(label, total=max(1, total_shards), completed=done_before)

    def __enter__(self) -> "RunStatus":
        if self._progress:
            self._progress.__enter__()
        self.write()
        self._ticker = threading.Thread(target=self._tick, name="verify-status", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc) -> bool:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._progress:
            self._progress.__exit__(*exc)
        return False

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self.write()

    def in_flight(self) -> list[dict]:
        return read_heartbeats(progress_folder(self.out), self._done_ids)

    def fields(self, state: str = "running") -> list[tuple[int, str]]:
        if state == "starting":
            return [(KEEP_ALWAYS, state), (KEEP_LABEL, self.label), (KEEP_SHARDS, f"{self.total:,} shards"),
                    (KEEP_ALWAYS, "loading engines")]
        elapsed = max(time.monotonic() - self._start, 1e-9)
        c = self._counts
        beats = self.in_flight() if state == "running" else []
        reading = sum(int(b.get("records") or 0) for b in beats)
        reading_bytes = sum(int(b.get("bytes") or 0) for b in beats)
        partial = sum(self._fraction(b) for b in beats)  # shards in flight, as parts of a shard
        done = self.done_before + self.done_now
        percent = f" {100 * done // self.total}%" if self.total else ""
        fields = [(KEEP_ALWAYS, state), (KEEP_LABEL, self.label), (KEEP_SHARDS, f"{done}/{self.total} shards{percent}")]
        measured = c.bytes + reading_bytes
        fields += [(KEEP_SAMPLES, f"{c.samples:,} samples"),
                   (KEEP_IN_FLIGHT, f"+{reading:,} in flight" if beats else ""),
                   (KEEP_RATE, f"{(c.samples + reading) / elapsed:,.0f}/s"),
                   # a hunt that measures no text (edit scripts) shows no MB/s rather than 0.00
                   (KEEP_MB, f"{measured / elapsed / 1e6:,.2f} MB/s" if measured or not (c.samples + reading)
                    else ""),
                   (KEEP_FINDINGS, f"{self._findings_total:,} findings")]
        if state == "running":
            fields.append((KEEP_ALWAYS, f"ETA {_eta(self._eta(done, partial, elapsed))}"))
        else:
            fields.append((KEEP_ALWAYS, f"{elapsed:,.1f} s"))
        return fields

    def _fraction(self, beat: dict) -> float:
        """How far into its shard a heartbeat is: its own estimate (a byte range), else its samples
        over the samples of a committed shard on average, below 1; 0 before any shard committed."""
        if beat.get("fraction") is not None:
            return float(beat["fraction"])
        if not self.done_now or not self._counts.samples:
            return 0.0
        return min(0.95, int(beat.get("records") or 0) / (self._counts.samples / self.done_now))

    def _eta(self, done: int, partial: float, elapsed: float) -> float | None:
        """Seconds left: the shards left over the pace so far (shards and parts of shards per second),
        the pace smoothed (an exponential average) so one commit does not make it jump."""
        pace = (self.done_now + partial) / elapsed
        if pace <= 0:
            return None
        self._pace = pace if self._pace is None else 0.7 * self._pace + 0.3 * pace
        return max(0.0, self.total - done - partial) / self._pace

    def line(self, state: str = "running", width: int | None = None) -> str:
        return fit(self.fields(state), width)

    def shard_done(self, counts: Counts, findings_total: int, shard_id: str | None = None) -> None:
        with self._lock:
            self.done_now += 1
            self._counts.add(counts)
            self._findings_total = findings_total
            if shard_id is not None:
                self._done_ids.add(shard_id)
        now = time.monotonic()
        if now - self._last >= self.every_s or self.done_before + self.done_now == self.total:
            self.write()

    def write(self, state: str = "running") -> None:
        with self._lock:
            if self._final is not None and state in ("running", "starting"):
                return
            if state not in ("running", "starting"):
                self._final = state
                self._stop.set()
            self._last = time.monotonic()
            fields = self.fields(state)
            try:
                atomic.write_text(self.path, fit(fields) + "\n")
            except FileNotFoundError:  # OUT removed under a finished run's ticker
                return
            if self._progress:
                width = max(20, self._console.width - 1)
                self._progress.update(self._task, completed=self.done_before + self.done_now,
                                      description=fit(fields, width))


def executor_label(executor: str, workers: int) -> str:
    return "ray" if executor == "ray" else f"local x{workers}"


class ProgressScope:
    """From before the engines start until the workers are closed: ``OUT/status`` says
    ``starting`` at once, and every worker started meanwhile inherits the heartbeat folder
    (``$VERIFY_PROGRESS_DIR``, restored after). ``end(failed=True)`` (the run never started:
    an engine that does not load) removes what this made, so no half-made OUT is left."""

    def __init__(self, out: Path, total_shards: int, label: str):
        from verify.rundir.lock import only_the_lock

        self.out = Path(out)
        self.created = not self.out.exists() or only_the_lock(self.out)  # (its lock made it)
        self.folder = progress_folder(self.out)
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob("*.json"):  # an earlier attempt's: its workers are gone
            stale.unlink(missing_ok=True)
        self._previous = os.environ.get(PROGRESS_ENV)
        os.environ[PROGRESS_ENV] = str(self.folder.resolve())
        self._ended = False
        RunStatus(self.out, total_shards, 0, label, terminal=False).write("starting")

    def end(self, failed: bool = False) -> None:
        if self._ended:
            return
        self._ended = True
        if self._previous is None:
            os.environ.pop(PROGRESS_ENV, None)
        else:
            os.environ[PROGRESS_ENV] = self._previous
        for beat in self.folder.glob("*"):
            beat.unlink(missing_ok=True)
        for folder in (self.folder, self.folder.parent):
            try:
                folder.rmdir()  # only when empty: committed shards stay
            except OSError:
                pass
        if failed and self.created:
            RunFolder(self.out).status.unlink(missing_ok=True)
            try:
                self.out.rmdir()
            except OSError:
                pass
