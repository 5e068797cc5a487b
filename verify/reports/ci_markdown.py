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
that exist beside it. Everything that comes from a corpus or a config is shown through
``verify.reports.visible`` inside a code span, so no Markdown or HTML in it renders.
"""

from __future__ import annotations

from pathlib import Path

from verify.counts import STATES
from verify.reports.report_data import CLUSTER_CONTEXT_CHARS, ReportData, load_report
from verify.reports.md import md_code, md_text
from verify.reports.ci_gate import difference_text, gate_sections
from verify.reports.skips import manifest_skip_rows, sample_unit

SUMMARY_FILE = "ci-summary.md"
GITHUB_COMMENT_LIMIT = 65_536  # the most characters GitHub takes in one comment
MAX_LINES = 400
MAX_CHARS = 60_000  # under the limit with room for a workflow's own header
TOP_CLUSTERS = 10
MAX_ENGINES = 6
REPRO_CHARS = 60
RUN_FILES = ("report.html", "summary.md", "divergences.jsonl", "clusters.json", "manifest.json")
GATE_FILES = ("report.html", "gate.json", "junit.xml")


def _counts_table(data: ReportData) -> list[str]:
    counts = data.counts
    if not counts:
        return []
    head = ["", "samples", *STATES, "bad records"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
            "| all | " + " | ".join(f"{counts.get(k, 0):,}" for k in ("samples", *STATES, "bad_records")) + " |"]
    engines = list((counts.get("per_engine") or {}).items())
    for spec, tally in engines[:MAX_ENGINES]:
        rows.append(f"| {md_code(spec, 50, table=True)} | | " + " | ".join(f"{tally.get(k, 0):,}" for k in STATES) + " | |")
    rows.append("")
    if len(engines) > MAX_ENGINES:
        rows += [f"({len(engines) - MAX_ENGINES} more engines in report.html)", ""]
    return rows


def _cluster_lines(data: ReportData) -> list[str]:
    if not data.triaged:
        return [f"Findings: {data.findings_total:,}, not triaged (`verify triage OUT` clusters them).", ""] \
            if data.findings_total else []
    if not data.clusters:
        return []
    shown = data.clusters[:TOP_CLUSTERS]
    lines = [f"**Top clusters** ({len(shown)} of {data.clusters_total:,}, by size; {data.findings_total:,} findings):"]
    for n, c in enumerate(shown, 1):
        tags = f" [{', '.join(md_code(t, 24) for t in c['tags'][:3])}]" if c["tags"] else ""
        if c["minimised"] or not c["context"]:
            shown = md_code(c["reproducer"], REPRO_CHARS) + ("" if c["minimised"] else " (not minimised)")
        else:  # an original input: where it first differs says more than its first characters
            ctx = c["context"]
            shown = f"not minimised, at {md_code(ctx['before'] + '⟦' + ctx['after'], 2 * CLUSTER_CONTEXT_CHARS + 40)}"
        lines.append(f"{n}. **{c['count']:,}×** {md_code(c['engine'], 50)} {md_code(c['key'], 60)}{tags} — "
                     f"{shown}{difference_text(c['difference'])}")
    return lines + [""]


def _skip_lines(data: ReportData) -> list[str]:
    rows = manifest_skip_rows(data.manifest)
    if not rows:
        return []
    unit = sample_unit(data.manifest)
    lines = [f"**Skipped** ({sum(r.count for r in rows):,} {unit}, never counted as verified):"]
    lines += [f"- {r.count:,} {unit} by {md_code(r.engine, 50)}: {md_text(r.reason, 300)}"
              + (f" — **what to do**: {md_text(r.remedy, 300)}" if r.remedy else "") for r in rows[:MAX_ENGINES * 2]]
    if len(rows) > MAX_ENGINES * 2:
        lines.append(f"- … and {len(rows) - MAX_ENGINES * 2} more (summary.md)")
    return lines + [""]


def _header(data: ReportData) -> list[str]:
    lines = [f"### verify: **{data.verdict}**", ""]
    ref = data.reference
    cands = data.candidates
    if ref or cands:
        names = ", ".join(md_code(str(c.get("spec")), 50) for c in cands[:MAX_ENGINES])
        more = f" and {len(cands) - MAX_ENGINES} more" if len(cands) > MAX_ENGINES else ""
        lines.append(f"Reference {md_code(str((ref or {}).get('spec')), 50)}; candidates {names or '—'}{more}.")
    sources = [str(s.get("name")) for s in data.manifest.get("sources") or []]
    if sources:
        lines.append(f"Corpus {', '.join(md_code(s, 60) for s in sources[:3])}"
                     + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
                     + (f"; shards {data.manifest['shards'].get('committed')}/{data.manifest['shards'].get('total')}"
                        if data.manifest.get("shards") else "") + ".")
    return lines + [""]


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
    if not names:
        return []
    first, rest = names[0], names[1:]
    return [f"Full report: `{first}`" + (f"; {', '.join(f'`{n}`' for n in rest)} beside it." if rest else ".")]


def render_ci_summary(data: ReportData) -> str:
    if data.gate is not None:
        sections = gate_sections(data.gate)
    else:
        sections = [_header(data), _counts_table(data), _skip_lines(data), _cluster_lines(data)]
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
