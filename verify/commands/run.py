"""`verify run`: compare candidate engines against a reference on corpora."""

from __future__ import annotations

import sys
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_corpus_options, add_engine_options, default_out
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.config import run_defaults

    defaults = run_defaults()
    p = sub.add_parser("run", help="compare candidate engines against a reference on corpora")
    add_engine_options(p, allow_all=True)
    add_corpus_options(p, defaults.get("corpus", "default"))
    p.add_argument("--out", type=Path, help="report directory (default reports/run-TIMESTAMP)")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N samples per corpus")
    p.add_argument("--batch-size", type=int, default=64, metavar="N")
    p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    p.add_argument("--in-process", action="store_true",
                   help="run engines inside this process (faster start; a crash or hang ends the run)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="per-sample timeout in seconds for isolated engines (default %(default)s)")
    p.add_argument("--memory-limit-mb", type=int, metavar="MB",
                   help="address-space limit for each engine worker")
    p.add_argument("--minimize-budget", type=float, default=120.0, metavar="S",
                   help="seconds to cluster and minimise findings after the run; 0 disables (default %(default)s)")


def run(args) -> int:
    from verify.config import run_defaults
    from verify.job import RunOptions, run_job

    defaults = run_defaults()
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    if args.minimize_budget < 0:
        raise UsageError("--minimize-budget must be 0 (off) or positive")
    opts = RunOptions(
        reference=args.reference,
        candidates=args.candidate or list(defaults.get("candidates", [])),
        corpora=args.corpus or [defaults.get("corpus", "default")],
        out=args.out or default_out("run"),
        text_field=args.text_field, id_field=args.id_field, limit=args.limit, batch_size=args.batch_size,
        progress=False if args.no_progress else None, argv=sys.argv[1:],
        isolate=not args.in_process, timeout_s=args.timeout, memory_limit_mb=args.memory_limit_mb,
        minimize_budget_s=args.minimize_budget,
    )
    result = run_job(opts)
    c = result.counts
    print(f"{c.samples} samples, {c.chars} chars, {c.tokens} tokens: {c.states['verified']} verified, "
          f"{c.states['diverged']} diverged, {c.states['error']} errors, {c.states['crash']} crashes, "
          f"{c.states['timeout']} timeouts, {c.states['skipped']} skipped -> {result.out}")
    return EXIT_OK if c.all_verified else EXIT_FINDINGS
