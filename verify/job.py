"""One `verify run`: build engines, open sources, stream, write reports.

Engines and sources are all resolved before any work starts, so a bad spec or a
missing file fails fast with one clear error."""

from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from verify.corpora import open_corpus
from verify.config import named_engines
from verify.engines import build_engine
from verify.engines.registry import adapters, parse_spec
from verify.errors import CorpusError, UsageError, VerifyError
from verify.executors import LocalExecutor
from verify.executors.isolated import DEFAULT_TIMEOUT_S, IsolatedExecutor
from verify.findings import FindingWriter
from verify.progress import progress_for
from verify.reports.manifest import build_manifest, write_manifest
from verify.reports.markdown import write_summary
from verify.runner import Counts, Run, batched
from verify.classify import load_tags
from verify.triage import TriageSummary, read_records, triage

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
    minimize_budget_s: float = 120.0  # seconds for triage (cluster + minimise findings); 0 disables
    argv: list[str] = field(default_factory=list)


@dataclass
class RunResult:
    counts: Counts
    out: Path
    manifest: dict


def expand_candidates(reference: str, candidates: list[str]) -> tuple[list[str], set[str]]:
    """Replace ``all`` by every named engine (engines/*.toml) on the reference's
    vocabulary whose package is installed. Returns the specs and which came from ``all``."""
    if "all" not in candidates:
        return candidates, set()
    ref = parse_spec(reference)
    swept = [name for name, spec in sorted(named_engines().items())
             if spec.target == ref.target and name != ref.text and (spec.adapter, spec.options) != (ref.adapter, ref.options)
             and spec.adapter in adapters() and adapters()[spec.adapter].installed()]
    explicit = [c for c in candidates if c != "all"]
    return explicit + [s for s in swept if s not in explicit], set(swept) - set(explicit)


def start_executors(opts: RunOptions, optional: set[str]) -> tuple[list, dict[str, str]]:
    """Reference first. Isolated by default: each engine in its own worker process.
    An engine in ``optional`` (swept in by ``all``) that fails to load is left out
    and its reason returned; any other load failure ends the run."""
    started: list = []
    not_loaded: dict[str, str] = {}
    try:
        for spec in [opts.reference, *opts.candidates]:
            try:
                if opts.isolate:
                    started.append(IsolatedExecutor(spec, timeout_s=opts.timeout_s,
                                                    memory_limit_mb=opts.memory_limit_mb))
                else:
                    started.append(LocalExecutor(build_engine(spec)))
            except VerifyError as exc:
                if spec not in optional:
                    raise
                not_loaded[spec] = str(exc)
    except BaseException:
        for ex in started:
            ex.close()
        raise
    return started, not_loaded


def stream(run: Run, sources: list, opts: RunOptions) -> None:
    """source -> samples -> engines -> comparison -> findings, batch by batch."""
    with progress_for("verify run", opts.progress) as progress:
        for source in sources:
            run.source_name = source.name
            samples = source.samples()
            if opts.limit is not None:
                samples = itertools.islice(samples, opts.limit)
            for batch in batched(samples, opts.batch_size):
                run.process(batch)
                progress.update(run.counts)


def triage_or_report(opts: RunOptions, reference, candidates: list, tags) -> "TriageSummary | dict":
    """Cluster and minimise the findings. A bug in triage must not cost the run its
    reports: the findings stay as found and the manifest says what went wrong."""
    try:
        return triage(opts.out, reference, {ex.spec: ex for ex in candidates},
                      budget_s=opts.minimize_budget_s, tags=tags)
    except (KeyboardInterrupt, VerifyError):
        raise
    except Exception as exc:
        message = f"triage failed ({type(exc).__name__}: {exc}); findings are reported unminimised"
        print(f"verify: warning: {message}", file=sys.stderr)
        return {"error": message}


def run_job(opts: RunOptions) -> RunResult:
    if not opts.candidates:
        raise UsageError("no candidate engine: pass --candidate SPEC")
    if opts.reference in opts.candidates:
        raise UsageError(f"'{opts.reference}' is both the reference and a candidate")
    sources = [open_corpus(c, opts.text_field, opts.id_field) for c in opts.corpora]
    opts.candidates, swept = expand_candidates(opts.reference, opts.candidates)
    if not opts.candidates:
        raise UsageError(f"'all' found no installed engine on the vocabulary of {opts.reference}")
    tags = load_tags() if opts.minimize_budget_s > 0 else []  # a bad adversarial/tags.toml fails fast
    executors, not_loaded = start_executors(opts, swept)
    reference, candidates = executors[0], executors[1:]
    identities = [ex.identity().as_dict() for ex in executors]

    opts.out.mkdir(parents=True, exist_ok=True)
    writer = FindingWriter(opts.out)
    kept: list[dict] = []
    run = Run(reference, candidates, writer,
              on_finding=lambda r: kept.append(r) if len(kept) < KEEP_FOR_SUMMARY else None)
    started = time.time()
    interrupted, failure, triaged = False, None, None
    try:
        stream(run, sources, opts)
        writer.close()
        if opts.minimize_budget_s > 0:  # while the executors are still open
            triaged = triage_or_report(opts, reference, candidates, tags)
            kept[:] = read_records(opts.out, KEEP_FOR_SUMMARY)  # now with minimised fields
    except KeyboardInterrupt:
        interrupted = True
    except VerifyError as exc:
        failure = exc
    finally:
        writer.close()
        notes = {ex.spec: {"isolated": opts.isolate, "worker_restarts": ex.restarts, **ex.run_notes()}
                 for ex in executors}
        for ex in executors:
            ex.close()
    manifest = build_manifest(
        argv=opts.argv, reference=identities[0], candidates=identities[1:],
        sources=[s.describe() for s in sources], counts=run.counts.as_dict(),
        started=started, finished=time.time(), interrupted=interrupted,
        engine_notes=notes | {spec: {"not_loaded": why} for spec, why in not_loaded.items()},
    )
    if failure is not None:
        manifest["aborted"] = str(failure)
    manifest["triage"] = triaged.as_manifest() if isinstance(triaged, TriageSummary) else triaged
    write_manifest(opts.out, manifest)
    write_summary(opts.out, manifest, kept,
                  clusters=triaged.cluster_dicts() if isinstance(triaged, TriageSummary) else None)
    if failure is not None:
        raise failure
    if interrupted:
        raise KeyboardInterrupt
    if run.counts.samples == 0:
        raise CorpusError(f"the corpus produced no samples ({', '.join(opts.corpora)})")
    return RunResult(run.counts, opts.out, manifest)
