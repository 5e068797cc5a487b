"""`verify fuzz`: differential fuzzing of candidate engines against a reference.

Hypothesis-driven by default (``verify.adversarial.fuzz``); ``--atheris`` runs the
coverage-guided libFuzzer target ``verify.adversarial.atheris_target`` instead."""

from __future__ import annotations

import sys
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_engine_options, add_out_option, add_pool_options, engine_options, out_dir,
                                     reference_and_candidates)
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.adversarial.fuzz import DEFAULT_BUDGET_S, DEFAULT_EXAMPLES, DEFAULT_MAX_FINDINGS, EXAMPLES_ENV

    p = sub.add_parser("fuzz", help="search for inputs on which candidates differ from the reference")
    add_engine_options(p)
    add_out_option(p, "fuzz")
    p.add_argument("--max-examples", type=int, metavar="N",
                   help=f"stop after N generated examples (default ${EXAMPLES_ENV} or {DEFAULT_EXAMPLES}; "
                        "with --atheris: libFuzzer -runs)")
    p.add_argument("--budget", type=float, metavar="S",
                   help=f"stop searching after S seconds (default {DEFAULT_BUDGET_S:g})")
    p.add_argument("--seed", type=int, metavar="N", help="random seed, for a reproducible search")
    p.add_argument("--max-findings", type=int, default=DEFAULT_MAX_FINDINGS, metavar="N",
                   help="findings per engine (distinct signatures) before it leaves the pool (default %(default)s)")
    p.add_argument("--database", type=Path, metavar="DIR",
                   help="hypothesis example database (default adversarial/hypothesis in the project)")
    add_pool_options(p)
    p.add_argument("--atheris", action="store_true",
                   help="coverage-guided fuzzing with atheris/libFuzzer (engines in-process, crash artifacts in OUT)")


def run(args) -> int:
    if args.max_examples is not None and args.max_examples < 1:
        raise UsageError("--max-examples must be at least 1")
    if args.budget is not None and args.budget <= 0:
        raise UsageError("--budget must be positive")
    if args.max_findings < 1:
        raise UsageError("--max-findings must be at least 1")
    options = engine_options(args)
    if args.atheris and args.in_process:
        raise UsageError("--atheris always runs engines in-process; drop --in-process")
    if args.atheris and args.database is not None:
        raise UsageError("--database is for hypothesis; atheris keeps its corpus in OUT/atheris-corpus")
    reference, candidates = reference_and_candidates(args)
    out = out_dir(args, "fuzz")
    if args.atheris:
        from verify.adversarial.atheris_target import run_atheris

        return run_atheris(reference, candidates, out, budget_s=args.budget, runs=args.max_examples,
                           seed=args.seed)

    from verify.adversarial.fuzz import DEFAULT_DATABASE, fuzz

    result = fuzz(reference, candidates, out_dir=out, max_examples=args.max_examples, budget_s=args.budget,
                  seed=args.seed, database_dir=args.database or DEFAULT_DATABASE, engine=options,
                  max_findings=args.max_findings, argv=args.argv)
    c = result.counts
    for record in result.findings:
        print(f"{record['kind']}: {record['engine']} on {_reproducer(record)}")
    print(f"{c.samples} examples ({c.states['verified']} agreed), {len(result.findings)} findings -> {result.out}")
    return EXIT_FINDINGS if result.found else EXIT_OK


def _reproducer(record: dict) -> str:
    if "input" not in record:
        return record.get("input_file", "?")
    segments = record["input"]
    if len(segments) == 1 and not segments[0][1]:
        return ascii(segments[0][0])
    return ascii([tuple(s) for s in segments])
