"""``OUT/gate.json`` (schema ``verify.gate/1``, written by ``verify gate``) in the shape the
reports show: every optional key filled, every string display-ready.

    load_gate(out) -> dict | None        None when OUT holds no gate.json

What the gate page (``templates/gate.html.j2``) and the PR comment (``ci_markdown``) show:
the gate's own header (suite, verdict, why, engines, when); each check with its counts,
status, skips (engine, reason, remedy) and the parts that ran nothing; the clusters that
fail the gate whatever their baseline status, then each status (new, unchanged, expired,
allowlisted, and from the baseline fixed and not rechecked) with reproducers; the baseline's
deltas as tables, a throughput change past ``THROUGHPUT_FLAG`` flagged; and only links to
files that exist in OUT.

The file is read tolerantly: a missing key shows as a dash, a value of an unexpected
type as its JSON text; only a file that is not JSON at all is an error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from verify.counts import STATES
from verify.errors import UsageError
from verify.reports.views import (MISSING, REPRODUCER_CHARS, THROUGHPUT_FLAG, difference_view, first_difference,
                                  safe_link, session_view, shown_input)
from verify.reports.visible import visible
from verify.rundir.layout import CLUSTERS_FILE, GATE_CHECK_FILE, MANIFEST_FILE, REPORT_FILE, SUMMARY_FILE

GATE_FILE = "gate.json"
FAILING_STATUS = ("new", "unchanged", "expired")
CLUSTER_STATUS_ORDER = ("new", "unchanged", "expired", "allowlisted")
BASELINE_STATUS = ("fixed", "not_rechecked")
FAILING_CHECK = ("fail", "error")
COUNT_KEYS = ("samples", *STATES, "bad_records", "findings")
GATE_FILES = ("gate.json", "junit.xml", "suite.json")
CHECK_FILES = (REPORT_FILE, SUMMARY_FILE, MANIFEST_FILE, CLUSTERS_FILE, GATE_CHECK_FILE)
SECTION_TITLES = {"new": "New", "unchanged": "Unchanged (in the baseline too; still failing)",
                  "expired": "Expired (only an expired allowlist row accepts them)",
                  "allowlisted": "Allowlisted", "fixed": "Fixed since the baseline",
                  "not_rechecked": "Not rechecked (in the baseline; no check that found them ran tonight)"}


def _text(value: Any, limit: int = 200) -> str:
    if value is None or value == "":
        return MISSING
    if isinstance(value, str):
        return visible(value, limit)
    return visible(json.dumps(value, ensure_ascii=False, sort_keys=True), limit)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _counts_line(value: Any) -> str:
    """A check's counts in one short line: ``samples 300, diverged 2``; zeros left out."""
    if isinstance(value, dict):
        parts = [f"{k} {v:,}" for k, v in value.items() if isinstance(v, (int, float)) and v and not isinstance(v, bool)]
        return _text(", ".join(parts) or "0")
    return _text(value)


def reproducer_text(value: Any, limit: int = REPRODUCER_CHARS) -> str:
    """A reproducer given as text, as segments ``[[text, allow_special], ...]`` or as a
    ``{"input": segments}`` block, on one visible line (``verify.reports.views.shown_input``)."""
    if isinstance(value, dict) and "input" in value:
        value = value["input"]
    if isinstance(value, str):
        return shown_input([[value, False]], limit)
    return shown_input(value, limit)


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


