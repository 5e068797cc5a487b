"""``OUT/shadow.json`` (``verify.shadow-report/1``, written by ``verify shadow``) in the shape its
page shows (``templates/shadow.html.j2``): what the engineer on call reads first.

    load_shadow(out) -> dict | None        None when OUT holds no shadow.json

The verdict and counts, production's tokenizers (version, whether the vocabulary is the
reference's), the replay engines by name (never called "candidate"), then each cluster: its
status (new, known, allowlisted and why), first and last seen, the versions it was seen on,
its reproducer (minimised against the replay engine, or the original input and the true reason
it was not minimised), its first difference, suspected causes and request ids. Read
tolerantly, every string display-ready (``verify.reports.visible``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verify.reports.gate_view import read_document, reproducer_text
from verify.reports.views import MISSING, first_difference
from verify.reports.visible import visible
from verify.rundir.layout import (CLUSTERS_FILE, FINDINGS_FILE, MANIFEST_FILE, SHADOW_FILE, SHADOW_SUMMARY_FILE,
                                  TRIAGE_FILE, RunFolder)

MAX_REQUEST_IDS = 16
SHADOW_FILES = (SHADOW_SUMMARY_FILE, SHADOW_FILE, CLUSTERS_FILE, TRIAGE_FILE, FINDINGS_FILE, MANIFEST_FILE)


def _text(value: Any, limit: int = 200) -> str:
    if value is None or value == "":
        return MISSING
    return visible(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), limit)


def _reproducer(rep: Any) -> dict[str, Any]:
    rep = rep if isinstance(rep, dict) else {}
    if rep.get("minimized"):
        how = f"minimised from {rep.get('initial_chars')} characters against {rep.get('replay_engine')}"
        if rep.get("stopped_on_budget"):
            how += "; cut by the budget"
        return {"text": reproducer_text(rep.get("input")), "how": _text(how, 300), "why_not": None}
    if rep.get("input") is not None:
        shown = reproducer_text(rep["input"])
    elif rep.get("redacted"):
        red = rep["redacted"]
        shown = f"(redacted: {red.get('chars')} characters, text sha256 {str(red.get('text_sha256'))[:16]}…)"
    else:
        shown = MISSING
    return {"text": shown, "how": _text(f"original input of request {rep.get('request_id')}", 200)
            if rep.get("request_id") else MISSING, "why_not": _text(rep.get("why"), 400) if rep.get("why") else None}


def _cluster(row: dict[str, Any]) -> dict[str, Any]:
    rep = row.get("reproducer") if isinstance(row.get("reproducer"), dict) else {}
    try:
        diff = first_difference(rep.get("first_difference"))
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        diff = None
    ids = row.get("request_ids") if isinstance(row.get("request_ids"), list) else []
    return {"rank": row.get("rank"), "key": _text(row.get("key")), "engine": _text(row.get("engine"), 120),
            "status": str(row.get("status") or "new"), "count": row.get("count") if isinstance(row.get("count"), int)
            else MISSING, "first_seen": _text(row.get("first_seen")), "last_seen": _text(row.get("last_seen")),
            "versions": [_text(v, 60) for v in row.get("versions") or []], "reason": _text(row.get("reason"), 300)
            if row.get("reason") else None, "reproducer": _reproducer(rep), "difference": diff,
            "suspects": [_text(s, 300) for s in row.get("suspects") or []],
            "request_ids": [_text(r, 80) for r in ids[:MAX_REQUEST_IDS]], "more_ids": max(0, len(ids) - MAX_REQUEST_IDS)
            if isinstance(row.get("count"), int) else 0, "same_cause_as": list(row.get("same_cause_as") or [])}


def normalise_shadow(doc: dict[str, Any], out: Path | None = None) -> dict[str, Any]:
    counts = doc.get("counts") if isinstance(doc.get("counts"), dict) else {}
    ref = doc.get("reference") if isinstance(doc.get("reference"), dict) else {}
    clusters = [_cluster(r) for r in doc.get("clusters") or [] if isinstance(r, dict)]
    by_status: dict[str, list] = {}
    for c in clusters:
        by_status.setdefault(c["status"], []).append(c)
    return {"verdict": str(doc.get("verdict") or "unknown").upper(), "counts": counts,
            "reference": {"spec": _text(ref.get("spec")), "package": _text(ref.get("package")),
                          "version": _text(ref.get("package_version")),
                          "vocab_sha256": _text((ref.get("vocab_sha256") or "")[:16])},
            "replay_engines": [(_text(n, 80), _text(s, 200)) for n, s in (doc.get("replay_engines") or {}).items()],
            "tokenizers": [{"name": _text(t.get("name"), 80), "version": _text(t.get("version"), 60),
                            "vocab": _text((t.get("vocab_sha256") or "")[:16]),
                            "same": {True: "yes", False: "no", None: "?"}.get(t.get("vocab_matches_reference"), "?"),
                            **{k: t.get(k, 0) for k in ("records", "confirmed", "mismatched")}}
                           for t in doc.get("tokenizers") or [] if isinstance(t, dict)],
            "clusters": clusters, "by_status": by_status, "files": [_text(f, 200) for f in doc.get("files") or []],
            "redacted": bool(doc.get("redacted")),
            "known_from": _text((doc.get("known_clusters") or {}).get("from"), 200)
            if (doc.get("known_clusters") or {}).get("from") else None,
            "bad_records": [{"position": _text(b.get("position"), 200), "reason": _text(b.get("reason"), 300)}
                            for b in (doc.get("bad_records") or [])[:50] if isinstance(b, dict)],
            "links": [n for n in SHADOW_FILES if out is not None and (Path(out) / n).is_file()]}


def load_shadow(out: Path) -> dict[str, Any] | None:
    doc = read_document(RunFolder(out).shadow)
    return normalise_shadow(doc, out) if isinstance(doc, dict) else None
