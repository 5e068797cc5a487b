"""`verify fuzz`: differential fuzzing of candidate engines against a reference.

Hypothesis-driven by default (``verify.adversarial.fuzz.search``), followed by a stress
phase of serving-shaped inputs (``--no-stress`` skips it); ``--allowlist FILE``
names accepted clusters (``verify.allowlist``); ``--atheris`` runs the
coverage-guided libFuzzer target ``verify.adversarial.fuzz.atheris_target`` instead."""

from __future__ import annotations

from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_engine_options, add_out_option, add_pool_options, engine_options, out_dir,
                                     reference_and_candidates)
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.adversarial.fuzz.search import DEFAULT_BUDGET_S, DEFAULT_EXAMPLES, DEFAULT_MAX_FINDINGS, EXAMPLES_ENV

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
                   help="distinct clusters found per engine before it leaves the pool; findings of a cluster "
                        "already found are counted, not written (default %(default)s)")
    p.add_argument("--allowlist", type=Path, metavar="FILE",
                   help="TOML [[allow]] rows (engine regex, cluster regex, reason, optional expires): clusters "
                        "they accept are counted but not reported")
    p.add_argument("--no-stress", action="store_true",
                   help="skip the stress phase (batches of 10^4-10^5 short samples in one call, inputs across "
                        "the 25,000 / 400,000-character chunking thresholds)")
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
    if args.atheris and (args.allowlist is not None or args.no_stress):
        raise UsageError("--allowlist and --no-stress are for the hypothesis fuzzer, not --atheris")
    allowlist = None
    if args.allowlist is not None:
        from verify.allowlist import load_allowlist

        allowlist = load_allowlist(args.allowlist)
    reference, candidates = reference_and_candidates(args)
    out = out_dir(args, "fuzz")
    if args.atheris:
        from verify.adversarial.fuzz.atheris_target import run_atheris

        return run_atheris(reference, candidates, out, budget_s=args.budget, runs=args.max_examples,
                           seed=args.seed)

    from verify.adversarial.fuzz.search import DEFAULT_DATABASE, fuzz

    result = fuzz(reference, candidates, out_dir=out, max_examples=args.max_examples, budget_s=args.budget,
                  seed=args.seed, database_dir=args.database or DEFAULT_DATABASE, engine=options,
                  max_findings=args.max_findings, argv=args.argv, allowlist=allowlist, stress=not args.no_stress)
    c = result.counts
    for record in result.findings:
        print(f"{record['kind']}: {record['engine']} on {_reproducer(record)}")
    masked = [cl for cl in result.clusters if cl["masked"]]
    hidden = f", {sum(cl['masked'] for cl in masked)} masked in {len(masked)} known clusters" if masked else ""
    print(f"{c.samples} examples ({c.states['verified']} agreed), {len(result.findings)} findings{hidden} "
          f"-> {result.out}")
    return EXIT_FINDINGS if result.found else EXIT_OK


def _reproducer(record: dict) -> str:
    stress = record.get("stress") or {}
    if stress.get("shape") == "threshold":
        return (f"a {stress['length']}-character input ({stress['probe']} at {stress['at']}, cut {stress['cut']}, "
                f"unit {stress['unit']!r}) [{record.get('input_file') or 'inline'}]")
    if stress.get("shape") == "big-batch":
        where = f"sample {stress['index']} of a {stress['size']}-sample batch"
    else:
        where = ""
    if "input" not in record:
        return record.get("input_file", "?")
    segments = record["input"]
    if len(segments) == 1 and not segments[0][1]:
        text = ascii(segments[0][0])
        return f"{text} ({where})" if where else text
    return ascii([tuple(s) for s in segments])
