"""`verify report OUT [--html] [--markdown]`: render report.html and ci-summary.md again
from the committed files of OUT (a run, a gate, or any command's output folder).
Reads files only: no engine starts, nothing is re-run. Without a flag, both.

Every file it reads is untrusted input: one that is not what verify wrote (changed, cut
short, nested too deeply, of the wrong types) is one line naming OUT and exit 2, never a crash."""

from __future__ import annotations

import os
from pathlib import Path

from verify.commands import EXIT_OK
from verify.errors import CorruptFileError, UsageError, one_line


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="render report.html / ci-summary.md from an output folder")
    p.add_argument("out", type=Path, metavar="OUT", help="an output folder (verify run/gate --out)")
    p.add_argument("--html", action="store_true", help="write OUT/report.html")
    p.add_argument("--markdown", action="store_true", help="write OUT/ci-summary.md (short, for a CI comment)")


def run(args) -> int:
    from verify.reports.ci_markdown import write_ci_summary
    from verify.reports.html import write_html
    from verify.reports.report_data import load_report

    out = args.out
    if not out.is_dir():
        raise UsageError(f"{out}: not a directory")
    both = not (args.html or args.markdown)
    try:
        data = load_report(out)
        written = []
        if args.html or both:
            written.append(write_html(out, data))
        if args.markdown or both:
            written.append(write_ci_summary(out, data))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        if os.environ.get("VERIFY_DEBUG"):
            raise
        raise CorruptFileError(f"{out}: its committed files are not what verify writes "
                               f"({type(exc).__name__}: {one_line(str(exc))}): changed since?") from None
    print(" ".join(str(p) for p in written))
    return EXIT_OK