def _rows(doc: Any, name: str) -> list[dict[str, Any]]:
    rows = doc.get(name) if isinstance(doc, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def rate_number(v: float) -> str:
    """Three significant figures at most, no exponent: ``1,234``, ``12.3``, ``0.0123``."""
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 1 else f"{v:.3g}" if v else "0"


def _rate(value: Any) -> str:
    """A check's throughput (``{"samples_per_s": ..}``) in one short line."""
    if isinstance(value, dict):
        parts = [f"{rate_number(v)} {k.replace('_per_s', '').replace('mb', 'MB')}/s" for k, v in value.items()
                 if k.endswith("_per_s") and isinstance(v, (int, float)) and not isinstance(v, bool)]
        return ", ".join(parts) or MISSING
    return _text(value)


def _other_notes(c: dict[str, Any]) -> str:
    """The check's note less what the page shows on its own (its problems, the parts that ran nothing)."""
    note = c.get("note") if isinstance(c.get("note"), str) else ""
    for part in [*(c.get("problems") or []), *(f"ran nothing: {e}" for e in c.get("empty") or [])]:
        if isinstance(part, str) and part:
            note = note.replace(part, "", 1)
    return re.sub(r"^[;\s]+|[;\s]+$", "", re.sub(r"(;\s*){2,}", "; ", note))


def relative(rel: Any) -> str | None:
    """``rel`` when it is a plain relative path that stays inside OUT (no ``..``, no scheme), else None."""
    if not isinstance(rel, str) or not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", rel) \
            or ".." in rel.split("/"):
        return None
    return rel


def inside(out: Path | None, rel: Any) -> str | None:
    """``rel`` when it names a file inside OUT that exists (a relative path, no ``..``), else None."""
    rel = relative(rel)
    return rel if out is not None and rel is not None and (Path(out) / rel).is_file() else None


def check_report_link(out: Path | None, check_out: Any) -> str | None:
    """``checks/NAME/report.html`` when a check's folder (relative, inside OUT) holds one."""
    return inside(out, f"{check_out}/{REPORT_FILE}") if isinstance(check_out, str) else None


def _cluster(c: dict[str, Any], out: Path | None, status: str | None = None) -> dict[str, Any]:
    if c.get("reproducer") is not None:
        reproducer = reproducer_text(c["reproducer"])
    elif c.get("input_file"):
        reproducer = f"(input in {visible(str(c['input_file']), 120)})"
    elif c.get("note"):
        reproducer = f"(no input kept: {visible(str(c['note']), 160)})"
    else:
        reproducer = MISSING
    minimized = c.get("minimized")
    rule = c.get("allowlist") if isinstance(c.get("allowlist"), dict) else None
    checks = [str(n) for n in c.get("checks") or [] if isinstance(n, (str, int))]
    sizes = c.get("sizes") if isinstance(c.get("sizes"), dict) else {}
    return {"sizes": {visible(str(k), 60): v for k, v in sizes.items() if _int(v) is not None},
            "accept": accept_row(c), "key": _text(c.get("key")), "engine": _text(c.get("engine")),
            "reference": _text(c.get("reference")),
            "status": status or _status(c.get("status")), "size": _int(c.get("size")) if _int(c.get("size")) is not None
            else MISSING, "reproducer": reproducer, "minimised": minimized if isinstance(minimized, bool) else None,
            "difference": _difference(c.get("first_difference")), "checks": [visible(n, 60) for n in checks],
            "session": session_view(c.get("session")), "sample_id": _text(c.get("sample_id"), 80),
            "source": inside(out, c.get("source")), "input_link": inside(out, c.get("input_file")),
            "rule": None if rule is None else {"reason": _text(rule.get("reason"), 200), "link": safe_link(rule.get("link")),
                                               "link_text": _text(rule.get("link")), "expires": _text(rule.get("expires"))}}


def accept_row(c: dict[str, Any]) -> list[str]:
    """The allowlist row that accepts this cluster, ready to paste (``verify.allowlist``): the
    engine as an anchored regex, the exact key, and the keys it still needs filled in."""
    engine, key = c.get("engine"), c.get("key")
    if not isinstance(key, str):
        return []
    lines = ["[[allow]]"]
    if isinstance(engine, str) and engine:
        lines.append(f"engine = {_toml_string('^' + re.escape(engine) + '$')}")
    lines += [f"key = {_toml_string(key)}", 'reason = "why it is accepted"', 'link = "https://..."',
              "expires = 2099-12-31"]
    return lines  # shown through the page's finalize: invisible characters as escapes


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON's string escapes are TOML's basic-string escapes


def _skips(value: Any) -> list[dict[str, Any]]:
    return [{"engine": _text(s.get("engine"), 80), "reason": _text(s.get("reason"), 300),
             "count": _int(s.get("count")) or 0, "remedy": visible(str(s["remedy"]), 300) if s.get("remedy") else ""}
            for s in (value if isinstance(value, list) else []) if isinstance(s, dict)]


def _check(c: dict[str, Any], out: Path | None, clusters: list[dict[str, Any]]) -> dict[str, Any]:
    counts = c.get("counts") if isinstance(c.get("counts"), dict) else {}
    name = c.get("name")
    mine: dict[str, int] = {}
    for cluster in clusters:
        if name in (cluster.get("checks") or []):
            mine[_status(cluster.get("status"))] = mine.get(_status(cluster.get("status")), 0) + 1
    folder = relative(c.get("out"))  # read for links and plots: never outside OUT
    return {"name": _text(name), "kind": _text(c.get("kind")), "status": _status(c.get("status")),
            "out": _text(c.get("out")), "report": check_report_link(out, folder),
            "files": [f for f in (inside(out, f"{folder}/{n}") for n in CHECK_FILES) if f] if folder else [],
            "counts": {k: _int(counts.get(k)) for k in COUNT_KEYS}, "counts_line": _counts_line(c.get("counts")),
            "has_counts": bool(counts), "throughput": _rate(c.get("throughput")),
            "seconds": c.get("seconds") if isinstance(c.get("seconds"), (int, float)) else MISSING,
            "note": _text(c.get("note"), 600), "other_notes": visible(_other_notes(c), 600), "problems": [_text(p, 400) for p in c.get("problems") or []
                                                            if isinstance(c.get("problems"), list)],
            "skips": _skips(c.get("skips")), "empty": [_text(e, 300) for e in c.get("empty") or []
                                                        if isinstance(c.get("empty"), list)],
            "clusters": {s: mine[s] for s in (*CLUSTER_STATUS_ORDER, *sorted(set(mine) - set(CLUSTER_STATUS_ORDER)))
                         if s in mine}, "folder": folder}


def _percent(change: Any) -> str:
    return f"{change * 100:+.1f}%" if isinstance(change, (int, float)) and not isinstance(change, bool) else MISSING


def _number(value: Any) -> str:
    return rate_number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else MISSING


def _baseline(doc: dict[str, Any], checks: list[dict[str, Any]], out: Path | None) -> dict[str, Any] | None:
    baseline = doc.get("baseline")
    if baseline is None:
        return None
    if not isinstance(baseline, dict):
        return {"out": _text(baseline, 300), "suite": MISSING, "finished": MISSING, "deltas": [], "throughput": [],
                "flagged": 0}
    deltas = [{"status": name, "count": len(_rows(baseline, name)),
               "first_keys": [_text(r.get("key"), 120) for r in _rows(baseline, name)[:10]]}
              for name in ("new", "unchanged", "fixed", "not_rechecked")]
    empty = {c["name"]: c for c in checks}
    rows = []
    for check, units in (baseline.get("throughput") or {}).items() if isinstance(baseline.get("throughput"), dict) else []:
        for unit, v in (units or {}).items() if isinstance(units, dict) else []:
            if not isinstance(v, dict):
                continue
            change = v.get("change")
            flag = ""
            if isinstance(change, (int, float)) and abs(change) > THROUGHPUT_FLAG:
                flag = "slower" if change < 0 else "faster"
                row_check = empty.get(visible(str(check), 200))
                if row_check and (row_check["empty"] or not row_check["counts"].get("samples")):
                    flag += ": it ran less (see the check's note)"
            elif v.get("before") and v.get("after") is None:
                flag = "not measured tonight"
            rows.append({"check": visible(str(check), 80), "unit": unit.replace("_per_s", "/s").replace("_", " "),
                         "before": _number(v.get("before")), "after": _number(v.get("after")),
                         "change": _percent(change), "flag": flag})
    return {"out": _text(baseline.get("out"), 300), "suite": _text(baseline.get("suite")),
            "finished": _text(baseline.get("finished")), "deltas": deltas, "throughput": rows,
            "flagged": sum(1 for r in rows if r["flag"])}


def normalise_gate(doc: dict[str, Any], out: Path | None = None) -> dict[str, Any]:
    raw_clusters = _rows(doc, "clusters")
    checks = [_check(c, out, raw_clusters) for c in _rows(doc, "checks")]
    clusters = [_cluster(c, out) for c in raw_clusters]
    clusters.sort(key=lambda c: -(c["size"] if isinstance(c["size"], int) else 0))
    by_status: dict[str, list[dict[str, Any]]] = {s: [] for s in CLUSTER_STATUS_ORDER}
    for c in clusters:
        by_status.setdefault(c["status"], []).append(c)
    baseline = doc.get("baseline") if isinstance(doc.get("baseline"), dict) else {}
    for name in BASELINE_STATUS:
        by_status[name] = [_cluster(c, out, name) for c in _rows(baseline, name)]
    by_status = {s: rows for s, rows in by_status.items() if rows}
    allowlist = [{"key": _text(a.get("key")), "status": _status(a.get("status")), "reason": _text(a.get("reason"), 300),
                  "link": safe_link(a.get("link")), "link_text": _text(a.get("link")), "expires": _text(a.get("expires")),
                  "matched": len(a.get("matched") or []) if isinstance(a.get("matched"), list) else 0}
                 for a in _rows(doc, "allowlist")]
    verdict = doc.get("verdict")
    reasons = doc.get("reasons")
    reasons = [_text(r, 200) for r in reasons] if isinstance(reasons, list) else [] if reasons is None else [_text(reasons)]
    candidates = doc.get("candidates") if isinstance(doc.get("candidates"), list) else []
    skipped = [c for c in checks if c["status"] == "skipped"]
    return {"suite": _text(doc.get("suite")), "schema": _text(doc.get("schema")), "reasons": reasons,
            "verdict": verdict.upper() if isinstance(verdict, str) and verdict else "UNKNOWN",
            "reference": _text(doc.get("reference")), "candidates": [_text(c, 120) for c in candidates],
            "started": _text(doc.get("started")), "finished": _text(doc.get("finished")),
            "seconds": doc.get("seconds") if isinstance(doc.get("seconds"), (int, float)) else MISSING,
            "command": _text(" ".join(map(str, doc["command"])) if isinstance(doc.get("command"), list)
                             else doc.get("command"), 600),
            "exit_code": _int(doc.get("exit_code")),
            "checks": checks, "checks_failed": sum(1 for c in checks if c["status"] in FAILING_CHECK),
            "checks_skipped": skipped, "checks_empty": [c for c in checks if c["empty"]],
            "check_states": {s: sum(1 for c in checks if c["status"] == s) for s in
                             dict.fromkeys(c["status"] for c in checks)},
            "clusters": clusters, "failing": [c for c in clusters if c["status"] in FAILING_STATUS],
            "clusters_by_status": by_status, "allowlist": allowlist, "baseline": _baseline(doc, checks, out),
            "skips": [{"check": c["name"], **s} for c in checks for s in c["skips"]],
            "allowlist_file": _text(doc.get("allowlist_file"), 300) if doc.get("allowlist_file") else None,
            "files": [f for f in (inside(out, n) for n in GATE_FILES) if f]}


def read_document(path: Path) -> Any:
    """A report's JSON file as data; None when it is not there; one line (exit 2) when it is no JSON."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise UsageError(f"{path}: not readable as JSON ({exc})") from None


def load_gate(out: Path) -> dict[str, Any] | None:
    path = Path(out) / GATE_FILE
    doc = read_document(path)
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: not a verify.gate/1 object")
    return normalise_gate(doc, out)


def section_title(status: str) -> str:
    return SECTION_TITLES.get(status, status)
