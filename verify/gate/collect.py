"""The clusters a finished check found, read from the files it committed.

    triaged_clusters(out, label, rel, engine, budget_s)    from clusters.json (triage)
    unicode_clusters(out, label, rel)                      from unicode.json
    recheck_clusters(out, label, rel)                      from recheck.json
    masked_fuzz_clusters(manifest, reference, label, rel)  allowlisted while fuzzing

(``label``: the check's name; ``rel``: its folder relative to the gate's OUT.)

A cluster here is a dict with the names gate.json uses (``key``, ``engine``,
``reference``, ``size``, ``reproducer``, ``first_difference``) plus ``kind``,
``minimized``, ``tags``, ``cause``, ``sample_id``, ``checks``, ``source`` and, for a
session finding, ``session`` (the minimised ``prefix`` and ``append``, or the session id,
turn and append of the first finding); its
status (new, allowlisted, ...) is decided later (``verify.gate.verdict``).

``reproducer`` is the input as segments ``[[text, allow_special], ...]``: the minimised
one when triage made one (``minimized`` true), else the first finding's own input
(up to ``MAX_INLINE_CHARS``; a larger one is named by ``input_file``). A finding
without its input is never reported as a cluster without saying where the input is.
``first_difference`` is the located block of that input (``token_index``,
``byte_offset``, ``char_offset``, ``expected`` and ``actual`` windows of ids and
pieces), ``{"error": {type, message}}`` for failures.

Sweeps and replays that are not findings get keys of their own (ci/README.md):
``unicode/mismatch/unicode-VERSION`` (or ``.../unexplained``), ``unicode/error``,
``unicode/pack-only`` per candidate, ``recheck/VERDICT/CASE_ID`` per regression case
that no longer behaves as recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verify.rundir.layout import CLUSTERS_FILE, MANIFEST_FILE, RECHECK_FILE, UNICODE_FILE, RunFolder

MAX_INLINE_CHARS = 65536
LOCATED = ("token_index", "byte_offset", "char_offset", "expected", "actual")
SESSION_FIELDS = ("id", "turn", "turns", "prefix_chars", "append", "update")


def _located(block: dict[str, Any]) -> dict[str, Any] | None:
    if block.get("error") and block.get("token_index") is None:
        return {"error": block["error"]}
    if block.get("token_index") is None:
        return None
    return {k: block.get(k) for k in LOCATED}


def _cluster(key: str, engine: str | None, reference: str | None, kind: str, size: int, label: str,
             source: str, **extra) -> dict[str, Any]:
    return {"key": key, "engine": engine, "reference": reference, "kind": kind, "size": size,
            "reproducer": None, "minimized": False, "first_difference": None, "tags": [], "cause": None,
            "sample_id": None, "checks": [label], "source": source, **extra}


def _has_findings(out: Path) -> bool:
    from verify.triage import committed_records

    return next(iter(committed_records(out)), None) is not None


def triaged_clusters(out: Path, label: str, rel: str, engine=None, budget_s: float = 0.0) -> list[dict[str, Any]]:
    """The clusters of ``out``'s committed findings; triages them first (``budget_s`` seconds
    of minimising) when the command that wrote them did not. ``rel``: ``out`` relative to the gate's OUT."""
    from verify.triage import joined_triage, load_record_input, read_clusters, run_triage

    out = Path(out)
    if not _has_findings(out):
        return []
    if not RunFolder(out).clusters.is_file():
        run_triage(out, engine=engine, budget_s=budget_s)
    listed = read_clusters(out)
    wanted = {(c["engine"], c["reference"], c["key"]) for c in listed if not c.get("example_minimized")}
    firsts: dict[tuple, dict[str, Any]] = {}
    if wanted:  # the first member of each cluster with no minimised example: triage.jsonl streamed beside the findings
        for record, line in joined_triage(out):
            ident = (record.get("engine"), record.get("reference"), (line or {}).get("cluster"))
            if ident in wanted and ident not in firsts:
                firsts[ident] = record
                if len(firsts) == len(wanted):
                    break
    clusters = []
    for c in listed:
        item = _cluster(c["key"], c["engine"], c["reference"], c.get("kind", "ids"), int(c.get("count", 0)), label,
                        f"{rel}/{CLUSTERS_FILE}", tags=list(c.get("tags") or []), cause=c.get("cause"),
                        sample_id=(c.get("sample_ids") or [None])[0])
        block = c.get("example_minimized")
        if block:
            item.update(reproducer=block["input"], minimized=True, first_difference=_located(block))
            if isinstance(block.get("session"), dict):  # the (prefix, append) a stateful engine gets wrong
                item["session"] = block["session"]
        else:
            record = firsts.get((c["engine"], c["reference"], c["key"]))
            if record is not None:
                item["sample_id"] = record.get("sample_id")
                item["first_difference"] = _located(record)
                if isinstance(record.get("session"), dict):  # which session and turn, what it appended
                    item["session"] = {k: record["session"].get(k) for k in SESSION_FIELDS if k in record["session"]}
                sample = load_record_input(record, out)
                if sample is not None and len(sample.text) <= MAX_INLINE_CHARS:
                    item["reproducer"] = [[s.text, s.allow_special] for s in sample.segments]
                elif record.get("input_file"):
                    item["input_file"] = f"{rel}/{record['input_file']}"
        clusters.append(item)
    return clusters


