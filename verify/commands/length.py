"""`verify length sweep`: where candidates first differ as inputs grow -- chunk thresholds,
tie rules on long runs, buffer limits -- found without a length built in.

Every probe family (a run of one character of every class the reference's pattern
distinguishes, every whitespace-like and control character, runs of two-character
blocks, the vocabulary's longest tokens and special-token literals repeated, ``X-run +
separator + Y-run``) grows geometrically to ``--max-chars``; the first length at which a
candidate differs is bisected, and every whitespace-like and control character is
placed at the cut and +-1, +-2. ``OUT/length.json``: per candidate and family the first
divergent length and the thresholds found; findings go through records, triage and
reports (docs/length.md).
"""

from __future__ import annotations

import sys

from verify.commands import SubParser
from verify.commands.options import (add_engine_options, add_job_options, add_out_option, add_pool_options,
                                     check_positive, compared_exit, job_options)


def add_parser(sub) -> None:
    from verify.adversarial.length.hunt import DEFAULT_MAX_CHARS, KINDS
    length = sub.add_parser("length", help="the length sweep: where candidates first differ as inputs grow")
    lsub = length.add_subparsers(dest="length_command", parser_class=SubParser, required=True)
    p = lsub.add_parser("sweep", help="grow every probe family, bisect the first divergent length, probe the cut",
                        description=__doc__.split("\n\n")[1])
    add_engine_options(p, allow_all=True)
    add_out_option(p, "length")
    p.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help=f"the longest text of every family (default {DEFAULT_MAX_CHARS:,})")
    p.add_argument("--kind", action="append", choices=KINDS, help="only families of these kinds (repeatable)")
    p.add_argument("--family", action="append", metavar="NAME", help="only these families (e.g. run:U+0031)")
    add_job_options(p, minimize_budget=60.0)
    add_pool_options(p)


def run(args) -> int:
    from verify.jobs.length import length_job

    check_positive(args.max_chars, "--max-chars", minimum=2)
    job = job_options(args, "length")
    result = length_job(args.reference, args.candidate, job, max_chars=args.max_chars, kinds=args.kind,
                        families=args.family)
    for spec, why in result.not_loaded.items():
        print(f"{spec}: not loaded ({why})", file=sys.stderr)
    for spec, doc in result.report["candidates"].items():
        cuts = "; ".join(f"{'at most ' if t.get('not_exact') else ''}{t['length']:,}"
                         f"{' on and off' if t.get('on_and_off') else ''} "
                         f"({len(t['families'])} families, e.g. {t['families'][0]})"
                         for t in doc["thresholds"][:6]) or "none"
        print(f"{spec}: {doc['families_differing']} of {len(doc['families'])} families differ; "
              f"first divergent lengths: {cuts}")
    c = result.counts
    print(f"{c.samples} texts, {c.findings} findings -> {result.out / 'length.json'}, {result.out / 'summary.md'}")
    return compared_exit(c, args, result.complete)
