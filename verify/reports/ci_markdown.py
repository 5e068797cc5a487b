"""OUT/ci-summary.md: the PR (or CI) comment of a run or of a gate.

    write_ci_summary(out_dir) -> Path
    render_ci_summary(data) -> str

A gate folder (``gate.json``) gets the gate's comment (``verify.reports.ci_gate``): its
verdict and suite, every check's counts and status (the skipped ones named, with why),
the clusters that fail the gate whatever their baseline status, then new / fixed /
unchanged / allowlisted / expired, skipped samples with what to do, the parts of checks
that ran nothing, and the baseline's deltas. A run folder gets the run's: the verdict,
counts, skipped samples with why, the largest clusters with a one-line escaped reproducer.

Bounded whatever the number of findings or clusters: every list is cut with a count of
what was left out, and the whole stays under ``MAX_LINES`` lines and ``MAX_CHARS``
characters (GitHub refuses a comment over 65,536 characters). The footer names only files
that exist beside it. The layout is ``templates/ci_summary.md.j2`` (a run's sections) and
``templates/ci_gate.md.j2`` (a gate's), one macro per section; everything that comes from a
corpus or a config is shown through ``verify.reports.md`` (a code span or escaped text), so no
Markdown or HTML in it renders.
"""

from __future__ import annotations

from pathlib import Path

from verify.counts import STATES
from verify.reports.report_data import CLUSTER_CONTEXT_CHARS, ReportData, load_report
from verify.reports.ci_gate import gate_sections
from verify.reports.md_templates import section_lines
from verify.reports.skips import manifest_skip_rows, sample_unit
from verify.rundir.layout import CLUSTERS_FILE, FINDINGS_FILE, MANIFEST_FILE, REPORT_FILE
from verify.rundir.layout import SUMMARY_FILE as RUN_SUMMARY_FILE

TEMPLATE = "ci_summary.md.j2"
SUMMARY_FILE = "ci-summary.md"
GITHUB_COMMENT_LIMIT = 65_536  # the most characters GitHub takes in one comment
MAX_LINES = 400
MAX_CHARS = 60_000  # under the limit with room for a workflow's own header
TOP_CLUSTERS = 10
MAX_ENGINES = 6
RUN_FILES = (REPORT_FILE, RUN_SUMMARY_FILE, FINDINGS_FILE, CLUSTERS_FILE, MANIFEST_FILE)
GATE_FILES = (REPORT_FILE, "gate.json", "junit.xml")


def _header(data: ReportData) -> list[str]:
    ref, cands = data.reference, data.candidates
    sources = [str(s.get("name")) for s in data.manifest.get("sources") or []]
    return section_lines(TEMPLATE, "header", {
        "verdict": data.verdict, "engines": bool(ref or cands), "reference": str((ref or {}).get("spec")),
        "candidates": [str(c.get("spec")) for c in cands[:MAX_ENGINES]],
        "more_candidates": max(len(cands) - MAX_ENGINES, 0),
        "sources": sources, "shards": data.manifest.get("shards")})


def _sections(data: ReportData) -> list[list[str]]:
    counts = data.counts
    return [_header(data),
            section_lines(TEMPLATE, "counts_table", counts, STATES, list((counts.get("per_engine") or {}).items()),
                          MAX_ENGINES),
            section_lines(TEMPLATE, "skip_lines", manifest_skip_rows(data.manifest), sample_unit(data.manifest),
                          MAX_ENGINES * 2),
            section_lines(TEMPLATE, "cluster_lines", data, data.clusters[:TOP_CLUSTERS],
                          2 * CLUSTER_CONTEXT_CHARS + 40)]


def _fit(sections: list[list[str]], footer: list[str]) -> list[str]:
    """The sections' lines in order while they fit in MAX_LINES and MAX_CHARS with the footer;
    what does not fit is counted in the note that ends the cut."""
    lines_in = [line for section in sections for line in section]
    room_lines = MAX_LINES - len(footer) - 1
    room_chars = MAX_CHARS - sum(len(line) + 1 for line in footer) - 120
    lines: list[str] = []
    used = 0
    for i, line in enumerate(lines_in):
        if len(lines) + 1 > room_lines or used + len(line) + 1 > room_chars:
            left = len(lines_in) - i
            return lines + [f"(cut to fit a comment: {left:,} more lines; everything is in report.html)"] + footer
        lines.append(line)
        used += len(line) + 1
    return lines + footer


def _footer(data: ReportData) -> list[str]:
    """Only the files that exist beside the comment."""
    names = [n for n in (GATE_FILES if data.gate is not None else RUN_FILES) if (Path(data.out) / n).is_file()]
    return section_lines(TEMPLATE, "footer", names)


def render_ci_summary(data: ReportData) -> str:
    sections = gate_sections(data.gate) if data.gate is not None else _sections(data)
    return "\n".join(_fit(sections, _footer(data))) + "\n"


def write_ci_summary(out_dir: Path, data: ReportData | None = None) -> Path:
    """OUT/ci-summary.md from ``data`` (or from OUT's files when not given)."""
    out_dir = Path(out_dir)
    path = out_dir / SUMMARY_FILE
    tmp = path.with_name(f".{SUMMARY_FILE}.tmp")
    data = data or load_report(out_dir, max_findings=0, max_clusters=TOP_CLUSTERS)
    tmp.write_text(render_ci_summary(data), encoding="utf-8")
    tmp.replace(path)
    return path