def masked_fuzz_clusters(manifest: dict[str, Any], reference: str, label: str, rel: str) -> list[dict[str, Any]]:
    """Clusters the fuzzer met but did not write because the allowlist accepted them
    (counted, masked: no input kept, so no reproducer)."""
    rows = ((manifest or {}).get("fuzz") or {}).get("clusters") or []
    return [_cluster(r["cluster"], r["engine"], reference, r["cluster"].split("/", 1)[0], int(r.get("hits", 0)), label,
                     f"{rel}/{MANIFEST_FILE}", sample_id=r.get("sample_id"),
                     note="masked while fuzzing (the allowlist accepted it): counted, not written")
            for r in rows if r.get("status") == "allowlist"]


def _cp(cp: int) -> str:
    return f"U+{cp:04X}"


def unicode_clusters(out: Path, label: str, rel: str) -> list[dict[str, Any]]:
    path = RunFolder(out).unicode
    if not path.is_file():
        return []
    doc = json.loads(path.read_text(encoding="utf-8"))
    reference = doc.get("reference")
    clusters = []
    for candidate, r in (doc.get("candidates") or {}).items():
        def add(key: str, ranges: list[list[int]], **extra) -> None:
            size = sum(b - a + 1 for a, b in ranges)
            first = ranges[0][0]
            clusters.append(_cluster(key, candidate, reference, "unicode", size, label, f"{rel}/{UNICODE_FILE}",
                                     reproducer=[[chr(first), False]] if not 0xD800 <= first <= 0xDFFF else None,
                                     first_difference={"code_point": _cp(first),
                                                       "ranges": [f"{_cp(a)}..{_cp(b)}" for a, b in ranges[:10]],
                                                       "ranges_total": len(ranges), **extra}))
        if r.get("mismatched"):
            version = r.get("unicode_version")
            add(f"unicode/mismatch/{'unicode-' + version if version else 'unexplained'}", r["mismatched"],
                unicode_version=version, reference_unicode_version=r.get("reference_unicode_version"),
                explained=r.get("explained"))
        if r.get("errors"):
            add("unicode/error", r["errors"])
        if r.get("pack_only"):
            add("unicode/pack-only", r["pack_only"])
    return clusters


def _first_ids_difference(expected: Any, actual: Any) -> dict[str, Any] | None:
    if not isinstance(expected, list) or not isinstance(actual, list):
        return None
    n = next((i for i, (a, b) in enumerate(zip(expected, actual)) if a != b), min(len(expected), len(actual)))
    if n == len(expected) == len(actual):
        return None
    return {"token_index": n, "byte_offset": None, "char_offset": None,
            "expected": {"start": n, "ids": expected[n:n + 8]}, "actual": {"start": n, "ids": actual[n:n + 8]}}


def recheck_clusters(out: Path, label: str, rel: str) -> list[dict[str, Any]]:
    """One cluster per regression case whose replay is not as recorded (``verdict`` other
    than ok / skipped in recheck.json)."""
    from verify.adversarial.regressions.cases import load_case

    path = RunFolder(out).recheck
    if not path.is_file():
        return []
    doc = json.loads(path.read_text(encoding="utf-8"))
    folder = Path(doc.get("cases_dir") or ".")
    clusters = []
    for r in doc.get("results", []):
        verdict = r.get("verdict", "")
        if verdict in ("ok", "skipped"):
            continue
        word = verdict.split(":", 1)[0].strip().lower().replace(" ", "-")
        item = _cluster(f"recheck/{word}/{r['id']}", r.get("engine"), r.get("reference"), "recheck", 1, label,
                        f"{rel}/{RECHECK_FILE}", sample_id=r["id"], note=r.get("detail"))
        case_file = folder / r.get("file", "")
        if case_file.is_file():
            case = load_case(case_file)
            item["reproducer"] = [[s.text, s.allow_special] for s in case.sample.segments]
            actual = r.get("actual")  # a list of ids, or a digest for long ones
            item["first_difference"] = ({"error": r["error"]} if r.get("error") else
                                        _first_ids_difference(case.expected, actual))
        clusters.append(item)
    return clusters
