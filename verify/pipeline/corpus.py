"""The ``run`` hunt: corpora (and agent traces) through the reference and the candidates.

    run_job(RunOptions(...))          (verify.driver) the whole command: shards, triage, reports
    CorpusHunt(RunOptions(...))       the hunt alone, for ``verify.pipeline.run.run_plan``

``RunOptions`` holds the command line of ``verify run`` / ``verify replay``: what to read
(output-changing, saved in the plan) and how to run it (``job()``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verify.corpora import open_corpus
from verify.corpora.shards import apply_limit
from verify.engines.catalogue import expand_candidates, run_engines
from verify.errors import UsageError
from verify.executors.isolated import DEFAULT_TIMEOUT_S
from verify.executors.pool import EngineOptions
from verify.executors.setup import RayOptions
from verify.ledger import DEFAULT_AUDIT_RATE
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.pipeline.records_task import records_task

# the options a resume takes from the saved plan when the command line leaves them unsaid
SAVED_OPTIONS = ("text_field", "id_field", "limit", "batch_size", "sample_rate", "sample_seed", "strict",
                 "timeout_s", "memory_limit_mb", "trace_format", "trace_template", "ledger_audit",
                 "ledger_audit_seed", "corpus_root")


@dataclass
class RunOptions:
    reference: str | None
    candidates: list[str] | None
    corpora: list[str] | None
    out: Path
    text_field: str | None = None
    id_field: str | None = None
    limit: int | None = None
    batch_size: int | None = None
    sample_rate: float | None = None
    sample_seed: int | None = None
    strict: bool | None = None
    isolate: bool = True
    timeout_s: float | None = None
    memory_limit_mb: int | None = None
    load_timeout_s: float | None = None  # None: loading.DEFAULT_LOAD_TIMEOUT_S
    workers: int = 1
    executor: str = "local"  # local | ray
    ray: RayOptions | None = None
    corpus_root: str | None = None  # where named corpora with a root (nemotron-cc) live
    where: dict[str, str] = field(default_factory=dict)  # partition filters (--where quality=high)
    follow_symlinks: bool = False  # a corpus folder's symlinks out of it are read (else skipped and counted)
    ledger: str | None = None  # --ledger DIR or URL: the reference's ids by input key
    ledger_audit: float | None = None  # --ledger-audit RATE: hits re-encoded (None: ledger.DEFAULT_AUDIT_RATE)
    ledger_audit_seed: int | None = None  # which hits: drawn per run when it is planned (saved, so resumes agree)
    traces: list[str] | None = None  # agent traces to replay turn by turn (--traces PATH|agent:SEED)
    trace_format: str | None = None
    trace_template: str | None = None  # chat template name or .toml (default: the reference's family)
    progress: bool | None = None
    minimize_budget_s: float = 120.0  # seconds for triage (cluster + minimise findings); 0 disables
    resume: bool = False
    argv: list[str] = field(default_factory=list)

    def output_options(self) -> dict[str, Any]:
        return {"text_field": self.text_field, "id_field": self.id_field, "limit": self.limit,  # None: the source's
                "batch_size": self.batch_size or 64, "sample_rate": self.sample_rate,
                "sample_seed": self.sample_seed or 0, "strict": bool(self.strict),
                "timeout_s": self.timeout_s or DEFAULT_TIMEOUT_S, "memory_limit_mb": self.memory_limit_mb,
                "where": dict(sorted(self.where.items())), "trace_format": self.trace_format,
                "trace_template": self.trace_template,
                # the audit changes results (a forged entry it picks is an error, not verified)
                "ledger_audit": DEFAULT_AUDIT_RATE if self.ledger_audit is None else self.ledger_audit,
                "ledger_audit_seed": self.ledger_audit_seed or 0,
                # which files a folder holds; absent when off, so runs planned before it resume alike
                **({"follow_symlinks": True} if self.follow_symlinks else {}),
                # where a named corpus with a root is (recorded, so --resume needs only --out)
                **({"corpus_root": self.corpus_root} if self.corpus_root else {})}

    def engine_options(self) -> EngineOptions:
        loading = {"load_timeout_s": self.load_timeout_s} if self.load_timeout_s else {}
        # a ledger run's engines are mostly the candidates re-encoding what agreed before: there an
        # engine process per engine would cost more than the engines (bench/README.md), so its shard
        # workers are the crash boundary (``EngineOptions.speculate``)
        return EngineOptions(isolate=self.isolate, timeout_s=self.timeout_s or DEFAULT_TIMEOUT_S,
                             memory_limit_mb=self.memory_limit_mb, speculate=bool(self.ledger), **loading)

    def job(self) -> JobOptions:
        return JobOptions(out=Path(self.out), engine=self.engine_options(), workers=self.workers,
                          executor=self.executor, ray=self.ray, ledger=self.ledger, progress=self.progress,
                          minimize_budget_s=self.minimize_budget_s, resume=self.resume, argv=list(self.argv))


def build_plan(opts: RunOptions) -> HuntPlan:
    from verify.config import run_defaults

    defaults = run_defaults()
    opts.reference, opts.candidates = run_engines(opts.reference, opts.candidates)
    opts.corpora = opts.corpora if opts.corpora is not None else [] if opts.traces else \
        [defaults.get("corpus", "default")]
    if not opts.candidates:
        raise UsageError("no candidate engine: pass --candidate SPEC")
    if opts.reference in opts.candidates:
        raise UsageError(f"'{opts.reference}' is both the reference and a candidate")
    candidates, swept = expand_candidates(opts.reference, opts.candidates)
    if not candidates:
        raise UsageError(f"'all' found no installed engine on the vocabulary of {opts.reference}")
    if opts.ledger_audit_seed is None:  # another sample of the hits each run: a forgery cannot hide for long
        opts.ledger_audit_seed = secrets.randbits(32) if opts.ledger else 0
    options = opts.output_options()
    sources, shards = [], []
    for corpus in opts.corpora:
        source = open_corpus(corpus, options["text_field"], options["id_field"], root=opts.corpus_root,
                             where=opts.where, follow_symlinks=opts.follow_symlinks)
        listed = source.shards()
        if opts.sample_rate is not None:
            listed = [replace(s, sample_rate=opts.sample_rate, sample_seed=options["sample_seed"]) for s in listed]
        shards.extend(apply_limit(listed, opts.limit))
        sources.append(source.describe())
    for traces in opts.traces or []:
        from verify.corpora.traces import open_traces

        source = open_traces(traces, opts.trace_format, template=opts.trace_template, reference=opts.reference)
        shards.extend(apply_limit(source.shards(), opts.limit))
        sources.append(source.describe())
    return HuntPlan(opts.reference, list(opts.candidates), candidates, sources, shards, options,
                    optional=sorted(swept), corpora=list(opts.corpora), traces=list(opts.traces or []))


class CorpusHunt(Hunt):
    name = "run"
    label = "verify run"
    task = staticmethod(records_task)

    def __init__(self, opts: RunOptions):
        self.opts = opts

    def plan(self) -> HuntPlan:
        return build_plan(self.opts)

    def fill_from(self, saved) -> None:
        opts = self.opts
        opts.reference = opts.reference or saved.reference
        opts.candidates = opts.candidates or saved.requested
        opts.corpora = opts.corpora or saved.corpora
        opts.traces = opts.traces or saved.traces
        for name in SAVED_OPTIONS:
            if getattr(opts, name) is None:
                setattr(opts, name, saved.options.get(name))
        if not opts.where:
            opts.where = dict(saved.options.get("where") or {})
        opts.follow_symlinks = opts.follow_symlinks or bool(saved.options.get("follow_symlinks"))

    def empty(self, totals) -> str | None:
        if totals.samples == 0 and totals.bad_records == 0:
            return f"the corpus produced no samples ({', '.join((self.opts.corpora or []) + (self.opts.traces or []))})"
        return None
