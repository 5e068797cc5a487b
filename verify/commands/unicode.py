"""`verify unicode`: sweep every code point through the reference and each candidate,
and name the Unicode version whose character tables explain the mismatches.

A hunt on the one pipeline (``verify.adversarial.unicode.hunt``): code-point ranges are
shards, so ``--workers N``, ``--executor ray``, ``--resume --out OUT`` and the live status
work as for ``verify run``. Engines are isolated by default, so a crash or hang marks its
code points instead of ending the sweep; ``--candidate all`` adds every installed engine
on the reference's vocabulary, and those that fail to load are reported, not fatal. OUT
gets unicode.json / unicode.md (the sweep's report) and manifest.json / summary.md
(every command's), where each swept code point counts as one sample; each mismatching code
point's failing string is a finding in divergences.jsonl, minimised and clustered by cause
(triage.jsonl, clusters.json) within --minimize-budget.
"""

from __future__ import annotations

import sys

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_engine_options, add_job_options, add_out_option, add_pool_options,
                                     check_positive, job_options)


def _code_point(text: str) -> int:
    value = int(text.removeprefix("U+").removeprefix("u+"), 16)
    if not 0 <= value <= 0x110000:
        raise ValueError(text)
    return value


def add_parser(sub) -> None:
    p = sub.add_parser("unicode", help="sweep every code point; attribute mismatches to a Unicode version")
    add_engine_options(p, allow_all=True)
    add_out_option(p, "unicode")
    p.add_argument("--start", type=_code_point, default=None, metavar="HEX", help="first code point (default 0)")
    p.add_argument("--stop", type=_code_point, default=None, metavar="HEX",
                   help="one past the last code point (default 110000)")
    p.add_argument("--shard-code-points", type=int, default=None, metavar="N",
                   help="code points per shard (default 32768: 34 shards over the whole range)")
    add_job_options(p)
    add_pool_options(p)


def run(args) -> int:
    reference, requested = args.reference, args.candidate
    from verify.jobs.unicode import unicode_job

    job = job_options(args, "unicode")
    check_positive(args.shard_code_points, "--shard-code-points")
    results, not_loaded = unicode_job(reference, requested, job, start=args.start, stop=args.stop,
                                      shard_code_points=args.shard_code_points)
    for spec, why in not_loaded.items():
        print(f"{spec}: not loaded ({why})", file=sys.stderr)
    for result in results:
        n = result.normalization
        if result.count and n and result.version_basis.startswith(n["name"]):
            version = f", normalization: {n['name']} vs the reference's {n['form']} data of Unicode " \
                      f"{n['reference_unicode_version']} ({result.explained:.0%} explained)"
        elif result.count and result.unicode_version:
            version = f", tables match Unicode {result.unicode_version} ({result.explained:.0%} explained)" + \
                (f"; the rest: {n['name']}" if n else "")
        else:
            version = ""
        print(f"{result.candidate}: {result.count} mismatching code points in {len(result.mismatched)} ranges"
              f"{version}")
    out = job.out
    print(f"-> {out / 'unicode.json'}, {out / 'unicode.md'}, {out / 'summary.md'}")
    return EXIT_OK if results and all(r.ok for r in results) else EXIT_FINDINGS
