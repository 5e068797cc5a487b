"""`verify selftest`: measure the harness's own detection power on planted faults.

    verify selftest [--reference SPEC] [--faults N] [--kinds KIND ...] [--rate R] [--out DIR] [--seed S]

Exit 0 when every kind found at least --min-recall of its injected faults (and nothing on
inputs without one), 1 otherwise. How it works: docs/selftest.md.
"""

from __future__ import annotations

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_out_option, add_pool_options, check_positive, check_workers, engine_options,
                                     out_dir)


def add_parser(sub) -> None:
    from verify.engines.planted.injector import DEFAULT_UNICODE_FAULT, KINDS

    p = sub.add_parser("selftest", help="plant faults in a reference and measure how many the harness finds")
    p.add_argument("--reference", metavar="SPEC", default="tiktoken:cl100k_base",
                   help="the engine faults are planted in, and the reference they are checked against "
                        "(default %(default)s)")
    p.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), metavar="KIND",
                   help=f"fault kinds (default all: {', '.join(KINDS)})")
    p.add_argument("--faults", type=int, default=100, metavar="N",
                   help="faults to aim for per kind: N / RATE documents (sessions for history) (default %(default)s)")
    p.add_argument("--rate", type=float, default=0.25, metavar="R",
                   help="share of inputs a fault is injected into (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the fault choices (default 0)")
    p.add_argument("--corpus", default="default", metavar="NAME",
                   help="corpus whose first documents are the slice (default %(default)s)")
    p.add_argument("--unicode-fault", default=DEFAULT_UNICODE_FAULT, metavar="CLASS@TABLE",
                   help="class and Unicode table of the unicode fault (default %(default)s)")
    p.add_argument("--after", type=int, default=2000, metavar="N",
                   help="history: characters of transcript before a faulted session goes wrong (default %(default)s)")
    p.add_argument("--turns", type=int, default=6, metavar="N", help="history: turns per session (default %(default)s)")
    p.add_argument("--min-recall", type=float, default=0.9, metavar="SHARE",
                   help="exit 1 when a kind found less than this share of its faults (default %(default)s)")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="shard workers per run (default 1)")
    p.add_argument("--minimize-budget", type=float, default=0.0, metavar="S",
                   help="seconds to triage each run's findings (default 0: detection only)")
    add_out_option(p, "selftest")
    add_pool_options(p)


def run(args) -> int:
    from verify.selftest.report import write_reports
    from verify.selftest.run import SelftestOptions, run_selftest

    check_positive(args.faults, "--faults")
    check_workers(args.workers, "--workers")
    check_positive(args.turns, "--turns")
    engine = engine_options(args)
    out = out_dir(args, "selftest")
    opts = SelftestOptions(out=out, reference=args.reference, kinds=tuple(dict.fromkeys(args.kinds)),
                           faults=args.faults, rate=args.rate, seed=args.seed, corpus=args.corpus,
                           unicode_fault=args.unicode_fault, after=args.after, turns=args.turns,
                           min_recall=args.min_recall, isolate=engine.isolate, timeout_s=engine.timeout_s,
                           workers=args.workers, minimize_budget_s=args.minimize_budget, argv=args.argv)
    result = run_selftest(opts)
    write_reports(out, result)
    for r in result["kinds"]:
        s = r["shadow"]
        print(f"{r['kind']:10} injected {r['injected']:5}  found {r['found']:5} ({r['share_found']:.1%})  "
              f"requests for {s['target']:.0%} at {s['sample_rate']:.0%}: "
              f"{'never' if s['requests'] is None else s['requests']}  {'ok' if r['passed'] else 'FAIL'}")
    print(f"verify selftest: {'passed' if result['passed'] else 'FAILED'}; reports in {out}/selftest.md")
    return EXIT_OK if result["passed"] else EXIT_FINDINGS
