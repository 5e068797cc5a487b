"""The gate's verdict: the checks' clusters against the allowlist and the baseline.

    evaluate(suite, runs, allowlist, baseline=None) -> the gate.json document

Rules (ci/README.md):

  * a cluster an allowlist row accepts is ``allowlisted`` and does not fail the gate;
  * a cluster only an expired row would accept is ``expired`` and fails it, and so does
    every expired row, whether it matched tonight or not (renew its date or delete it);
  * any other cluster fails the gate: ``unchanged`` when the baseline had it, else ``new``
    -- also on an engine that has allowlisted clusters;
  * a row that matched no cluster tonight is ``stale`` (fixed, or no check met it): reported,
    not failing;
  * a check fails on a failing cluster or on a problem that is no cluster (skipped samples,
    an incomplete run, nothing checked at all); an ``error`` check fails the gate; a
    ``skipped`` one only with ``fail_on_skip = true`` in the suite. Each check carries its
    ``skips`` (engine, reason, count, remedy) and ``empty`` (parts that ran nothing).

With a baseline, ``baseline`` lists the clusters ``new``, ``unchanged``, ``fixed`` (a check
that found one ran tonight and did not) and ``not_rechecked``, the last two with the
baseline's reproducer, and every check's throughput before and after.

Clusters are identified by (engine, reference, key); the same cluster found by two
checks is one cluster whose ``checks`` lists both, whose ``size`` adds their findings and
whose ``sizes`` keeps each check's own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typing_extensions import NotRequired, TypedDict

from verify.errors import ConfigError
from verify.findings import SegmentPair
from verify.gate.checks import CheckRun

GATE_SCHEMA = "verify.gate/1"


class GateCheck(TypedDict):
    """One check's row of ``gate.json``: how it ended and what it found (its folder is ``out``)."""

    name: str
    kind: str
    status: str  # pass, fail, error, skipped
    out: str
    counts: dict[str, Any] | None
    seconds: float | None
    note: str | None
    problems: list[str]
    throughput: dict[str, Any] | None
    error_class: str | None
    clusters: list[str]
    skips: list[Any]
    empty: list[str]
    cut: Any


class GateCluster(TypedDict):
    """One cluster of ``gate.json``, merged over the checks that found it, with its status."""

    key: str
    engine: str | None
    reference: str | None
    status: str  # new, unchanged, allowlisted, expired
    size: int
    reproducer: list[SegmentPair] | None
    first_difference: dict[str, Any] | None
    kind: NotRequired[str]
    checks: NotRequired[list[str]]
    sizes: NotRequired[dict[str, int]]
    minimized: NotRequired[bool]
    tags: NotRequired[list[str]]
    cause: NotRequired[str | None]
    note: NotRequired[str]
    sample_id: NotRequired[str | None]
    source: NotRequired[str | None]
    input_file: NotRequired[str]
    session: NotRequired[dict[str, Any]]
    allowlist: NotRequired[dict[str, Any]]


class AllowlistEntry(TypedDict):
    """One allowlist row of ``gate.json``: matched tonight, stale (matched nothing) or expired."""

    key: Any
    status: str
    reason: str | None
    link: str | None
    expires: str | None
    row: int
    engine: str
    exact: bool
    matched: list[str]


class GateRecord(TypedDict):
    """``OUT/gate.json`` (``verify.gate/1``; docs/schema.md): the verdict and why, every check, every
    cluster with its status, the allowlist's rows, the baseline's changes; the runner adds what ran
    (``reference`` ... ``exit_code``)."""

    schema: str
    suite: str
    verdict: str  # pass or fail
    reasons: list[str]
    checks: list[GateCheck]
    clusters: list[GateCluster]
    allowlist: list[AllowlistEntry]
    baseline: dict[str, Any] | None
    reference: NotRequired[str]
    candidates: NotRequired[list[str]]
    suite_file: NotRequired[str]
    allowlist_file: NotRequired[str | None]
    harness: NotRequired[dict[str, str]]
    command: NotRequired[list[str]]
    started: NotRequired[str | None]
    finished: NotRequired[str | None]
    seconds: NotRequired[float]
    exit_code: NotRequired[int]
