"""`verify run`: compare candidate engines against a reference on corpora (sharded,
shard-parallel, resumable; see ``verify.pipeline``)."""

from __future__ import annotations


from verify.commands.options import (add_corpus_options, add_engine_options, add_job_options, add_limit_option,
                                     add_out_option, add_pool_options, check_positive, compared_exit, job_options)
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.config import run_defaults
    from verify.ledger import DEFAULT_AUDIT_RATE

    defaults = run_defaults()
    p = sub.add_parser("run", help="compare candidate engines against a reference on corpora")
    add_engine_options(p, allow_all=True)
    add_corpus_options(p, defaults.get("corpus", "default"))
    add_out_option(p, "run")
    add_limit_option(p)
    p.add_argument("--traces", action="append", metavar="PATH|agent:SEED",
                   help="agent traces to replay turn by turn (every turn must equal a from-scratch encode)")
    p.add_argument("--trace-format", metavar="FORMAT", help="format of --traces files (default verify; see "
                                                               "docs/traces.md)")
    p.add_argument("--template", metavar="NAME|FILE", help="chat template rendering --traces messages (default: "
                                                           "the reference's family; corpora/templates/)")
    p.add_argument("--sample", type=float, metavar="RATE",
                   help="keep a deterministic fraction RATE (0..1] of every shard's records")
    p.add_argument("--seed", type=int, metavar="S", help="seed for --sample (default 0)")
    p.add_argument("--batch-size", type=int, metavar="N", help="samples per engine call (default 64)")
    p.add_argument("--corpus-root", metavar="DIR|URL",
                   help="where a named corpus with a root lives (nemotron-cc: also $NEMOTRON_CC_DIR); "
                        "a directory or an fsspec URL (s3://..., hf://datasets/...)")
    p.add_argument("--where", action="append", metavar="FIELD=VALUE",
                   help="keep only the partitions with this field value (repeatable), e.g. quality=high")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read files a corpus folder's symlinks lead to outside it (default: skipped and counted)")
    p.add_argument("--ledger", metavar="DIR|URL",
                   help="the reference's ids by input key: the reference encodes only what is new")
    p.add_argument("--ledger-audit", type=float, metavar="RATE",
                   help="fraction of ledger hits the reference re-encodes, another deterministic sample each "
                        f"run; a mismatch is a LedgerCorrupt error, never verified (1: all; default {DEFAULT_AUDIT_RATE:g})")
    p.add_argument("--strict", action="store_true",
                   help="a bad corpus record ends the run (exit 2) instead of being reported as bad-input")
    add_job_options(p, minimize_budget=120.0)
    add_pool_options(p)


def run(args) -> int:
    from verify.driver import RunOptions, run_job
    from verify.ledger import check_audit_rate

    check_positive(args.limit, "--limit")
    check_positive(args.batch_size, "--batch-size")
    job = job_options(args, "run")  # --workers, --executor ray, --resume, --minimize-budget, the engines
    if args.sample is not None and not 0 < args.sample <= 1:
        raise UsageError("--sample must be a fraction in (0, 1]")
    if args.seed is not None and args.sample is None:
        raise UsageError("--seed goes with --sample")
    check_audit_rate(args.ledger_audit, "--ledger-audit")
    if args.ledger_audit is not None and not args.ledger:
        raise UsageError("--ledger-audit goes with --ledger")
    where = {}
    for item in args.where or []:
        field, sep, value = item.partition("=")
        if not sep or not field:
            raise UsageError(f"--where takes FIELD=VALUE, got '{item}'")
        where[field] = value
    opts = RunOptions(
        reference=args.reference, candidates=args.candidate, corpora=args.corpus, traces=args.traces,
        trace_format=args.trace_format, trace_template=args.template,
        out=job.out, text_field=args.text_field, id_field=args.id_field, limit=args.limit,
        batch_size=args.batch_size, sample_rate=args.sample, sample_seed=args.seed,
        strict=True if args.strict else None, isolate=not args.in_process, timeout_s=args.timeout,
        memory_limit_mb=args.memory_limit_mb, load_timeout_s=job.engine.load_timeout_s, executor=job.executor, corpus_root=args.corpus_root, where=where,
        follow_symlinks=args.follow_symlinks,
        ray=job.ray, ledger=args.ledger, ledger_audit=args.ledger_audit, workers=job.workers, progress=job.progress,
        minimize_budget_s=job.minimize_budget_s, resume=job.resume, argv=args.argv,
    )
    result = run_job(opts)
    print(one_line(result.counts, result.out, result.complete))
    from verify.reports.skips import skip_lines

    for line in skip_lines(result.manifest):  # why anything was skipped, and what to do about it
        print(line)
    return compared_exit(result.counts, args, result.complete)


def one_line(c, out, complete: bool = True) -> str:
    bad = f", {c.bad_records} bad records" if c.bad_records else ""
    state = "" if complete else " (INCOMPLETE: some shards failed; --resume to retry)"
    return (f"{c.samples} samples, {c.chars} chars, {c.tokens} tokens: {c.states['verified']} verified, "
            f"{c.states['diverged']} diverged, {c.states['error']} errors, {c.states['crash']} crashes, "
            f"{c.states['timeout']} timeouts, {c.states['skipped']} skipped{bad}{state} -> {out}")
