"""`verify fuzz`: differential fuzzing of candidate engines against a reference.

Hypothesis-driven by default, as a hunt on the one pipeline
(``verify.adversarial.fuzz.hunt``): strategy families x seeds are the search shards,
the big batches and each chunking threshold are stress shards (``--no-stress`` skips
them), so ``--workers N``, ``--executor ray``, ``--resume --out OUT`` and the live status
work as for ``verify run``. ``--allowlist FILE`` names accepted clusters
(``verify.allowlist``); ``--atheris`` runs the coverage-guided libFuzzer target
``verify.adversarial.fuzz.atheris_target`` instead (in-process, not sharded).

Every number is checked before anything runs (one line, exit 2): a count is a whole
number in its range, a time is a positive, finite number of seconds (``nan`` and ``inf``
are refused).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_engine_options, add_job_options, add_out_option,
                                     add_pool_options, check_job_numbers, engine_options, job_options, out_dir,
                                     reference_and_candidates)
from verify.errors import UsageError
from verify.limits import MAX_COUNT, MAX_SEED, seconds_problem, whole_problem


def whole(low: int, high: int):
    """An argparse type: a whole number from ``low`` to ``high`` (the check a gate suite's value gets too)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        problem = whole_problem(value, low, high)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    return parse


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds up to ``MAX_SECONDS`` (as in a gate suite)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    problem = seconds_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def add_parser(sub) -> None:
    from verify.adversarial.fuzz.search import (DEFAULT_BUDGET_S, DEFAULT_EXAMPLES, DEFAULT_MAX_FINDINGS, EXAMPLES_ENV,
                                              MAX_EXAMPLES)

    p = sub.add_parser("fuzz", help="search for inputs on which candidates differ from the reference")
    add_engine_options(p)
    add_out_option(p, "fuzz")
    p.add_argument("--max-examples", type=whole(1, MAX_EXAMPLES), metavar="N",
                   help=f"stop after N generated examples, shared by the search shards (default ${EXAMPLES_ENV} or "
                        f"{DEFAULT_EXAMPLES}; with --atheris: libFuzzer -runs)")
    p.add_argument("--budget", type=seconds, metavar="S",
                   help=f"at most S seconds of searching, split into a cap per shard (default {DEFAULT_BUDGET_S:g})")
    p.add_argument("--seed", type=whole(0, MAX_SEED), metavar="N",
                   help="random seed, for a reproducible search (default: one drawn and saved in the run's plan)")
    p.add_argument("--max-findings", type=whole(1, MAX_COUNT), default=None, metavar="N",
                   help="distinct clusters found per engine before it leaves the pool; findings of a cluster "
                        f"already found are counted, not written (default {DEFAULT_MAX_FINDINGS})")
    p.add_argument("--allowlist", type=Path, metavar="FILE",
                   help="TOML [[allow]] rows (engine regex, cluster regex, reason, optional expires): clusters "
                        "they accept are counted but not reported")
    p.add_argument("--no-stress", action="store_true", default=None,
                   help="skip the stress shards (batches of 10^4-10^5 short samples in one call, inputs across "
                        "the 25,000 / 400,000-character chunking thresholds)")
    p.add_argument("--database", type=Path, metavar="DIR",
                   help="hypothesis example database (default adversarial/hypothesis in the project)")
    add_job_options(p, minimize_budget=60.0)
    add_pool_options(p)
    p.add_argument("--atheris", action="store_true",
                   help="coverage-guided fuzzing with atheris/libFuzzer (engines in-process, crash artifacts in OUT)")


def run(args) -> int:
    check_job_numbers(args)  # before anything else: one line, exit 2 (--timeout: engine_options)
    if args.database is not None:
        from verify.rundir.paths import folder_to_write

        folder_to_write(args.database, "--database")
    options = engine_options(args)
    if args.atheris:
        return _atheris(args, options)
    allowlist = None
    if args.allowlist is not None:
        from verify.allowlist import load_allowlist

        allowlist = load_allowlist(args.allowlist)
    if args.resume:  # what the command line leaves unsaid comes from the run's plan
        reference, candidates = args.reference, list(args.candidate or [])
    else:
        reference, candidates = reference_and_candidates(args)
    from verify.adversarial.fuzz.search import DEFAULT_DATABASE
    from verify.jobs.fuzz import fuzz_job

    result = fuzz_job(reference, candidates, job_options(args, "fuzz", options), max_examples=args.max_examples,
                      budget_s=args.budget, seed=args.seed, database_dir=args.database or DEFAULT_DATABASE,
                      max_findings=args.max_findings, allowlist=allowlist,
                      stress=None if args.no_stress is None else not args.no_stress)
    c = result.counts
    for record in result.findings:
        print(f"{record['kind']}: {record['engine']} on {_reproducer(record)}")
    masked = [cl for cl in result.clusters if cl["masked"]]
    hidden = f", {sum(cl['masked'] for cl in masked)} masked in {len(masked)} known clusters" if masked else ""
    print(f"{c.samples} examples ({c.states['verified']} agreed), {len(result.findings)} findings{hidden} "
          f"-> {result.out}")
    return EXIT_FINDINGS if result.found else EXIT_OK


def _atheris(args, options) -> int:
    """libFuzzer in this process: not sharded, so the job options do not apply."""
    if args.in_process:
        raise UsageError("--atheris always runs engines in-process; drop --in-process")
    if args.database is not None:
        raise UsageError("--database is for hypothesis; atheris keeps its corpus in OUT/atheris-corpus")
    if args.allowlist is not None or args.no_stress:
        raise UsageError("--allowlist and --no-stress are for the hypothesis fuzzer, not --atheris")
    if args.resume or args.workers is not None or args.executor != "local":
        raise UsageError("--atheris runs in one process: --resume, --workers and --executor do not apply")
    if args.max_findings is not None:
        raise UsageError("--max-findings is for the hypothesis fuzzer, not --atheris")
    from verify.adversarial.fuzz.atheris_target import run_atheris

    reference, candidates = reference_and_candidates(args)
    return run_atheris(reference, candidates, out_dir(args, "fuzz"), budget_s=args.budget, runs=args.max_examples,
                       seed=args.seed)


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
