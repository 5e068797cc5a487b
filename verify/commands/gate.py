"""`verify gate SUITE.toml`: the nightly gate. Runs every check of a suite (corpus slices,
trace replays, fuzzing, the Unicode and vocabulary sweeps, regression recheck, metamorphic
checks) through the ordinary pipeline into OUT/checks/NAME/, judges the clusters they
found against the suite's allowlist (and, with --baseline, the previous night's gate),
and writes OUT/gate.json, OUT/junit.xml and the HTML and CI summaries. The suite format,
the allowlist and the rules: ci/README.md; the logic: ``verify.gate``.

`verify gate init --candidate SPEC [--reference SPEC] [--profile pr|nightly] [--write PATH]`
writes a suite for one candidate (``verify.gate.init``) and prints how to run it.

Exit codes: 0 pass, 1 fail, 2 configuration error (suite, allowlist, baseline, or a check
that cannot start), 3 a harness bug in a check. ``init``: 0 written, 2 it cannot be.
"""

from __future__ import annotations

from pathlib import Path

from verify.commands.options import MAX_SECONDS, add_allow_skipped_option, default_out
from verify.errors import UsageError

INIT = "init"
INIT_ONLY = ("candidate", "reference", "profile", "write", "force")
RUN_ONLY = ("out", "baseline", "resume", "deadline", "allow_skipped")


def add_parser(sub) -> None:
    p = sub.add_parser("gate", help="run a gate suite (ci/nightly.toml): pass/fail with allowlist and baseline; "
                                    "'gate init' writes one for your engine")
    p.add_argument("suite", metavar="SUITE.toml|init",
                   help="the suite (see ci/README.md), or 'init' to write one (--candidate, --profile)")
    p.add_argument("--out", type=Path, metavar="DIR", help="report directory (default reports/gate-TIMESTAMP)")
    p.add_argument("--baseline", type=Path, metavar="PREVIOUS_OUT",
                   help="a previous gate's OUT: list new, fixed and unchanged clusters and the throughput change")
    p.add_argument("--resume", action="store_true",
                   help="continue the gate in --out: finished checks keep their results, a cut-short corpus or "
                        "replay check continues its run; the allowlist is read again")
    p.add_argument("--deadline", type=float, metavar="S",
                   help="the whole gate in S seconds (the suite's [gate] deadline): a check it cuts, or leaves no "
                        "time to start, fails and says so")
    add_allow_skipped_option(p)
    init = p.add_argument_group("gate init")
    init.add_argument("--candidate", metavar="SPEC", help="init: the engine the suite gates")
    init.add_argument("--reference", metavar="SPEC",
                      help="init: the tokenizer it must match (default: engines/reference.toml's for its vocabulary)")
    init.add_argument("--profile", choices=("pr", "nightly"),
                      help="init: pr (five minutes on this machine, for pull requests; the default) or nightly "
                           "(thirty minutes): each check sized from the engines' speed measured here")
    init.add_argument("--write", type=Path, metavar="PATH",
                      help="init: where to write the suite (default gate-PROFILE.toml); an allowlist.toml is put "
                           "beside it when there is none")
    init.add_argument("--force", action="store_true", help="init: replace an existing suite file")


def _given(args, names) -> list[str]:
    return [f"--{n}" for n in names if getattr(args, n) not in (None, False)]


def run(args) -> int:
    if args.suite == INIT:
        return run_init(args)
    stray = _given(args, INIT_ONLY)
    if stray:
        raise UsageError(f"{', '.join(stray)} belong(s) to 'verify gate init', not to running a suite")
    from verify.gate.runner import run_gate

    suite = packaged_suite(Path(args.suite))
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR (the gate to continue)")
    if not suite.is_file():
        raise UsageError(f"suite {suite} not found")
    if args.deadline is not None and not 0 < args.deadline <= MAX_SECONDS:
        raise UsageError(f"--deadline must be a positive number of seconds, at most {MAX_SECONDS:g}")
    return run_gate(suite, args.out or default_out("gate"), baseline=args.baseline, resume=args.resume,
                    argv=args.argv, deadline=args.deadline, allow_skipped=args.allow_skipped).exit_code


def run_init(args) -> int:
    from verify.gate.init import default_path, init_suite

    stray = _given(args, RUN_ONLY)
    if stray:
        raise UsageError(f"{', '.join(stray)} belong(s) to running a suite, not to 'verify gate init'")
    if not args.candidate:
        raise UsageError("verify gate init needs --candidate SPEC (the engine the suite gates)")
    profile = args.profile or "pr"
    written = init_suite(args.candidate, args.reference, profile, args.write or default_path(profile), args.force)
    print(f"wrote {written.path}: {profile} gate for {args.candidate} against {written.reference} "
          f"({len(written.checks)} checks: {', '.join(written.checks)})")
    if written.allowlist is not None:
        print(f"wrote {written.allowlist}: the allowlist it names (empty: every cluster found fails the gate)")
    plan = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in written.plan)
    total = sum(seconds for _, seconds in written.plan)
    print(f"plan for this machine (the candidate and the reference encode the smoke corpus in "
          f"{written.pair_seconds:g} s): {plan}; about {total:.0f} s of the {profile} profile's "
          f"{written.budget_s:g} s (deadline = {written.budget_s:g} in the suite)")
    for note in written.notes:
        print(f"note: {note}")
    print(f"run it:   verify gate {written.path} --out gate-out")
    print(f"then:     open gate-out/report.html; accept known clusters in {written.path.parent / 'allowlist.toml'} "
          f"(reason, link, expires); later nights: --baseline PREVIOUS_GATE_OUT")
    return 0


def packaged_suite(suite: Path) -> Path:
    """``ci/nightly.toml`` from any folder: the suite as given when it is there, else the example
    suite of the same path that the install carries (``verify.config.declared``)."""
    import sys

    from verify.config import declared

    if suite.is_file() or suite.is_absolute() or not suite.parts or suite.parts[0] != "ci":
        return suite
    packaged = declared(*suite.parts)
    if packaged.is_file():
        print(f"gate: {suite} is not here: running the example suite this install carries, {packaged}",
              file=sys.stderr)
        return packaged
    return suite
