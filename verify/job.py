"""One `verify run`: build engines, open sources, stream, write reports.

Engines and sources are all resolved before any work starts, so a bad spec or a
missing file fails fast with one clear error."""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path

from verify.corpus import open_corpus
from verify.engines import build_engine
from verify.errors import CorpusError, UsageError, VerifyError
from verify.executors import LocalExecutor
from verify.executors.isolated import DEFAULT_TIMEOUT_S, IsolatedExecutor
from verify.findings import FindingWriter
from verify.progress import progress_for
from verify.reports.manifest import build_manifest, write_manifest
from verify.reports.markdown import write_summary
from verify.runner import Counts, Run, batched

KEEP_FOR_SUMMARY = 200


@dataclass
class RunOptions:
    reference: str
    candidates: list[str]
    corpora: list[str]
    out: Path
    text_field: str = "text"
    id_field: str = "id"
    limit: int | None = None
    batch_size: int = 64
    progress: bool | None = None
    isolate: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit_mb: int | None = None
    argv: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    counts: Counts
    out: Path
    manifest: dict


def start_executors(opts: RunOptions) -> list:
    """Reference first. Isolated by default: each engine in its own worker process."""
    specs = [opts.reference, *opts.candidates]
    if not opts.isolate:
        return [LocalExecutor(build_engine(spec)) for spec in specs]
    started: list = []
    try:
        for spec in specs:
            started.append(IsolatedExecutor(spec, timeout_s=opts.timeout_s, memory_limit_mb=opts.memory_limit_mb))
    except BaseException:
        for ex in started:
            ex.close()
        raise
    return started


def run_job(opts: RunOptions) -> RunResult:
    if not opts.candidates:
        raise UsageError("no candidate engine: pass --candidate SPEC")
    if opts.reference in opts.candidates:
        raise UsageError(f"'{opts.reference}' is both the reference and a candidate")
    sources = [open_corpus(c, opts.text_field, opts.id_field) for c in opts.corpora]
    executors = start_executors(opts)
    reference, candidates = executors[0], executors[1:]
    identities = [ex.identity().as_dict() for ex in executors]

    opts.out.mkdir(parents=True, exist_ok=True)
    writer = FindingWriter(opts.out)
    kept: list[dict] = []
    run = Run(reference, candidates, writer,
              on_finding=lambda r: kept.append(r) if len(kept) < KEEP_FOR_SUMMARY else None)
    started = time.time()
    interrupted = False
    failure: VerifyError | None = None
    try:
        with progress_for("verify run", opts.progress) as progress:
            for source in sources:
                run.source_name = source.name
                samples = source.samples()
                if opts.limit is not None:
                    samples = itertools.islice(samples, opts.limit)
                for batch in batched(samples, opts.batch_size):
                    run.process(batch)
                    progress.update(run.counts)
    except KeyboardInterrupt:
        interrupted = True
    except VerifyError as exc:
        failure = exc
    finally:
        writer.close()
        for ex in executors:
            ex.close()
    manifest = build_manifest(
        argv=opts.argv, reference=identities[0], candidates=identities[1:],
        sources=[s.describe() for s in sources], counts=run.counts.as_dict(),
        started=started, finished=time.time(), interrupted=interrupted,
        engine_notes={ex.spec: {"isolated": opts.isolate, "worker_restarts": ex.restarts}
                      for ex in executors},
    )
    if failure is not None:
        manifest["aborted"] = str(failure)
    write_manifest(opts.out, manifest)
    write_summary(opts.out, manifest, kept)
    if failure is not None:
        raise failure
    if interrupted:
        raise KeyboardInterrupt
    if run.counts.samples == 0:
        raise CorpusError(f"the corpus produced no samples ({', '.join(opts.corpora)})")
    return RunResult(run.counts, opts.out, manifest)
