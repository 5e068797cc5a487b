"""OUT/unicode.json and OUT/unicode.md: the Unicode-table sweep's report.

``unicode.json`` holds every ``SweepResult`` field per candidate plus the probe
contexts and the Unicode data used; ``unicode.md`` is the page a person reads:
per candidate the mismatch count, the attributed Unicode version, the
whitespace-definition mismatches and a table of the first ``MD_ROWS`` ranges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from verify.unicode_tables import tables as ud
from verify.sweep_result import SweepResult
from verify import atomic

MD_ROWS = 50


def _fmt_cp(cp: int) -> str:
    return f"U+{cp:04X}"


def _range_row(a: int, b: int, result: SweepResult, ref_version: str | None) -> str:
    v = ref_version or ud.newest()
    cats = sorted({ud.category(cp, v) for cp in range(a, min(b, a + 4096) + 1)})
    span = _fmt_cp(a) if a == b else f"{_fmt_cp(a)}..{_fmt_cp(b)}"
    first = ud.label(a)
    names = first if a == b else f"{first} .. {ud.label(b)}"
    oldest = ud.versions()[0]
    assigned = sorted({ud.assigned_in(cp) for cp in (a, b)} - {None}, key=ud.version_key)
    assigned_s = ", ".join(f"<={v}" if v == oldest else v for v in assigned) or "-"
    names_in_order = [c["name"] for c in result.probe_description.get("contexts", [])]
    order = {name: i for i, name in enumerate(names_in_order)}
    ctxs = sorted({c for cp in range(a, min(b, a + 256) + 1) for c in result.contexts_of.get(cp, [])},
                  key=lambda c: order.get(c, 99))
    ctx_s = ", ".join(ctxs)
    names = names.replace("|", "\\|")
    return f"| {span} | {b - a + 1} | {'/'.join(cats)} | {names} | {assigned_s} | {ctx_s} |"


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
    json_path = out / "unicode.json"
    atomic.write_json(json_path, doc, indent=1, ensure_ascii=True)

    lines = ["# Unicode-table sweep", "", f"Reference: `{reference}`", ""]
    for r in results:
        lines += [f"## `{r.candidate}`", ""]
        lines.append(f"- code points swept: {r.code_points:,} ({_fmt_cp(r.scope[0])}..{_fmt_cp(r.scope[1])}, "
                     f"surrogates excluded), probes: {r.probes:,}, {r.seconds:.1f} s")
        lines.append(f"- mismatching code points: **{r.count:,}** in {len(r.mismatched):,} ranges")
        if r.count:
            if r.count == sum(b - a + 1 for a, b in r.whitespace):
                lines.append("- Unicode tables: not implicated (every mismatch is a whitespace-like code point)")
            elif r.normalization and r.version_basis.startswith(r.normalization["name"]):
                n = r.normalization
                lines.append(f"- normalization: candidate **{n['name']}** vs reference {n['form']} data of Unicode "
                             f"{n['reference_unicode_version']} ({n['basis']}); explains {n['explained']:,} of the "
                             f"{n['of']:,} mismatches that are not whitespace-like -- not the character tables")
            elif r.unicode_version:
                others = [v for v in r.tied_versions if v != r.unicode_version]
                tie = f" (equally well: {', '.join(others)})" if others else ""
                lines.append(f"- Unicode tables: candidate **{r.unicode_version}**{tie} vs reference "
                             f"{r.reference_unicode_version} ({r.version_basis}); explains "
                             f"{r.explained:.1%} of the mismatches")
            else:
                lines.append(f"- Unicode tables: no version explains the mismatches ({r.version_basis})")
            if r.normalization and not r.version_basis.startswith(r.normalization["name"]):
                n = r.normalization
                lines.append(f"- normalization: the rest, {n['explained']:,} code points, by {n['name']}")
            ws = ", ".join(_fmt_cp(a) if a == b else f"{_fmt_cp(a)}..{_fmt_cp(b)}" for a, b in r.whitespace)
            lines.append(f"- whitespace-definition mismatches: {ws or 'none'}")
            if r.unexplained:
                lines.append(f"- unexplained: {sum(b - a + 1 for a, b in r.unexplained):,} code points "
                             f"in {len(r.unexplained)} ranges")
            if r.errors:
                lines.append(f"- an engine failed (raised, crashed or hung) on: {len(r.errors)} ranges")
            lines.append("- differing probe contexts: "
                         + ", ".join(f"{k} ({v:,})" for k, v in r.by_context.items()))
        if r.pack_only:
            lines.append(f"- packs that differed with no single probe differing: {len(r.pack_only)} ranges "
                         f"(first {_fmt_cp(r.pack_only[0][0])})")
        if r.mismatched:
            lines += ["", "| range | n | category | name | assigned in | contexts |",
                      "|---|---|---|---|---|---|"]
            for a, b in r.mismatched[:MD_ROWS]:
                lines.append(_range_row(a, b, r, r.reference_unicode_version))
            if len(r.mismatched) > MD_ROWS:
                lines.append(f"| ... | {len(r.mismatched) - MD_ROWS} more ranges in unicode.json | | | | |")
        lines.append("")
    lines += ["Categories are the reference's Unicode version when known (else the newest known); "
              "\"assigned in\" is the first known version assigning the first/last code point "
              f"(known: {', '.join(ud.versions())}).", ""]
    md_path = out / "unicode.md"
    atomic.write_text(md_path, "\n".join(lines))
    return json_path, md_path
