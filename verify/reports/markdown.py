"""OUT/summary.md: the run in one page (verdict, counts, first findings)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAX_LISTED = 50


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text.replace("|", "\\|").replace("\n", "\\n").replace("\r", "\\r")


def render_summary(manifest: dict[str, Any], findings: list[dict[str, Any]]) -> str:
    counts = manifest["counts"]
    ok = counts["samples"] > 0 and counts["verified"] == counts["samples"]
    lines = [
        f"# verify run: {'PASS' if ok else 'FAIL'}",
        "",
        f"- reference: `{manifest['reference']['spec']}` ({manifest['reference'].get('package')} "
        f"{manifest['reference'].get('package_version')}, vocab sha256 `{(manifest['reference'].get('vocab_sha256') or '-')[:16]}`)",
    ]
    for cand in manifest["candidates"]:
        lines.append(f"- candidate: `{cand['spec']}` ({cand.get('package')} {cand.get('package_version')}, "
                     f"fingerprint `{cand.get('fingerprint')}`)")
    lines.append(f"- sources: {', '.join(s['name'] for s in manifest['sources'])}")
    lines.append(f"- {manifest['started']} .. {manifest['finished']} ({manifest['seconds']} s)"
                 + (" — INTERRUPTED, counts are partial" if manifest.get("interrupted") else ""))
    for spec, note in (manifest.get("engine_notes") or {}).items():
        for warning in note.get("warnings", []):
            lines.append(f"- **warning** `{spec}`: {warning}")
        if "not_loaded" in note:
            lines.append(f"- **not loaded** `{spec}`: {note['not_loaded']}")
    lines += ["", "| samples | chars | tokens | verified | diverged | error | crash | timeout | skipped |",
              "|---|---|---|---|---|---|---|---|---|",
              "| " + " | ".join(str(counts[k]) for k in ("samples", "chars", "tokens", "verified", "diverged",
                                                          "error", "crash", "timeout", "skipped")) + " |", ""]
    lines += ["## Per engine", "", "| engine | verified | diverged | error | crash | timeout | skipped |",
              "|---|---|---|---|---|---|---|"]
    for spec, tally in counts["per_engine"].items():
        lines.append(f"| `{spec}` | " + " | ".join(str(tally[k]) for k in
                                                  ("verified", "diverged", "error", "crash", "timeout", "skipped")) + " |")
    lines.append("")
    if findings:
        lines += [f"## Findings ({counts['findings']}; first {min(len(findings), MAX_LISTED)} listed, "
                  "all in divergences.jsonl)", "",
                  "| kind | engine | sample | token | byte | context | expected | actual |",
                  "|---|---|---|---|---|---|---|---|"]
        for f in findings[:MAX_LISTED]:
            ctx = f.get("context") or {}
            context = f"{ctx.get('before', '')[-20:]}⟦{ctx.get('after', '')[:12]}" if ctx else ""
            exp = f.get("expected", {}).get("pieces") or f.get("expected", {}).get("ids") or ""
            act = f.get("actual", {}).get("pieces") or f.get("actual", {}).get("ids") or f.get("error", {}).get("message", "")
            lines.append(f"| {f['kind']} | `{f['engine']}` | `{_cell(f['sample_id'])}` | {f.get('token_index', '')} | "
                         f"{f.get('byte_offset', '')} | {_cell(context)} | {_cell(exp)} | {_cell(act)} |")
        lines.append("")
    return "\n".join(lines)


def write_summary(out_dir: Path, manifest: dict[str, Any], findings: list[dict[str, Any]]) -> Path:
    path = out_dir / "summary.md"
    path.write_text(render_summary(manifest, findings), encoding="utf-8")
    return path
