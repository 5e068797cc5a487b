"""`verify gate SUITE.toml`: the nightly gate. Runs every check of a suite (corpus slices,
trace replays, fuzzing, the Unicode and vocabulary sweeps, regression recheck, metamorphic
checks) through the ordinary pipeline into OUT/checks/NAME/, judges the clusters they
found against the suite's allowlist (and, with --baseline, the previous night's gate),
and writes OUT/gate.json, OUT/junit.xml and the HTML and CI summaries. The suite format,
the allowlist and the rules: ci/README.md; the logic: ``verify.gate``.

Exit codes: 0 pass, 1 fail, 2 configuration error (suite, allowlist, baseline, or a check
that cannot start), 3 a harness bug in a check.
"""

from __future__ import annotations

from pathlib import Path

from verify.commands.options import default_out
from verify.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("gate", help="run a gate suite (ci/nightly.toml): pass/fail with allowlist and baseline")
    p.add_argument("suite", type=Path, metavar="SUITE.toml", help="the suite (see ci/README.md)")
    p.add_argument("--out", type=Path, metavar="DIR", help="report directory (default reports/gate-TIMESTAMP)")
    p.add_argument("--baseline", type=Path, metavar="PREVIOUS_OUT",
                   help="a previous gate's OUT: list new, fixed and unchanged clusters and the throughput change")
    p.add_argument("--resume", action="store_true",
                   help="continue the gate in --out: finished checks keep their results, a cut-short corpus or "
                        "replay check continues its run; the allowlist is read again")


def run(args) -> int:
    from verify.gate.runner import run_gate

    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR (the gate to continue)")
    if not args.suite.is_file():
        raise UsageError(f"suite {args.suite} not found")
    return run_gate(args.suite, args.out or default_out("gate"), baseline=args.baseline, resume=args.resume,
                    argv=args.argv).exit_code
