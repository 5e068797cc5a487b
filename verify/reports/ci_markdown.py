"""OUT/ci-summary.md: the run (and the gate, when OUT holds gate.json) in a few lines
for a pull-request or CI comment.

    write_ci_summary(out_dir) -> Path
    render_ci_summary(data) -> str

Bounded whatever the number of findings: at most ``MAX_LINES`` lines and
``MAX_CHARS`` characters (the verdict line, counts, the largest clusters with a
one-line escaped reproducer, what failed in the gate, where the full report is).
Everything that comes from a corpus or a config is shown through
``verify.reports.visible`` inside a code span, so no Markdown or HTML in it renders.
"""

from __future__ import annotations

from pathlib import Path

from verify.counts import STATES
from verify.reports.report_data import CLUSTER_CONTEXT_CHARS, ReportData, load_report
from verify.reports.md import md_code

SUMMARY_FILE = "ci-summary.md"
MAX_LINES = 60
MAX_CHARS = 6000
TOP_CLUSTERS = 10
MAX_ENGINES = 6
GATE_LISTED = 5
REPRO_CHARS = 60


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


def _difference(d: dict | None) -> str:
    if not d:
        return ""
    if d.get("error"):
        return f" — {md_code(d['error'], 60)}"
    if d.get("text"):
        return f" — {md_code(d['text'], 60)}"
    exp, act = d["expected"], d["actual"]
    return (f" — token {d['token_index']}: {md_code(exp['id'], 12)} {md_code(exp['piece'], 16)} → "
            f"{md_code(act['id'], 12)} {md_code(act['piece'], 16)}")


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
                     f"{shown}{_difference(c['difference'])}")
    return lines + [""]


def _gate_lines(gate: dict) -> list[str]:
    failed = [c for c in gate["checks"] if c["status"] in ("fail", "error")]
    lines = [f"**Gate** {md_code(gate['suite'], 60)}: **{gate['verdict']}** — {len(failed)} of "
             f"{len(gate['checks'])} checks failed"
             + (": " + ", ".join(f"{md_code(c['name'], 30)} ({c['status']})" for c in failed[:8]) if failed else "")
             + (f", {len(failed) - 8} more" if len(failed) > 8 else "")]
    if gate["reasons"]:
        lines.append("Why: " + "; ".join(md_code(r, 60) for r in gate["reasons"][:6]))
    by_status = gate["clusters_by_status"]
    if by_status:
        lines.append("Clusters: " + ", ".join(f"{len(rows)} {status}" for status, rows in by_status.items()))
    stale = [a for a in gate["allowlist"] if a["status"] in ("stale", "expired")]
    if stale:
        lines.append("Allowlist: " + ", ".join(f"{md_code(a['key'], 50)} ({a['status']})" for a in stale[:GATE_LISTED])
                     + (f", {len(stale) - GATE_LISTED} more" if len(stale) > GATE_LISTED else ""))
    for status in ("new", "expired"):
        rows = by_status.get(status, [])
        for c in rows[:GATE_LISTED]:
            lines.append(f"- {status}: **{c['size']}×** {md_code(c['engine'], 50)} {md_code(c['key'], 60)} — "
                         f"{md_code(c['reproducer'], REPRO_CHARS)}{_difference(c['difference'])}")
        if len(rows) > GATE_LISTED:
            lines.append(f"- {len(rows) - GATE_LISTED} more {status} clusters in report.html")
    return lines + [""]


def _header(data: ReportData) -> list[str]:
    gate = f" · gate **{data.gate['verdict']}**" if data.gate else ""
    lines = [f"### verify: **{data.verdict}**{gate}", ""]
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
    """The sections' lines in order while they fit in MAX_LINES and MAX_CHARS with the footer."""
    cut_note = "(cut to fit a comment: everything is in report.html)"
    room_lines = MAX_LINES - len(footer) - 1
    room_chars = MAX_CHARS - sum(len(line) + 1 for line in footer) - len(cut_note) - 2
    lines: list[str] = []
    used = 0
    for line in (line for section in sections for line in section):
        if len(lines) + 1 > room_lines or used + len(line) + 1 > room_chars:
            return lines + [cut_note] + footer
        lines.append(line)
        used += len(line) + 1
    return lines + footer


def render_ci_summary(data: ReportData) -> str:
    footer = ["Full report: `report.html` (plots, every cluster with its reproducer); "
              "`summary.md`, `divergences.jsonl`, `clusters.json` beside it."]
    sections = [_header(data), _counts_table(data), _gate_lines(data.gate) if data.gate else [], _cluster_lines(data)]
    return "\n".join(_fit(sections, footer)) + "\n"


def write_ci_summary(out_dir: Path, data: ReportData | None = None) -> Path:
    """OUT/ci-summary.md from ``data`` (or from OUT's files when not given)."""
    out_dir = Path(out_dir)
    path = out_dir / SUMMARY_FILE
    tmp = path.with_name(f".{SUMMARY_FILE}.tmp")
    data = data or load_report(out_dir, max_findings=0, max_clusters=TOP_CLUSTERS)
    tmp.write_text(render_ci_summary(data), encoding="utf-8")
    tmp.replace(path)
    return path
