"""Live progress on stderr (only when stderr is a terminal)."""

from __future__ import annotations

import sys
import time


class NullProgress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, counts) -> None:
        pass


class TerminalProgress(NullProgress):
    def __init__(self, label: str):
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=Console(stderr=True), transient=False)
        self._task = self._progress.add_task(label)
        self._label = label
        self._start = time.monotonic()

    def __enter__(self):
        self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self._progress.__exit__(*exc)

    def update(self, counts) -> None:
        elapsed = max(time.monotonic() - self._start, 1e-9)
        problems = counts.states["diverged"] + counts.states["error"] + counts.states["crash"] + counts.states["timeout"]
        self._progress.update(
            self._task,
            description=(f"{self._label}  {counts.samples:,} samples  {counts.samples / elapsed:,.0f}/s  "
                         f"{counts.bytes / elapsed / 1e6:,.2f} MB/s  "
                         f"[{'red' if problems else 'green'}]{problems} failing[/]  {counts.findings} findings"),
        )


def progress_for(label: str, enabled: bool | None = None):
    if enabled is None:
        enabled = sys.stderr.isatty()
    return TerminalProgress(label) if enabled else NullProgress()


class _Bar:
    """A done/total progress bar for long sweeps; ``update(done, total)``."""

    def __init__(self, label: str, enabled: bool):
        self._progress = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

            self._progress = Progress(TextColumn(label), BarColumn(), TaskProgressColumn(), TimeRemainingColumn(),
                                      console=Console(stderr=True))
            self._task = self._progress.add_task(label, total=None)

    def __enter__(self):
        if self._progress:
            self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self._progress.__exit__(*exc) if self._progress else False

    def update(self, done: int, total: int) -> None:
        if self._progress:
            self._progress.update(self._task, completed=done, total=total)


def progress_bar(label: str, enabled: bool | None = None) -> _Bar:
    return _Bar(label, sys.stderr.isatty() if enabled is None else enabled)
