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
list is cut at a fixed length with a count of what was left out. The layout is
``templates/ci_gate.md.j2``, one macro per section.
"""

from __future__ import annotations

from typing import Any

from verify.counts import STATES
from verify.reports.md_templates import section_lines

TEMPLATE = "ci_gate.md.j2"
FAILING_LISTED = 50  # failing clusters listed in full; the rest counted
SECTION_LISTED = 15  # clusters listed per status section
CHECKS_LISTED = 30
SKIPS_LISTED = 20
NAMED_CHECKS = 8  # checks named per status on the checks line
SECTION_ORDER = ("new", "fixed", "unchanged", "allowlisted", "expired", "not_rechecked")


def _check_states(gate: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"status": status, "n": n, "named": [c for c in gate["checks"] if c["status"] == status][:NAMED_CHECKS]}
            for status, n in gate["check_states"].items()]


def _check_rows(gate: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": c["name"], "status": c["status"], "empty": c["empty"],
             "numbers": ["—" if c["counts"].get(k) is None else c["counts"][k] for k in ("samples", *STATES)],
             "clusters": [f"{n} {s.replace('_', ' ')}" for s, n in c["clusters"].items()]}
            for c in gate["checks"][:CHECKS_LISTED]]


def _failing_by_status(failing: list[dict[str, Any]]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for c in failing:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    return list(counts.items())


def gate_sections(gate: dict[str, Any]) -> list[list[str]]:
    by_status = gate["clusters_by_status"]
    sections = [(s, by_status.get(s, [])) for s in SECTION_ORDER if s != "not_rechecked" or by_status.get(s)]
    return [
        section_lines(TEMPLATE, "header", gate, _check_states(gate)),
        section_lines(TEMPLATE, "counts_table", _check_rows(gate), STATES, len(gate["checks"]), CHECKS_LISTED),
        section_lines(TEMPLATE, "failing", gate["failing"], _failing_by_status(gate["failing"]), FAILING_LISTED),
        section_lines(TEMPLATE, "status_sections", sections, gate["baseline"] is None, SECTION_LISTED),
        section_lines(TEMPLATE, "skips", gate["skips"], gate["checks_empty"], SKIPS_LISTED),
        section_lines(TEMPLATE, "baseline", gate["baseline"]),
    ]
