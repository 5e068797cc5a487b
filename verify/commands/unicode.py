"""`verify unicode`: sweep every code point through the reference and each candidate,
and name the Unicode version whose character tables explain the mismatches."""

from __future__ import annotations

from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_engine_options, default_out
from verify.errors import UsageError


def _code_point(text: str) -> int:
    value = int(text.removeprefix("U+").removeprefix("u+"), 16)
    if not 0 <= value <= 0x110000:
        raise ValueError(text)
    return value


def add_parser(sub) -> None:
    p = sub.add_parser("unicode", help="sweep every code point; attribute mismatches to a Unicode version")
    add_engine_options(p, allow_all=True)
    p.add_argument("--out", type=Path, help="report directory (default reports/unicode-TIMESTAMP)")
    p.add_argument("--start", type=_code_point, default=0, metavar="HEX", help="first code point (default 0)")
    p.add_argument("--stop", type=_code_point, default=0x110000, metavar="HEX",
                   help="one past the last code point (default 110000)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--in-process", action="store_true",
                   help="engines in this process (faster start; a crash ends the sweep)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="per-batch timeout for isolated engines (default %(default)s)")


def start_engines(specs: list[str], *, isolate: bool, timeout_s: float) -> list:
    """Each engine in its own worker (a crash or hang becomes an error on those code
    points, not the end of the sweep), or in this process with ``--in-process``."""
    from verify.engines import build_engine
    from verify.executors.engine_view import ExecutorEngine
    from verify.executors.isolated import IsolatedExecutor

    started: list = []
    try:
        for spec in specs:
            started.append(ExecutorEngine(IsolatedExecutor(spec, timeout_s=timeout_s)) if isolate
                           else build_engine(spec))
    except BaseException:
        for engine in started:
            engine.close()
        raise
    return started


def run(args) -> int:
    from verify.adversarial.unicode_sweep import sweep_many, write_unicode_report
    from verify.config import run_defaults
    from verify.job import expand_candidates
    from verify.progress import progress_bar

    if args.start >= args.stop:
        raise UsageError("--start must be below --stop")
    candidates, _ = expand_candidates(args.reference, args.candidate or list(run_defaults().get("candidates", [])))
    out = args.out or default_out("unicode")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    engines = start_engines([args.reference, *candidates], isolate=not args.in_process, timeout_s=args.timeout)
    try:
        with progress_bar("verify unicode", enabled=False if args.no_progress else None) as bar:
            results = sweep_many(engines[0], engines[1:], start=args.start, stop=args.stop, progress=bar.update)
    finally:
        for engine in engines:
            engine.close()
    write_unicode_report(results, out)
    for result in results:
        version = f", tables match Unicode {result.unicode_version} ({result.explained:.0%} explained)" \
            if result.count and result.unicode_version else ""
        print(f"{result.candidate}: {result.count} mismatching code points in {len(result.mismatched)} ranges"
              f"{version}")
    print(f"-> {out / 'unicode.json'}, {out / 'unicode.md'}")
    return EXIT_OK if all(r.ok for r in results) else EXIT_FINDINGS