FAILING_CLUSTER = ("new", "unchanged", "expired")
# what a fixed (or not rechecked) cluster keeps of the baseline's row: the reports show its reproducer
BASELINE_CLUSTER_FIELDS = ("status", "size", "kind", "checks", "reproducer", "minimized", "first_difference",
                           "session")


def identity(cluster: dict[str, Any]) -> tuple[str, str, str]:
    return (cluster.get("engine") or "", cluster.get("reference") or "", cluster["key"])


def _merge(runs: list[CheckRun]) -> dict[tuple, dict[str, Any]]:
    merged: dict[tuple, dict[str, Any]] = {}
    for run in runs:
        for c in run.clusters:
            ident = identity(c)
            if ident not in merged:
                merged[ident] = {**c, "checks": list(c.get("checks") or [run.name]),
                                 "sizes": {run.name: c.get("size", 0)}}
                continue
            m = merged[ident]
            m["size"] += c.get("size", 0)
            m["sizes"][run.name] = m["sizes"].get(run.name, 0) + c.get("size", 0)  # each check's own findings
            m["checks"] += [name for name in c.get("checks") or [run.name] if name not in m["checks"]]
            if m.get("reproducer") is None or (c.get("minimized") and not m.get("minimized")):
                for k in ("reproducer", "minimized", "first_difference", "sample_id", "input_file", "source",
                          "session"):
                    if c.get(k) is not None:
                        m[k] = c[k]
    return merged


def _rule_fields(rule) -> dict[str, Any]:
    return {"row": rule.row, "reason": rule.reason, "link": rule.link,
            "expires": rule.expires.isoformat() if rule.expires else None}


def load_baseline(previous: Path) -> dict[str, Any]:
    path = Path(previous) / "gate.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"--baseline {previous}: no readable gate.json ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != GATE_SCHEMA:
        raise ConfigError(f"--baseline {previous}: gate.json is not a {GATE_SCHEMA} document")
    doc["_out"] = str(previous)
    return doc


def _rate_change(before: float | None, after: float | None) -> float | None:
    if not before or after is None:
        return None
    return round(after / before - 1.0, 4)


def _baseline_section(previous: dict[str, Any], clusters: list[dict[str, Any]], runs: list[CheckRun]
                      ) -> dict[str, Any]:
    ident = lambda c: {"key": c["key"], "engine": c.get("engine"), "reference": c.get("reference")}  # noqa: E731
    now = {identity(c): c for c in clusters}

    def gone(c: dict[str, Any]) -> dict[str, Any]:
        """A cluster of the baseline not seen tonight, with what the reports show of it."""
        return {**ident(c), **{k: c[k] for k in BASELINE_CLUSTER_FIELDS if c.get(k) is not None}}

    before = {identity(c): c for c in previous.get("clusters") or [] if isinstance(c, dict) and "key" in c}
    checked = {r.name for r in runs if r.state == "ran"}
    fixed, not_rechecked = [], []
    for key, c in before.items():
        if key in now:
            continue
        # fixed only when a check that found it ran tonight; else nobody looked
        (fixed if set(c.get("checks") or []) & checked else not_rechecked).append(gone(c))
    throughput = {}
    previous_checks = {c.get("name"): c for c in previous.get("checks") or [] if isinstance(c, dict)}
    for run in runs:
        old = (previous_checks.get(run.name) or {}).get("throughput") or {}
        new = run.throughput or {}
        if not old and not new:
            continue
        throughput[run.name] = {
            unit: {"before": old.get(unit), "after": new.get(unit), "change": _rate_change(old.get(unit), new.get(unit))}
            for unit in ("samples_per_s", "mb_per_s")}
    return {"out": previous.get("_out"), "suite": previous.get("suite"), "finished": previous.get("finished"),
            "new": [ident(c) for k, c in now.items() if k not in before],
            "fixed": fixed, "unchanged": [ident(c) for k, c in now.items() if k in before],
            "not_rechecked": not_rechecked, "throughput": throughput}


