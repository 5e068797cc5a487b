"""`verify check`: metamorphic checks of one engine, against itself and a reference.

Properties (see ``verify.adversarial.checks.metamorphic``): reference (the engine's ids on a
fresh instance are the reference's: ``--reference SPEC``, by default the reference for the
engine's vocabulary when its spec names a known one, ``--no-reference`` for none), repeat,
history (fresh vs warmed engine), batch vs single, 1 vs 4 threads, decode roundtrip (byte-level
engines that can decode), ``api`` (every other production entry point the engine's
adapter declares -- its library's single, batch, segments or file call -- gives the
same ids, driven as ``SPEC?entry=NAME``; docs/entry-points.md), and ``stress``
(``verify.adversarial.checks.stress``: a batch of 10^4-10^5 short samples in one call
against single calls, homogeneous batches of each length family, through the library's own
batch call where it has one, the state hunt -- each run-length victim after poison inputs
of its family --, inputs across the 25,000 / 400,000-character chunking thresholds; four
shards of their own, each bounded by ``--stress-budget``). A hunt on the one pipeline
(``verify.adversarial.checks.hunt``): the corpus shards and the stress phases are its
shards, so ``--workers N``, ``--executor ray``, ``--resume --out OUT`` and the live
status work as for ``verify run``. Every worker starts the engine twice -- the fresh and
the warm engine, each its own (isolated workers by default, so a crash or hang is a
finding, not the end of the check). Writes ``OUT/divergences.jsonl`` (one finding per
violation, with a ``check`` field; a corpus record that is not a sample is a
``bad-input`` finding and the check goes on), ``OUT/check.json``, the manifest and
summary; ``--minimize-budget S`` triages the findings after the shards (default 60; 0: off):
findings against the reference and stateful ones (with the calls that led to them) are
minimised and clustered by cause like every hunt's.

Exit codes as for ``verify run``: 0 no violation, 1 a violation, an engine
failure or a bad record, 2 usage or configuration error.
"""

from __future__ import annotations

import sys

from verify.commands.options import (MAX_SECONDS, add_corpus_options, add_job_options, add_limit_option,
                                     add_out_option, add_pool_options, check_positive, compared_exit, job_options)
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.adversarial.checks.hunt import DEFAULT_CORPUS
    from verify.adversarial.checks.metamorphic import CHECKS

    p = sub.add_parser("check", help="metamorphic checks of one engine, against itself and a reference")
    p.add_argument("--engine", metavar="SPEC", help="the engine to check (ADAPTER:VOCAB or a name); required "
                                                    "unless --resume")
    p.add_argument("--reference", metavar="SPEC", help="the engine whose ids are right (default: the reference "
                                                       "for the engine's vocabulary, when its spec names one)")
    p.add_argument("--no-reference", action="store_true", help="check the engine against itself only")
    add_corpus_options(p, DEFAULT_CORPUS)
    add_limit_option(p)
    p.add_argument("--batch-size", type=int, default=None, metavar="N", help="samples per batch (default 32)")
    p.add_argument("--check", action="append", choices=CHECKS, help="only these checks (repeatable; default all)")
    p.add_argument("--no-roundtrip", action="store_true", help="skip the decode roundtrip check")
    p.add_argument("--no-stress", action="store_true", help="skip the stress check")
    p.add_argument("--stress-budget", type=float, default=None, metavar="S",
                   help="seconds for each phase of the stress check (default 60)")
    p.add_argument("--stress-phase", action="append", metavar="PHASE",
                   help="only these phases of the stress check (repeatable: batches, families, state, thresholds; "
                        "default all)")
    add_out_option(p, "check")
    add_job_options(p, minimize_budget=60.0)
    add_pool_options(p)


def run(args) -> int:
    from verify.adversarial.checks.metamorphic import CHECKS
    from verify.jobs.check import check_job

    check_positive(args.limit, "--limit")
    check_positive(args.batch_size, "--batch-size")
    if args.stress_budget is not None and not 0 < args.stress_budget <= MAX_SECONDS:
        raise UsageError(f"--stress-budget must be a positive number of seconds, at most {MAX_SECONDS:g}")
    if not args.engine and not args.resume:
        raise UsageError("verify check needs --engine SPEC")
    if args.reference and args.no_reference:
        raise UsageError("--reference and --no-reference exclude each other")
    checks = None
    if args.check or args.no_stress:
        checks = [c for c in args.check or CHECKS if not (args.no_stress and c == "stress")]
        if not checks:
            raise UsageError("--no-stress leaves no check to run")
    job = job_options(args, "check")
    result = check_job(args.engine, job, corpora=list(args.corpus or []), text_field=args.text_field,
                       id_field=args.id_field, limit=args.limit, batch_size=args.batch_size, checks=checks,
                       roundtrip=False if args.no_roundtrip else None, stress_budget_s=args.stress_budget,
                       reference="" if args.no_reference else args.reference, stress_phases=args.stress_phase)
    totals = result.check
    engine = (result.report.get("engine") or {}).get("spec") or args.engine
    viol = ", ".join(f"{k} {totals.violations[k]}/{totals.checked[k]}" for k in result.report["checks"]
                     if totals.checked[k] or totals.violations[k])
    bad = f", {result.counts.bad_records} bad records" if result.counts.bad_records else ""
    print(f"{engine}: {totals.samples} samples, {totals.chars} chars: "
          f"{totals.total_violations} violations ({viol or 'nothing checked'}), {totals.errors} errors{bad} "
          f"-> {result.out}")
    for note in result.report.get("notes", []):
        print(f"verify check: {note}", file=sys.stderr)
    return compared_exit(result.counts, args, result.complete)
