"""``OUT/gate.json`` (schema ``verify.gate/1``, written by ``verify gate``) in the shape the
reports show: every optional key filled, every string display-ready.

    load_gate(out) -> dict | None        None when OUT holds no gate.json

The file is read tolerantly: a missing key shows as a dash, a value of an
unexpected type as its JSON text; only a file that is not JSON at all is an error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from verify.errors import UsageError
from verify.reports.views import MISSING, REPRODUCER_CHARS, difference_view, first_difference, safe_link
from verify.reports.visible import visible, visible_input

GATE_FILE = "gate.json"
CLUSTER_STATUS_ORDER = ("new", "expired", "allowlisted", "unchanged")
FAILING_CHECK = ("fail", "error")


def _text(value: Any, limit: int = 200) -> str:
    if value is None or value == "":
        return MISSING
    if isinstance(value, str):
        return visible(value, limit)
    return visible(json.dumps(value, ensure_ascii=False, sort_keys=True), limit)


def _counts(value: Any) -> str:
    """A check's counts in one short line: ``samples 300, diverged 2``; zeros left out."""
    if isinstance(value, dict):
        parts = [f"{k} {v}" for k, v in value.items() if isinstance(v, (int, float)) and v and not isinstance(v, bool)]
        return _text(", ".join(parts) or "0")
    return _text(value)


def reproducer_text(value: Any, limit: int = REPRODUCER_CHARS) -> str:
    """A reproducer given as text, as segments ``[[text, allow_special], ...]`` or as a
    ``{"input": segments}`` block, on one visible line."""
    if isinstance(value, dict) and "input" in value:
        value = value["input"]
    if isinstance(value, str):
        return visible(value, limit)
    if isinstance(value, list) and all(isinstance(s, (list, tuple)) and len(s) == 2 and isinstance(s[0], str)
                                       for s in value):
        return visible_input([list(s) for s in value], limit) or '""'
    return _text(value, limit)


def _difference(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        try:
            located = first_difference(value)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            located = None
        if located is not None:
            return located
    return difference_view(text=_text(value))


def _status(value: Any) -> str:
    return value.strip().lower() if isinstance(value, str) and value.strip() else "unknown"


def _rows(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    rows = doc.get(name)
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _rate(value: Any) -> str:
    """A check's throughput (``{"samples_per_s": ..}``) in one short line."""
    if isinstance(value, dict):
        parts = [f"{v:,.1f} {k.replace('_per_s', '')}/s" for k, v in value.items()
                 if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return ", ".join(parts) or MISSING
    return _text(value)


def _baseline_value(value: Any) -> str:
    if isinstance(value, list):
        return f"{len(value)}" + (f": {_text(value[:5], 280)}" if value else "")
    return _text(value, 300)


def _cluster(c: dict[str, Any]) -> dict[str, Any]:
    if c.get("reproducer") is not None:
        reproducer = reproducer_text(c["reproducer"])
    elif c.get("input_file"):
        reproducer = f"(input in {visible(str(c['input_file']), 120)})"
    else:
        reproducer = MISSING
    minimised = c.get("minimized")
    return {"key": _text(c.get("key")), "engine": _text(c.get("engine")), "reference": _text(c.get("reference")),
            "status": _status(c.get("status")), "size": c.get("size") if isinstance(c.get("size"), int) else MISSING,
            "reproducer": reproducer, "minimised": minimised if isinstance(minimised, bool) else None,
            "difference": _difference(c.get("first_difference"))}


def check_report_link(out: Path | None, check_out: Any) -> str | None:
    """``checks/NAME/report.html`` when a check's folder (relative, inside OUT) holds one."""
    if out is None or not isinstance(check_out, str) or not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", check_out) \
            or ".." in check_out.split("/"):
        return None
    return f"{check_out}/report.html" if (Path(out) / check_out / "report.html").is_file() else None


def normalise_gate(doc: dict[str, Any], out: Path | None = None) -> dict[str, Any]:
    checks = [{"name": _text(c.get("name")), "kind": _text(c.get("kind")), "status": _status(c.get("status")),
               "out": _text(c.get("out")), "report": check_report_link(out, c.get("out")),
               "counts": _counts(c.get("counts")), "throughput": _rate(c.get("throughput")),
               "seconds": c.get("seconds") if isinstance(c.get("seconds"), (int, float)) else MISSING,
               "note": _text(c.get("note"), 300)} for c in _rows(doc, "checks")]
    clusters = [_cluster(c) for c in _rows(doc, "clusters")]
    rank = {s: i for i, s in enumerate(CLUSTER_STATUS_ORDER)}
    clusters.sort(key=lambda c: (rank.get(c["status"], len(rank)), -(c["size"] if isinstance(c["size"], int) else 0)))
    by_status: dict[str, list[dict[str, Any]]] = {}
    for c in clusters:
        by_status.setdefault(c["status"], []).append(c)
    allowlist = [{"key": _text(a.get("key")), "status": _status(a.get("status")), "reason": _text(a.get("reason"), 300),
                  "link": safe_link(a.get("link")), "link_text": _text(a.get("link")), "expires": _text(a.get("expires"))}
                 for a in _rows(doc, "allowlist")]
    baseline = doc.get("baseline")
    baseline_rows = [(visible(str(k), 80), _baseline_value(v)) for k, v in baseline.items()] \
        if isinstance(baseline, dict) else ([] if baseline is None else [("baseline", _text(baseline, 300))])
    verdict = doc.get("verdict")
    reasons = doc.get("reasons")
    reasons = [_text(r, 200) for r in reasons] if isinstance(reasons, list) else [] if reasons is None else [_text(reasons)]
    return {"suite": _text(doc.get("suite")), "schema": _text(doc.get("schema")), "reasons": reasons,
            "verdict": verdict.upper() if isinstance(verdict, str) and verdict else "UNKNOWN",
            "checks": checks, "checks_failed": sum(1 for c in checks if c["status"] in FAILING_CHECK),
            "clusters": clusters, "clusters_by_status": by_status, "allowlist": allowlist, "baseline": baseline_rows}


def load_gate(out: Path) -> dict[str, Any] | None:
    path = Path(out) / GATE_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not a verify.gate/1 object")
    return normalise_gate(doc, out)