def check_status(run: CheckRun, failing_idents: set[tuple]) -> str:
    if run.state == "error":
        return "error"
    if run.problems or any(identity(c) in failing_idents for c in run.clusters):
        return "fail"
    return "skipped" if run.state == "skipped" else "pass"


def evaluate(suite, runs: list[CheckRun], allowlist, baseline: dict[str, Any] | None = None) -> GateRecord:
    """The gate.json document (without timing fields, which the runner adds)."""
    from verify.allowlist import Allowlist

    allowlist = allowlist or Allowlist()
    before = {identity(c) for c in (baseline or {}).get("clusters") or [] if isinstance(c, dict) and "key" in c}
    matched: dict[int, list[str]] = {}
    clusters: list[GateCluster] = []
    for ident, c in _merge(runs).items():
        rule = allowlist.match(c.get("engine"), c["key"])
        expired = None if rule is not None else allowlist.match_expired(c.get("engine"), c["key"])
        if rule is not None:
            status = "allowlisted"
            matched.setdefault(id(rule), []).append(c["key"])
            c["allowlist"] = _rule_fields(rule)
        elif expired is not None:
            status = "expired"
            matched.setdefault(id(expired), []).append(c["key"])
            c["allowlist"] = _rule_fields(expired)
        else:
            status = "unchanged" if ident in before else "new"
        clusters.append({"key": c["key"], "engine": c.get("engine"), "reference": c.get("reference"),
                         "status": status, "size": c.get("size", 0), "reproducer": c.get("reproducer"),
                         "first_difference": c.get("first_difference"),
                         **{k: v for k, v in c.items() if k not in ("key", "engine", "reference", "size", "reproducer",
                                                                   "first_difference", "status")}})
    entries: list[AllowlistEntry] = []
    for rule in sorted([*allowlist.rules, *allowlist.expired], key=lambda r: r.row):
        is_expired = rule in allowlist.expired
        status = "expired" if is_expired else "matched" if id(rule) in matched else "stale"
        entries.append({"key": rule.names, "status": status, "reason": rule.reason, "link": rule.link,
                        "expires": rule.expires.isoformat() if rule.expires else None, "row": rule.row,
                        "engine": rule.engine.pattern, "exact": rule.key is not None,
                        "matched": matched.get(id(rule), [])})
    failing = {identity(c) for c in clusters if c["status"] in FAILING_CLUSTER}
    checks: list[GateCheck] = []
    for run in runs:
        checks.append({"name": run.name, "kind": run.kind, "status": check_status(run, failing),
                       "out": f"checks/{run.name}", "counts": run.counts, "seconds": run.seconds,
                       "note": "; ".join(run.problems + run.notes) or None, "problems": run.problems,
                       "throughput": run.throughput, "error_class": run.error_class,
                       "clusters": sorted({c["key"] for c in run.clusters}),
                       "skips": list(run.skips), "empty": list(run.empty), "cut": run.cut})
    reasons = []
    bad_checks = [c["name"] for c in checks if c["status"] in ("fail", "error")]
    if bad_checks:
        reasons.append(f"checks failed: {', '.join(bad_checks)}")
    cut = [c["name"] for c in checks if c["cut"]]
    if cut:
        reasons.append(f"the deadline cut: {', '.join(cut)}")
    for status in FAILING_CLUSTER:
        n = sum(c["status"] == status for c in clusters)
        if n:
            reasons.append(f"{n} {status} cluster{'s' if n != 1 else ''}")
    n_expired = sum(e["status"] == "expired" for e in entries)
    if n_expired:
        reasons.append(f"{n_expired} expired allowlist entr{'ies' if n_expired != 1 else 'y'}")
    skipped = [c["name"] for c in checks if c["status"] == "skipped"]
    if skipped and suite.fail_on_skip:
        reasons.append(f"checks skipped (fail_on_skip): {', '.join(skipped)}")
    doc: GateRecord = {"schema": GATE_SCHEMA, "suite": suite.name, "verdict": "fail" if reasons else "pass",
           "reasons": reasons, "checks": checks, "clusters": clusters, "allowlist": entries,
           "baseline": _baseline_section(baseline, clusters, runs) if baseline is not None else None}
    return doc
