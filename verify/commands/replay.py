"""`verify replay`: agent traces through stateful engines, turn by turn.

    verify replay --engine SPEC --reference SPEC --traces PATH|agent:SEED [--format F]

The same pipeline as `verify run --traces` (shards, workers, resume, triage): every
turn's ids from each engine must equal the reference's from-scratch encode of the
whole transcript so far. Formats and fields: docs/traces.md.

    verify replay --engine SPEC --reference SPEC --edits N [--seed S]

Hypothesis edit scripts instead of traces, on the same pipeline
(``verify.adversarial.fuzz.edits_hunt``: candidate x seed-slice shards).
"""

from __future__ import annotations

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_job_options, add_limit_option, add_out_option, add_pool_options,
                                     check_positive, compared_exit, job_options)
from verify.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="replay agent traces turn by turn through stateful engines")
    p.add_argument("--engine", action="append", required=True, metavar="SPEC",
                   help="the engine under test (stateful: toktier, repair:..., naive:..., a session plugin); "
                        "repeatable")
    p.add_argument("--reference", metavar="SPEC", help="the reference (from-scratch encodes; default tiktoken-cl100k)")
    p.add_argument("--traces", action="append", metavar="PATH|agent:SEED", help="repeatable")
    p.add_argument("--edits", type=int, metavar="N",
                   help="instead of traces: N hypothesis edit scripts aimed at splice certificates "
                        "(verify.adversarial.fuzz.sessions), shrunk on failure")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the --edits search")
    p.add_argument("--format", metavar="FORMAT", help="verify, claude-code, codex, sharegpt, openai, tracelab")
    p.add_argument("--template", metavar="NAME|FILE", help="chat template rendering messages into segments "
                                                           "(default: the reference's family; corpora/templates/)")
    add_out_option(p, "replay")
    add_limit_option(p)
    add_job_options(p)
    add_pool_options(p)


def run(args) -> int:
    from verify.commands.run import one_line
    from verify.config import run_defaults
    from verify.driver import RunOptions, run_job

    check_positive(args.limit, "--limit")
    if bool(args.traces) == (args.edits is not None):
        raise UsageError("give --traces PATH|agent:SEED or --edits N (not both)")
    job = job_options(args, "replay")
    reference = args.reference or run_defaults().get("reference")
    if args.edits is not None:
        check_positive(args.edits, "--edits")
        return _edits(args, reference, job)
    result = run_job(RunOptions(
        reference=reference, candidates=list(args.engine), corpora=[], traces=list(args.traces),
        trace_format=args.format, trace_template=args.template, out=job.out, limit=args.limit,
        isolate=job.engine.isolate, timeout_s=job.engine.timeout_s, memory_limit_mb=job.engine.memory_limit_mb,
        load_timeout_s=job.engine.load_timeout_s,
        workers=job.workers, executor=job.executor, ray=job.ray, progress=job.progress,
        minimize_budget_s=job.minimize_budget_s, resume=job.resume, argv=job.argv))
    print(one_line(result.counts, result.out, result.complete).replace(" samples,", " turns,", 1))
    from verify.reports.skips import skip_lines

    for line in skip_lines(result.manifest):  # why anything was skipped, and what to do about it
        print(line)
    return compared_exit(result.counts, args, result.complete)


def _edits(args, reference: str, job) -> int:
    """``--edits N``: the hypothesis search over edit scripts (a hunt: candidate x seed-slice
    shards), then triage on what it found."""
    from verify.jobs.edits import edits_job

    result = edits_job(reference, list(args.engine), job, examples=args.edits, seed=args.seed)
    for spec, info in result.engines.items():
        print(f"{spec}: {info['examples']} edit scripts, {info['findings']} findings -> {result.out}")
    return EXIT_FINDINGS if result.found or not result.complete else EXIT_OK
