"""OUT/unicode.json and OUT/unicode.md: the Unicode-table sweep's report.

``unicode.json`` holds every ``SweepResult`` field per candidate plus the probe
contexts and the Unicode data used; ``unicode.md`` is the page a person reads:
per candidate the mismatch count, the attributed Unicode version, the
whitespace-definition mismatches and a table of the first ``MD_ROWS`` ranges
(``templates/unicode.md.j2``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from verify import atomic
from verify.reports.md_templates import render
from verify.rundir.layout import RunFolder
from verify.sweep_result import SweepResult
from verify.unicode_tables import tables as ud

MD_ROWS = 50


def _fmt_cp(cp: int) -> str:
    return f"U+{cp:04X}"


def _span(a: int, b: int) -> str:
    return _fmt_cp(a) if a == b else f"{_fmt_cp(a)}..{_fmt_cp(b)}"


def _size(ranges: list[list[int]]) -> int:
    return sum(b - a + 1 for a, b in ranges)


def _range_row(a: int, b: int, result: SweepResult, ref_version: str | None) -> dict:
    v = ref_version or ud.newest()
    cats = sorted({ud.category(cp, v) for cp in range(a, min(b, a + 4096) + 1)})
    first = ud.label(a)
    oldest = ud.versions()[0]
    assigned = sorted({ud.assigned_in(cp) for cp in (a, b)} - {None}, key=ud.version_key)
    names_in_order = [c["name"] for c in result.probe_description.get("contexts", [])]
    order = {name: i for i, name in enumerate(names_in_order)}
    ctxs = sorted({c for cp in range(a, min(b, a + 256) + 1) for c in result.contexts_of.get(cp, [])},
                  key=lambda c: order.get(c, 99))
    return {"span": _span(a, b), "n": b - a + 1, "categories": "/".join(cats),
            "names": first if a == b else f"{first} .. {ud.label(b)}",
            "assigned": ", ".join(f"<={v}" if v == oldest else v for v in assigned) or "-", "contexts": ctxs}


def _candidate(r: SweepResult) -> dict:
    """What the page says of one candidate; which attribution line applies."""
    n = r.normalization
    by_normalization = bool(n) and r.version_basis.startswith(n["name"])
    return {"result": r, "name": str(r.candidate), "scope": f"{_fmt_cp(r.scope[0])}..{_fmt_cp(r.scope[1])}",
            "whitespace_only": r.count == _size(r.whitespace), "by_normalization": by_normalization,
            "rest_by_normalization": bool(n) and not by_normalization,
            "tie": [v for v in r.tied_versions if v != r.unicode_version],
            "whitespace": [_span(a, b) for a, b in r.whitespace], "unexplained": _size(r.unexplained),
            "pack_first": _fmt_cp(r.pack_only[0][0]) if r.pack_only else None,
            "rows": [_range_row(a, b, r, r.reference_unicode_version) for a, b in r.mismatched[:MD_ROWS]],
            "more_rows": max(len(r.mismatched) - MD_ROWS, 0)}


def write_unicode_report(results: SweepResult | Sequence[SweepResult], out_dir) -> tuple[Path, Path]:
    """Write OUT/unicode.json and OUT/unicode.md; return their paths."""
    if isinstance(results, SweepResult):
        results = [results]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reference = results[0].reference if results else None
    doc = {
        "reference": reference,
        "unicode_data": {"versions": ud.versions(), "source": ud.source()},
        "probes": results[0].probe_description if results else {},
        "candidates": {r.candidate: {k: v for k, v in r.to_json().items() if k not in ("candidate", "reference")}
                       for r in results},
    }
    json_path = RunFolder(out).unicode
    atomic.write_json(json_path, doc, indent=1, ensure_ascii=True)

    text = render("unicode.md.j2", reference=str(reference), candidates=[_candidate(r) for r in results],
                  versions=ud.versions())
    md_path = RunFolder(out).unicode_summary
    atomic.write_text(md_path, text)
    return json_path, md_path
