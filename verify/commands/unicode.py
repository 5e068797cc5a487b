"""`verify unicode`: sweep every code point through the reference and each candidate,
and name the Unicode version whose character tables explain the mismatches."""

from __future__ import annotations

import time
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.errors import UsageError


def _code_point(text: str) -> int:
    value = int(text.removeprefix("U+").removeprefix("u+"), 16)
    if not 0 <= value <= 0x110000:
        raise ValueError(text)
    return value


def add_parser(sub) -> None:
    from verify.config import run_defaults

    defaults = run_defaults()
    p = sub.add_parser("unicode", help="sweep every code point; attribute mismatches to a Unicode version")
    p.add_argument("--reference", default=defaults.get("reference"), metavar="SPEC")
    p.add_argument("--candidate", action="append", metavar="SPEC",
                   help=f"repeatable, or 'all' (every installed engine on the reference's vocabulary); "
                        f"default {', '.join(defaults.get('candidates', []))}")
    p.add_argument("--out", type=Path, help="report directory (default reports/unicode-TIMESTAMP)")
    p.add_argument("--start", type=_code_point, default=0, metavar="HEX", help="first code point (default 0)")
    p.add_argument("--stop", type=_code_point, default=0x110000, metavar="HEX",
                   help="one past the last code point (default 110000)")
    p.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    from verify.adversarial.unicode_sweep import sweep_many, write_unicode_report
    from verify.config import project_dir, run_defaults
    from verify.engines import build_engine
    from verify.job import expand_candidates
    from verify.progress import progress_bar

    if args.start >= args.stop:
        raise UsageError("--start must be below --stop")
    candidates, _ = expand_candidates(args.reference, args.candidate or list(run_defaults().get("candidates", [])))
    out = args.out or project_dir() / "reports" / time.strftime("unicode-%Y%m%d-%H%M%S")
    reference = build_engine(args.reference)
    engines = [build_engine(spec) for spec in candidates]
    with progress_bar("verify unicode", enabled=False if args.no_progress else None) as bar:
        results = sweep_many(reference, engines, start=args.start, stop=args.stop, progress=bar.update)
    write_unicode_report(results, out)
    for result in results:
        version = f", tables match Unicode {result.unicode_version} ({result.explained:.0%} explained)" \
            if result.count and result.unicode_version else ""
        print(f"{result.candidate}: {result.count} mismatching code points in {len(result.mismatched)} ranges"
              f"{version}")
    print(f"-> {out / 'unicode.json'}, {out / 'unicode.md'}")
    return EXIT_OK if all(r.ok for r in results) else EXIT_FINDINGS
