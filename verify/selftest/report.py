"""``OUT/selftest.json`` and ``OUT/selftest.md``: per fault kind what was injected, what the
harness found, and what that means for a shadow sample (``verify.selftest.shadow_model``); the
Markdown's layout is ``verify/reports/templates/selftest.md.j2``."""

from __future__ import annotations

from pathlib import Path

from verify.selftest.shadow_model import PAPER
from verify import atomic
from verify.reports.md_templates import render

KIND_NOTES = {
    "substitute": "one token replaced by another",
    "delete": "one token dropped",
    "insert": "one token inserted",
    "boundary": "two adjacent tokens re-split at another byte boundary (same bytes, same count)",
    "unicode": "the reference's pattern with one class from another Unicode table",
    "history": "a session goes wrong once its transcript passes N characters",
}


def write_reports(out: Path, result: dict) -> None:
    atomic.write_json(out / "selftest.json", result)
    atomic.write_text(out / "selftest.md", markdown(result))


def markdown(result: dict) -> str:
    first = result["kinds"][0]["shadow"] if result["kinds"] else {"sample_rate": 0.05, "target": 0.9}
    return render("selftest.md.j2", result=result, first=first, pooled=result.get("pooled"), paper=PAPER,
                  notes=KIND_NOTES)
