"""The PR comment of a gate folder (``ci-summary.md`` beside ``gate.json``), as sections of
Markdown lines that ``verify.reports.ci_markdown`` fits under GitHub's comment limit.

    gate_sections(gate) -> [[line, ...], ...]

In this order: the verdict with the suite; every check's status, the failed and the
skipped ones named (a skipped check with why); why the gate failed; a table of each check's
counts (gate.json's numbers); the clusters that fail the gate whatever their baseline
status (new, unchanged, expired), each with its reproducer and first differing token;
then the new / fixed / unchanged / allowlisted / expired sections (and the baseline's
clusters no check rechecked); skipped samples with why and what to do; the parts of
checks that ran nothing; the baseline's deltas with flagged throughput changes. Every
list is cut at a fixed length with a count of what was left out. Values go through
``verify.reports.md`` (code spans, escapes visible).
"""

from __future__ import annotations

from typing import Any

from verify.counts import STATES
from verify.reports.md import md_cell, md_code, md_text

FAILING_LISTED = 50  # failing clusters listed in full; the rest counted
SECTION_LISTED = 15  # clusters listed per status section
CHECKS_LISTED = 30
SKIPS_LISTED = 20
REPRO_CHARS = 60
SECTION_ORDER = ("new", "fixed", "unchanged", "allowlisted", "expired", "not_rechecked")
SECTION_NAMES = {"new": "New", "fixed": "Fixed since the baseline", "unchanged": "Unchanged (still failing)",
                 "allowlisted": "Allowlisted", "expired": "Expired (failing)", "not_rechecked": "Not rechecked"}


def difference_text(d: dict | None) -> str:
    if not d:
        return ""
    if d.get("error"):
        return f" — {md_code(d['error'], 60)}"
    if d.get("text"):
        return f" — {md_code(d['text'], 60)}"
    exp, act = d["expected"], d["actual"]
    return (f" — token {d['token_index']}: {md_code(exp['id'], 12)} {md_code(exp['piece'], 16)} → "
            f"{md_code(act['id'], 12)} {md_code(act['piece'], 16)}")


def _more(shown: int, total: int, what: str) -> list[str]:
    return [f"- … and {total - shown:,} more {what} (all in `report.html` and `gate.json`)"] if total > shown else []


def _reproducer(c: dict[str, Any]) -> str:
    s = c.get("session")
    if s and s.get("prefix") is not None:
        return f"prefix {md_code(s['prefix'], REPRO_CHARS)} + append {md_code(s['append'], REPRO_CHARS)}"
    minimised = "" if c.get("minimised") in (True, None) else " (not minimised)"
    return md_code(c["reproducer"], REPRO_CHARS) + minimised


def _cluster_line(n: int, c: dict[str, Any]) -> str:
    size = f"**{c['size']:,}×**" if isinstance(c["size"], int) else "**—×**"
    checks = f" · {', '.join(md_code(x, 30) for x in c['checks'][:3])}" if c["checks"] else ""
    return (f"{n}. **{md_text(c['status'].replace('_', ' '))}** {size} {md_code(c['engine'], 50)} {md_code(c['key'], 60)} — "
            f"{_reproducer(c)}{difference_text(c['difference'])}{checks}")


def _checks_line(gate: dict[str, Any]) -> list[str]:
    checks = gate["checks"]
    parts = []
    for status, n in gate["check_states"].items():
        named = [c for c in checks if c["status"] == status]
        if status == "pass":
            parts.append(f"{n} passed")
            continue
        word = {"fail": "failed", "error": "could not run"}.get(status, status)
        listed = ", ".join(md_code(c["name"], 30) + (f" ({md_code(c['note'], 120)})" if status == "skipped" else "")
                           for c in named[:8])
        parts.append(f"{n} {md_text(word)}: {listed}" + (f", {n - 8} more" if n > 8 else ""))
    lines = [f"**Checks**: {len(checks)}" + (" — " + "; ".join(parts) if parts else "") + "."]
    if gate["reasons"]:
        lines.append("**Why**: " + "; ".join(md_code(r, 80) for r in gate["reasons"][:6]))
    return lines


def _counts_table(gate: dict[str, Any]) -> list[str]:
    checks = gate["checks"]
    if not checks:
        return ["The gate ran no checks."]
    head = ["check", "status", "samples", *STATES, "clusters"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in checks[:CHECKS_LISTED]:
        numbers = " | ".join("—" if c["counts"].get(k) is None else f"{c['counts'][k]:,}" for k in ("samples", *STATES))
        clusters = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in c["clusters"].items()) or "—"
        status = md_text(c["status"]) + (" (part empty)" if c["empty"] else "")
        rows.append(f"| {md_cell(c['name'], 30)} | {status} | {numbers} | {clusters} |")
    if len(checks) > CHECKS_LISTED:
        rows.append(f"\n… and {len(checks) - CHECKS_LISTED} more checks in `report.html`.")
    return rows


