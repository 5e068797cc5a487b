"""`verify replay`: agent traces through stateful engines, turn by turn.

    verify replay --engine SPEC --reference SPEC --traces PATH|agent:SEED [--format F]

The same pipeline as `verify run --traces` (shards, workers, resume, triage): every
turn's ids from each engine must equal the reference's from-scratch encode of the
whole transcript so far. Formats and fields: docs/traces.md.
"""

from __future__ import annotations

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_limit_option, add_out_option, add_pool_options, check_positive,
                                     default_out, engine_options)
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.executors.workers import default_workers

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
    p.add_argument("--workers", type=int, metavar="N", help=f"shard workers (default {default_workers()})")
    p.add_argument("--resume", action="store_true", help="continue the replay in --out")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--minimize-budget", type=float, default=120.0, metavar="S",
                   help="seconds to cluster and minimise findings (default %(default)s)")
    add_pool_options(p)


def run(args) -> int:
    from verify.commands.run import one_line
    from verify.config import run_defaults
    from verify.executors.workers import default_workers
    from verify.driver import RunOptions, run_job

    check_positive(args.limit, "--limit")
    check_positive(args.workers, "--workers")
    engine_options(args)
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR")
    reference = args.reference or run_defaults().get("reference")
    if bool(args.traces) == (args.edits is not None):
        raise UsageError("give --traces PATH|agent:SEED or --edits N (not both)")
    if args.edits is not None:
        check_positive(args.edits, "--edits")
        return _edits(args, reference)
    result = run_job(RunOptions(
        reference=reference, candidates=list(args.engine), corpora=[], traces=list(args.traces),
        trace_format=args.format, trace_template=args.template, out=args.out or default_out("replay"), limit=args.limit,
        isolate=not args.in_process, timeout_s=args.timeout, memory_limit_mb=args.memory_limit_mb,
        workers=args.workers or default_workers(), progress=False if args.no_progress else None,
        minimize_budget_s=args.minimize_budget, resume=args.resume, argv=args.argv))
    print(one_line(result.counts, result.out, result.complete).replace(" samples,", " turns,", 1))
    return EXIT_OK if result.counts.all_verified and result.complete else EXIT_FINDINGS


def _edits(args, reference: str) -> int:
    """``--edits N``: the hypothesis search over edit scripts, then triage on what it found."""
    from verify.adversarial.fuzz.sessions import fuzz_sessions
    from verify.job import CommandJob
    from verify.triage import run_triage

    out = args.out or default_out("replay")
    found = 0
    with CommandJob("replay-edits", out, args.argv, engine_options(args)) as job:
        job.reference, job.candidates = reference, list(args.engine)
        ref, *candidates = job.pool.start([reference, *args.engine])
        per_engine = {}
        for ex in candidates:
            if not ex.capabilities.sessions:
                raise UsageError(f"{ex.spec} has no sessions: --edits needs a stateful engine")
            result = fuzz_sessions(ref, ex, job.writer, max_examples=args.edits, seed=args.seed,
                                   budget_s=max(args.minimize_budget, 30.0))
            per_engine[ex.spec] = {"examples": result.examples, "findings": len(result.findings),
                                   "seconds": round(result.seconds, 3)}
            found += len(result.findings)
            job.counts.samples += result.examples  # one edit script = one sample
            job.counts.findings += len(result.findings)
            job.counts.states["diverged"] += len(result.findings)
            job.counts.states["verified"] += result.examples - len(result.findings)
        job.extra["edits"] = {"seed": args.seed, "max_examples": args.edits, "engines": per_engine}
    if found:
        run_triage(job.out, engine=engine_options(args), budget_s=args.minimize_budget)
    for spec, info in per_engine.items():
        print(f"{spec}: {info['examples']} edit scripts, {info['findings']} findings -> {job.out}")
    return EXIT_FINDINGS if found else EXIT_OK
