"""`verify certify`: bounded-exhaustive parity. Every string of at most k atoms of the
reference's pre-tokenizer pattern -- code points that every class, literal and case fold
of the pattern treats alike, split by UTF-8 length -- each position filled with
representatives so that every adjacent pair of atoms meets with every pair of theirs, is
encoded by every engine; OUT/certificate.json says exactly what was proven equal
(docs/certify.md).

The space follows from the arguments alone: --k, or --budget S, which picks the largest k
whose strings fit S seconds at a fixed rate per worker (a formula, not a clock), so the
verdict is the same on any machine at any load. --explain prints the atoms and exits;
--check CERT builds the certificate's engines here and exits 1 naming the identity field
that changed (and, for a small space, the verdict if it changed).
"""

from __future__ import annotations

import sys
from pathlib import Path

from verify.commands.options import (MAX_SECONDS, add_engine_options, add_job_options, add_out_option, check_positive,
                                     add_pool_options, compared_exit, engine_options, job_options,
                                     reference_and_candidates)
from verify.errors import UsageError


def add_parser(sub) -> None:
    from verify.adversarial.certify.hunt import DEFAULT_K, DEFAULT_REPS, MAX_REPS
    from verify.adversarial.certify.space import MAX_K

    p = sub.add_parser("certify", help="bounded-exhaustive parity: every string of at most k atoms, a certificate",
                       description=__doc__.split("\n\n")[1])
    add_engine_options(p)
    add_out_option(p, "certify")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--k", type=int, default=None, metavar="K",
                      help=f"the longest atom string (1 to {MAX_K}; default {DEFAULT_K})")
    size.add_argument("--budget", type=float, default=None, metavar="S",
                      help="pick the largest k whose strings fit S seconds at the fixed rate per worker")
    p.add_argument("--reps", type=int, default=None, metavar="N",
                   help=f"representatives per atom (1 to {MAX_REPS}; default {DEFAULT_REPS})")
    p.add_argument("--premise", action="append", type=Path, metavar="OUT",
                   help="a finished unicode / vocab sweep / length sweep run of the same engines, recorded as a "
                        "premise with its verdict (repeatable)")
    p.add_argument("--sweeps", action="store_true",
                   help="first run the Unicode, vocabulary and length sweeps of the same engines (into "
                        "OUT/premises/), recorded as the certificate's premises")
    p.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help="with --sweeps: the length sweep's longest family (default its own, 1,000,000)")
    p.add_argument("--explain", action="store_true", help="print the atoms of the reference's pattern and exit")
    p.add_argument("--check", type=Path, metavar="CERT",
                   help="re-verify a certificate.json against the engines installed here")
    add_job_options(p, minimize_budget=30.0)
    add_pool_options(p)


def run(args) -> int:
    if args.check is not None:
        return _check(args)
    if args.explain:
        return _explain(reference_and_candidates(args)[0], args)
    from verify.adversarial.certify.hunt import check_k, check_reps
    from verify.jobs.certify import certify_job, read_premises, run_premises

    check_k(args.k)
    check_reps(args.reps)
    if args.budget is not None and not 0 < args.budget <= MAX_SECONDS:
        raise UsageError(f"--budget must be a positive number of seconds, at most {MAX_SECONDS:g}, got {args.budget:g}")
    if args.max_chars is not None and not args.sweeps:
        raise UsageError("--max-chars bounds the length sweep of --sweeps: give --sweeps too")
    if args.sweeps and args.premise:
        raise UsageError("--sweeps runs the premises; --premise reads finished ones: give one of them")
    check_positive(args.max_chars, "--max-chars", minimum=2)
    premises = read_premises(args.premise, *reference_and_candidates(args)) if args.premise else None
    job = job_options(args, "certify")
    if args.sweeps:
        premises = run_premises(*reference_and_candidates(args), job, max_chars=args.max_chars)
    # unsaid engines stay None: a --resume takes them from its plan, a new run from engines/defaults.toml
    result = certify_job(args.reference, args.candidate, job, k=args.k, reps=args.reps, budget_s=args.budget,
                         premises=premises)
    for spec, why in result.not_loaded.items():
        print(f"{spec}: not loaded ({why})", file=sys.stderr)
    doc = result.certificate
    print(f"k = {doc['k']}, {doc['alphabet']['atoms']} atoms, {doc['strings']['total']:,} strings: {doc['verdict']}")
    for c in doc["counterexamples"][:10]:
        print(f"  {c['engine']}: {c['text']!r} ({c['length']} atoms: {', '.join(map(str, c['atoms']))})")
    print(doc["statement"])
    print(f"-> {result.out / 'certificate.json'}, {result.out / 'summary.md'}")
    return compared_exit(result.counts, args, result.complete) if doc["verdict"] != "equal" else 0


def _explain(reference: str, args) -> int:
    from verify.adversarial.certify.atoms import alphabet_of
    from verify.adversarial.certify.hunt import DEFAULT_REPS, check_reps

    check_reps(args.reps)
    alpha = alphabet_of(reference)
    reps = args.reps or DEFAULT_REPS
    print(f"{reference}: {len(alpha)} atoms over {sum(a.size for a in alpha.atoms):,} code points "
          f"(surrogates excluded), alphabet {alpha.digest}")
    for pattern in alpha.patterns:
        print(f"pattern: {pattern}")
    for a in alpha.atoms:
        shown = ", ".join(f"U+{c:04X} {chr(c)!r}" for c in a.representatives)
        print(f"{a.index:3d}  {a.size:>7,}  utf8={a.utf8}  {a.label:<16}  reps: {shown}  "
              f"(first {min(reps, len(a.representatives))} used)  [{'; '.join(a.leaves)}]")
    return 0


def _check(args) -> int:
    from verify.jobs.certify import check_certificate, load_certificate

    doc = load_certificate(args.check)
    result = check_certificate(args.check, engine_options(args), out=args.out)
    if result.changed:
        for line in result.changed:
            print(f"changed: {line}", file=sys.stderr)
        print(f"{args.check}: the engines are not the ones certified ({len(result.changed)} identity field(s) changed)")
        return 1
    if result.verdict is not None and result.verdict != doc["verdict"]:
        print(f"{args.check}: same identities, but the verdict is now {result.verdict!r}, certified "
              f"{doc['verdict']!r} ({result.rerun_out})")
        return 1
    again = f"; enumeration run again: {result.verdict}" if result.verdict else \
        "; enumeration not run again (space too large)"
    print(f"{args.check}: same engines ({1 + len(doc['candidates'])} identities){again}")
    return 0