def _failing(gate: dict[str, Any]) -> list[str]:
    failing = gate["failing"]
    if not failing:
        return ["**Failing clusters**: none."]
    counts = {}
    for c in failing:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    lines = [f"#### Failing clusters ({len(failing):,}: " + ", ".join(f"{n:,} {md_text(s)}" for s, n in counts.items())
             + ")", ""]
    lines += [_cluster_line(n, c) for n, c in enumerate(failing[:FAILING_LISTED], 1)]
    return lines + _more(min(len(failing), FAILING_LISTED), len(failing), "failing clusters")


def _status_sections(gate: dict[str, Any]) -> list[str]:
    by_status = gate["clusters_by_status"]
    lines = ["#### By status", ""]
    for status in SECTION_ORDER:
        rows = by_status.get(status, [])
        if status == "not_rechecked" and not rows:
            continue
        if status in ("fixed",) and gate["baseline"] is None:
            lines.append(f"- **{SECTION_NAMES[status]}**: no baseline (`verify gate --baseline LAST-NIGHT`).")
            continue
        if not rows:
            lines.append(f"- **{SECTION_NAMES[status]}** (0)")
            continue
        lines.append(f"- **{SECTION_NAMES[status]}** ({len(rows):,}):")
        for c in rows[:SECTION_LISTED]:
            extra = ""
            if c.get("rule"):
                extra = f" — {md_code(c['rule']['reason'], 80)}, expires {md_code(c['rule']['expires'], 12)}"
            elif status in ("fixed", "not_rechecked"):
                extra = f" — was {_reproducer(c)}"
            lines.append(f"  - {md_code(c['engine'], 50)} {md_code(c['key'], 60)}{extra}")
        if len(rows) > SECTION_LISTED:
            lines.append(f"  - … and {len(rows) - SECTION_LISTED:,} more")
    return lines


def _skips(gate: dict[str, Any]) -> list[str]:
    lines = []
    skips = gate["skips"]
    if skips:
        lines += [f"#### Skipped samples ({sum(s['count'] for s in skips):,})", ""]
        for s in skips[:SKIPS_LISTED]:
            remedy = f" — **what to do**: {md_text(s['remedy'], 300)}" if s["remedy"] else ""
            lines.append(f"- {md_code(s['check'], 30)}: {s['count']:,} skipped by {md_code(s['engine'], 50)}: "
                         f"{md_text(s['reason'], 300)}{remedy}")
        lines += _more(min(len(skips), SKIPS_LISTED), len(skips), "skip reasons")
    empty = gate["checks_empty"]
    if empty:
        lines += ["", "#### Ran nothing", ""] if lines else ["#### Ran nothing", ""]
        for c in empty:
            lines += [f"- {md_code(c['name'], 30)}: {md_code(e, 200)}" for e in c["empty"][:5]]
    return lines


def _baseline(gate: dict[str, Any]) -> list[str]:
    b = gate["baseline"]
    if b is None:
        return []
    deltas = ", ".join(f"{row['count']:,} {row['status'].replace('_', ' ')}" for row in b["deltas"])
    lines = [f"**Baseline** {md_code(b['out'], 80)}: {deltas}."]
    flagged = [r for r in b["throughput"] if r["flag"]]
    if flagged:
        lines.append("Throughput flagged: " + "; ".join(
            f"{md_code(r['check'], 30)} {r['unit']} {r['before']} → {r['after']} ({r['change']}, {r['flag']})"
            for r in flagged[:8]) + (f"; {len(flagged) - 8} more" if len(flagged) > 8 else ""))
    return lines


def gate_sections(gate: dict[str, Any]) -> list[list[str]]:
    candidates = ", ".join(md_code(c, 50) for c in gate["candidates"][:6]) or "—"
    header = [f"### verify gate {md_code(gate['suite'], 60)}: **{gate['verdict']}**", "",
              f"Reference {md_code(gate['reference'], 60)}; candidates {candidates}.", *_checks_line(gate), ""]
    return [header, _counts_table(gate) + [""], _failing(gate) + [""], _status_sections(gate) + [""],
            (_skips(gate) + [""]) if gate["skips"] or gate["checks_empty"] else [], (_baseline(gate) + [""])
            if gate["baseline"] else []]
