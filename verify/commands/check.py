"""`verify check`: metamorphic checks of one engine, no reference needed.

Properties (see ``verify.adversarial.checks.metamorphic``): repeat, history (fresh vs
warmed engine), batch vs single, 1 vs 4 threads, decode roundtrip (byte-level
engines that can decode), and ``stress`` (``verify.adversarial.checks.stress``: a
batch of 10^4-10^5 short samples in one call against single calls, inputs across
the 25,000 / 400,000-character chunking thresholds; after the corpus, bounded by
``--stress-budget``). The fresh and the warm engine are two executors of
the one spec, each from its own ``EnginePool`` (isolated workers by default, so
a crash or hang is a finding, not the end of the check). Writes
``OUT/divergences.jsonl`` (one finding per violation, with a ``check`` field; a
corpus record that is not a sample is a ``bad-input`` finding and the check goes
on), ``OUT/check.json``, and the ``CommandJob`` manifest and summary.

Exit codes as for ``verify run``: 0 no violation, 1 a violation, an engine
failure or a bad record, 2 usage or configuration error.
"""

from __future__ import annotations

import itertools
import time

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_corpus_options, add_limit_option, add_out_option, add_pool_options,
                                     check_positive, engine_options, out_dir)
from verify.errors import CorpusError, UsageError
from verify import atomic

DEFAULT_CORPUS = "smoke"


def add_parser(sub) -> None:
    from verify.adversarial.checks.metamorphic import CHECKS

    p = sub.add_parser("check", help="metamorphic checks of one engine (no reference needed)")
    p.add_argument("--engine", required=True, metavar="SPEC", help="the engine to check (ADAPTER:VOCAB or a name)")
    add_corpus_options(p, DEFAULT_CORPUS)
    add_limit_option(p)
    p.add_argument("--batch-size", type=int, default=32, metavar="N")
    p.add_argument("--check", action="append", choices=CHECKS, help="only these checks (repeatable; default all)")
    p.add_argument("--no-roundtrip", action="store_true", help="skip the decode roundtrip check")
    p.add_argument("--no-stress", action="store_true", help="skip the stress check")
    p.add_argument("--stress-budget", type=float, default=None, metavar="S",
                   help="seconds for the stress check (default 60)")
    add_out_option(p, "check")
    add_pool_options(p)


def run(args) -> int:
    from verify.adversarial.checks.metamorphic import CHECKS, MetamorphicChecker
    from verify.adversarial.checks.stress import DEFAULT_BUDGET_S, StressCheck
    from verify.corpora import open_corpus
    from verify.executors.pool import EnginePool
    from verify.job import CommandJob

    check_positive(args.limit, "--limit")
    check_positive(args.batch_size, "--batch-size")
    stress_budget = DEFAULT_BUDGET_S if args.stress_budget is None else args.stress_budget
    if stress_budget <= 0:
        raise UsageError("--stress-budget must be positive")
    options = engine_options(args)
    out = out_dir(args, "check")
    corpora = args.corpus or [DEFAULT_CORPUS]
    sources = [open_corpus(c, args.text_field or "text", args.id_field or "id") for c in corpora]
    checks = tuple(c for c in args.check or CHECKS if not (args.no_stress and c == "stress"))
    if not checks:
        raise UsageError("--no-stress leaves no check to run")
    started = time.time()
    with CommandJob("check", out, args.argv, options) as job:
        job.reference = args.engine
        job.sources = [s.describe() for s in sources]
        (fresh,) = job.pool.start([args.engine])
        # a second engine of the same spec, from its own pool: its history differs from the fresh one's
        with EnginePool(options) as warm_pool:
            (warm,) = warm_pool.start([args.engine])
            checker = MetamorphicChecker(fresh, warm, job.writer, checks=checks,
                                         roundtrip=False if args.no_roundtrip else None)
            job.counts = checker.tally  # partial counts reach the manifest if the check is interrupted
            for source in sources:
                records = itertools.chain.from_iterable(shard.records() for shard in source.shards())
                if args.limit is not None:
                    records = itertools.islice(records, args.limit)
                checker.run(records, args.batch_size, source=source.name)
            corpus_samples = checker.counts.samples
            stress = None
            if "stress" in checks:
                checker.source = "stress"
                stress = StressCheck(checker, budget_s=stress_budget).run()
            job.extra["check"] = {"checks": list(checks), "roundtrip_checked": bool(checker.roundtrip) and
                                  "roundtrip" in checks, "counts": checker.counts.as_dict(), "stress": stress,
                                  "warm_engine_notes": warm_pool.notes().get(args.engine, {})}
        totals = checker.counts
        if corpus_samples == 0:
            raise CorpusError(f"the corpus produced no samples ({', '.join(corpora)})")
        report = {
            "schema": "verify.check/1",
            "argv": args.argv,
            "engine": job.pool.identities().get(args.engine),
            "checks": list(checks),
            "roundtrip_checked": bool(checker.roundtrip) and "roundtrip" in checks,
            "sources": job.sources,
            "started": started,
            "finished": time.time(),
            "counts": totals.as_dict() | {"bad_records": checker.tally.bad_records},
            "stress": stress,
        }
        atomic.write_json(out / "check.json", report)
    viol = ", ".join(f"{k} {totals.violations[k]}/{totals.checked[k]}" for k in checks
                     if totals.checked[k] or totals.violations[k])
    bad = f", {job.counts.bad_records} bad records" if job.counts.bad_records else ""
    print(f"{args.engine}: {totals.samples} samples, {totals.chars} chars: "
          f"{totals.total_violations} violations ({viol or 'nothing checked'}), {totals.errors} errors{bad} -> {out}")
    return EXIT_OK if job.counts.all_verified else EXIT_FINDINGS
