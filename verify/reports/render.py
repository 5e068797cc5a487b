"""Every report of a run folder, rendered from its committed files alone:
``manifest.json`` (with the triage stage's summary), ``summary.md``, ``report.html`` and
``ci-summary.md``. ``verify triage OUT`` and ``verify report OUT`` render them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify.rundir.manifest import committed_manifest, write_manifest


def render_reports(out: Path) -> dict[str, Any]:
    """manifest.json, summary.md, report.html and ci-summary.md, from the committed files alone."""
    from verify.reports.ci_markdown import write_ci_summary
    from verify.reports.html import write_html
    from verify.reports.markdown import write_run_summary
    from verify.reports.report_data import load_report
    from verify.triage import read_triage_info

    manifest = committed_manifest(out)
    triage_info = read_triage_info(out)
    if triage_info is not None:
        manifest["triage"] = triage_info
    write_manifest(out, manifest)
    write_run_summary(out, manifest)
    report = load_report(out)
    write_html(out, report)
    write_ci_summary(out, report)
    return manifest
