"""The lifecycle every command shares (fuzz, unicode, check, recheck, vocab sweep):

    with CommandJob("fuzz", out, argv, engine_options) as job:
        ref, cand = job.pool.start([reference, candidate])
        ... job.writer.write(finding) ...
        job.counts = counts; job.sources = [...]; job.extra["fuzz"] = {...}

On the way out -- finished, interrupted (Ctrl-C) or stopped by an error -- it
writes ``OUT/manifest.json`` and ``OUT/summary.md`` with the engines' identities
and run notes (toktier's route warnings included), closes the findings file and
the engines, and lets the exception through. ``verify run`` has its own driver
(``verify.pipeline.run``) because it is sharded and resumable; both render the
same manifest and summary.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from verify.counts import Counts
from verify.errors import UsageError
from verify.executors.pool import EngineOptions, EnginePool
from verify.findings import FindingWriter, read_findings
from verify.rundir.manifest import command_manifest, write_manifest
from verify.reports.markdown import MAX_LISTED, write_summary


def prepare_out(out: Path) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


class CommandJob:
    def __init__(self, kind: str, out: Path, argv: list[str], engine: EngineOptions | None = None,
                 pool: EnginePool | None = None):
        self.kind = kind
        self.out = prepare_out(out)
        self.argv = list(argv)
        self.pool = pool or EnginePool(engine or EngineOptions())
        self.writer = FindingWriter(self.out)
        self.started = time.time()
        self.reference: str | None = None
        self.candidates: list[str] = []
        self.sources: list[dict[str, Any]] = []
        self.counts: Counts = Counts()
        self.extra: dict[str, Any] = {}
        self.manifest: dict[str, Any] | None = None

    def __enter__(self) -> "CommandJob":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.writer.close()
        try:
            identities = self.pool.identities()
            notes = self.pool.notes() if exc_type is None else {s: {"not_loaded": w}
                                                                 for s, w in self.pool.not_loaded.items()}
        finally:
            self.pool.close()
        self.counts.findings = self.writer.count
        manifest = command_manifest(
            argv=self.argv, reference=identities.get(self.reference) if self.reference else None,
            candidates=[identities[s] for s in self.candidates if s in identities], sources=self.sources,
            counts=self.counts.as_dict(), started=self.started, finished=time.time(), engine_notes=notes,
            interrupted=exc_type is KeyboardInterrupt, complete=exc_type is None)
        if exc is not None and exc_type is not KeyboardInterrupt:
            manifest["aborted"] = f"{type(exc).__name__}: {exc}"
        manifest.update(self.extra)
        write_manifest(self.out, manifest)
        findings = [r for _, r in zip(range(MAX_LISTED), read_findings(self.writer.path))]
        write_summary(self.out, manifest, findings, title=f"verify {self.kind}")
        self.manifest = manifest
        return False
