"""The report model: everything the HTML report and the CI summary show, read from the
committed files of one OUT folder (never from engines, never re-running anything).

    load_report(out, max_findings=50, max_clusters=200) -> ReportData

Reads ``manifest.json``, the committed findings (a run's committed shards in plan
order, else ``divergences.jsonl``) with ``triage.jsonl`` joined in as both stream past
(``verify.triage.joined_triage``), ``clusters.json``,
the shard markers (findings by position in the corpus, throughput over time),
``attempts.jsonl`` and, when present, ``gate.json`` (``verify.gate/1``, through
``verify.reports.gate_view``). Session findings (a replay's) are kept apart too, with the
turn, the append and the minimised (prefix, append) triage made. Findings
are streamed once: tallies for every finding, full rows for the first
``max_findings`` only, one original member per cluster, so a run with millions of
findings renders in memory that grows with its clusters, never with its findings.
A finding without triage (``--minimize-budget 0``) gets its signature computed here
from its stored input, the same function triage uses.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.errors import UsageError
from verify.outcome import FindingKind
from verify.reports.visible import visible

from verify.reports.views import (CLUSTER_CONTEXT_CHARS, CONTEXT_CHARS, MISSING, ORIGINAL_CHARS,  # noqa: F401
                                  REPRODUCER_CHARS, difference_view, first_difference, run_verdict, safe_link,
                                  UNMEASURED, session_view, shown_input, token_at)
from verify.rundir.layout import (ATTEMPTS_FILE, CLUSTERS_FILE, FINDINGS_FILE, MANIFEST_FILE, PLAN_FILE, SUMMARY_FILE,
                                  TRIAGE_FILE, RunFolder)

RUN_FILES = (MANIFEST_FILE, SUMMARY_FILE, FINDINGS_FILE, TRIAGE_FILE, CLUSTERS_FILE, PLAN_FILE, ATTEMPTS_FILE)


def finding_class(kind: str, sig: dict[str, Any] | None) -> str:
    sig = sig or {}
    if kind == FindingKind.IDS:
        return f"ids {sig['transition']}" if sig.get("located") else "ids unlocated"
    if kind == FindingKind.BAD_INPUT:
        return "bad-input"
    return f"{kind} {sig.get('error_type') or ''}".strip()


def finding_script(kind: str, sig: dict[str, Any] | None) -> str:
    scripts = (sig or {}).get("script") or []
    if kind != FindingKind.IDS or not scripts:
        return f"({kind})"
    before, at = (list(scripts) + ["-", "-"])[:2]
    return at if at != "-" else before


@dataclass
class ReportData:
    out: Path
    manifest: dict[str, Any]
    verdict: str
    findings_total: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)  # first rows, display-ready
    by_class: Counter = field(default_factory=Counter)
    by_script: Counter = field(default_factory=Counter)
    by_engine: Counter = field(default_factory=Counter)
    by_shard: list[tuple[int, int, int]] = field(default_factory=list)  # (index, findings, samples) committed
    shards_total: int = 0
    throughput: list[tuple[float, int, int]] = field(default_factory=list)  # (s since start, samples, chars) cumulative
    sessions: list[dict[str, Any]] = field(default_factory=list)
    clusters: list[dict[str, Any]] = field(default_factory=list)  # display-ready, biggest first
    clusters_total: int = 0
    triaged: bool = False
    gate: dict[str, Any] | None = None
    session_findings: list[dict[str, Any]] = field(default_factory=list)  # first session findings, display-ready
    session_findings_total: int = 0
    certificate: dict[str, Any] | None = None  # verify certify's certificate.json, display-ready

    @property
    def reference(self) -> dict[str, Any] | None:
        return self.manifest.get("reference")

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("candidates") or [])

    @property
    def counts(self) -> dict[str, Any]:
        return self.manifest.get("counts") or {}

    @property
    def unit(self) -> str:
        """What one sample of this run is: turns, edit scripts or samples."""
        from verify.reports.skips import sample_unit

        return sample_unit(self.manifest)

    @property
    def unmeasured(self) -> str | None:
        """Why chars and tokens show no number for this hunt, if they are not measured."""
        return UNMEASURED.get(self.manifest.get("hunt") or "") if not self.counts.get("chars") else None

    @property
    def skips(self) -> list[dict[str, Any]]:
        from verify.reports.skips import manifest_skip_rows

        return [{**row.as_dict(), "reason": visible(row.reason, 300), "engine": visible(row.engine, 120),
                 "remedy": visible(row.remedy, 300) if row.remedy else ""} for row in manifest_skip_rows(self.manifest)]

    @property
    def files(self) -> list[str]:
        """The run's own files that exist, for links."""
        return [name for name in RUN_FILES if (self.out / name).is_file()]


def _context(record: dict[str, Any], chars: int = CONTEXT_CHARS) -> dict[str, str] | None:
    """``chars`` characters either side of a finding's first difference, escaped; None when not located."""
    ctx = record.get("context")
    if not ctx:
        return None
    return {"before": visible(ctx.get("before", "")[-chars:]), "after": visible(ctx.get("after", "")[:chars])}


def _finding_row(record: dict[str, Any]) -> dict[str, Any]:
    ctx = _context(record) or {"before": "", "after": ""}
    error = record.get("error") or {}
    return {"kind": record.get("kind", "ids"), "engine": record.get("engine") or MISSING,
            "sample_id": visible(str(record.get("sample_id")), 120), "cluster": record.get("cluster") or MISSING,
            "before": ctx["before"], "after": ctx["after"],
            "difference": first_difference(record) if record.get("kind", "ids") == "ids" else None,
            "error": visible(f"{error.get('type', '')}: {error.get('message', '')}", 200) if error else "",
            "raw": visible(record.get("raw") or "", 120)}


def _session_row(record: dict[str, Any], line: dict[str, Any] | None) -> dict[str, Any]:
    """A session finding: where (session, turn, the prefix before it, the append) and, when
    triage shrank it, the minimised prefix and append."""
    small = ((line or {}).get("minimized") or {}).get("session")
    return {"engine": record.get("engine") or MISSING, "kind": record.get("kind", "ids"),
            "where": session_view(record["session"]), "minimised": session_view(small) if small else None,
            "difference": first_difference(record),
            "cluster": (line or {}).get("cluster") or MISSING}


# manifest.json's fields the reports read, and the type each must have when present
MANIFEST_SHAPE = {"counts": dict, "candidates": list, "sources": list, "engine_notes": dict, "shards": dict,
                  "attempts": list, "reference": (dict, type(None)), "complete": bool, "interrupted": bool,
                  "started": (str, type(None)), "finished": (str, type(None)), "command": list}


def _load_json(path: Path) -> Any:
    """A committed manifest: a JSON object whose fields the reports read have their types (else
    one line naming the file, exit 2 -- never a crash half way through rendering)."""
    from verify import jsonl
    from verify.errors import CorruptFileError

    doc = jsonl.load(path)
    for name, kind in MANIFEST_SHAPE.items():
        if name in doc and not isinstance(doc[name], kind):
            raise CorruptFileError(f"{path}: '{name}' is a {type(doc[name]).__name__}, not what verify writes there "
                                   "(changed since?)")
    for name in ("candidates", "sources"):
        if any(not isinstance(item, dict) for item in doc.get(name) or []):
            raise CorruptFileError(f"{path}: '{name}' holds something other than objects (changed since?)")
    counts = doc.get("counts") or {}
    if any(not isinstance(v, (int, float, dict)) or isinstance(v, bool) for v in counts.values()):
        raise CorruptFileError(f"{path}: 'counts' holds something other than numbers (changed since?)")
    return doc


def _input_of(record: dict[str, Any], out: Path):
    """The record's sample, or None for a bad record or a stored input that is gone."""
    from verify.triage import load_record_input

    try:
        return load_record_input(record, out)
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None


def _scan_findings(data: ReportData, max_findings: int) -> dict[tuple, dict[str, Any]]:
    """One pass over the committed findings: tallies, first rows, first member of every cluster."""
    from verify.classify import signature, signature_key
    from verify.triage import joined_triage

    first_member: dict[tuple, dict[str, Any]] = {}
    for record, line in joined_triage(data.out):  # triage.jsonl read beside the findings, never held whole
        kind = record.get("kind", "ids")
        sample = None
        if line is not None:
            sig, key = line.get("signature"), line.get("cluster")
        else:
            sample = _input_of(record, data.out)
            sig = signature(record, sample.text if sample is not None else "")
            key = signature_key(sig)
        data.findings_total += 1
        data.by_class[finding_class(kind, sig)] += 1
        data.by_script[finding_script(kind, sig)] += 1
        data.by_engine[record.get("engine") or "(bad input)"] += 1
        if len(data.findings) < max_findings:
            data.findings.append(_finding_row({**record, "cluster": key}))
        if isinstance(record.get("session"), dict):
            data.session_findings_total += 1
            if len(data.session_findings) < max_findings:
                data.session_findings.append(_session_row(record, line))
        ident = (record.get("engine"), record.get("reference"), key)
        if ident not in first_member:
            sample = sample or _input_of(record, data.out)
            first_member[ident] = {"record": {k: record.get(k) for k in ("kind", "token_index", "byte_offset",
                                                                          "expected", "actual", "error")},
                                   "input": None if sample is None else
                                   shown_input([[s.text, s.allow_special] for s in sample.segments], ORIGINAL_CHARS),
                                   "session": record.get("session"),
                                   "context": _context(record, CLUSTER_CONTEXT_CHARS)}
    return first_member


def _cluster_rows(data: ReportData, first_member: dict[tuple, dict[str, Any]], max_clusters: int) -> None:
    from verify.triage import read_clusters

    clusters = read_clusters(data.out)
    data.clusters_total = len(clusters)
    for c in sorted(clusters, key=lambda c: (-c.get("count", 0), str(c.get("engine")), str(c.get("key"))))[:max_clusters]:
        member = first_member.get((c.get("engine"), c.get("reference"), c.get("key")), {})
        minimized = c.get("example_minimized")
        data.clusters.append({
            "key": c.get("key") or MISSING, "engine": c.get("engine") or MISSING, "kind": c.get("kind", "ids"),
            "count": c.get("count", 0), "tags": list(c.get("tags") or []),
            "links": [u for u in (safe_link(x) for x in c.get("links") or []) if u],
            "minimised": minimized is not None,
            "reproducer": shown_input(minimized["input"], REPRODUCER_CHARS) if minimized else member.get("input") or "",
            "session": session_view(minimized.get("session")) if minimized and minimized.get("session")
            else session_view(member.get("session")),
            "difference": first_difference(minimized or member.get("record")),
            "context": None if minimized else member.get("context"),  # where the original input first differs
            "sample_ids": [visible(str(s), 80) for s in (c.get("sample_ids") or [])[:3]]})


def _shards_and_throughput(data: ReportData) -> None:
    from verify.rundir.plan import load_plan
    from verify.rundir.attempts import read_attempts
    from verify.rundir.store import ShardStore
    from verify.rundir.manifest import iso

    data.sessions = read_attempts(data.out)
    if not RunFolder(data.out).plan.is_file():
        return
    plan = load_plan(data.out)
    data.shards_total = len(plan.shards)
    markers = ShardStore(data.out).committed([s.id for s in plan.shards])
    data.by_shard = [(i, m.get("findings", 0), m["counts"].get("samples", 0)) for i, m in sorted(markers.items())]
    start = min((s["started"] for s in data.sessions if s.get("started")), default=None)
    timed = sorted((m["committed"], m["counts"].get("samples", 0), m["counts"].get("chars", 0))
                   for m in markers.values() if m.get("committed"))
    if start is None and timed:
        start = timed[0][0]
    samples = chars = 0
    for committed, n, c in timed:
        samples, chars = samples + n, chars + c
        data.throughput.append((max(0.0, committed - start), samples, chars))
    for s in data.sessions:  # per session: what its shards added, and how fast
        began, ended = s.get("started"), s.get("finished")
        if began is None:
            continue
        mine = [(n, c) for t, n, c in timed if t >= began and (ended is None or t <= ended + 1e-3)]
        seconds = (ended - began) if ended else None
        s["started_at"], s["finished_at"] = iso(began), iso(ended)
        s["samples"] = sum(n for n, _ in mine)
        s["chars"] = sum(c for _, c in mine)
        s["chars_per_s"] = round(s["chars"] / seconds) if seconds else None


def load_report(out: Path, max_findings: int = 50, max_clusters: int = 200) -> ReportData:
    from verify.reports.gate_view import load_gate

    out = Path(out)
    folder = RunFolder(out)
    manifest_path = folder.manifest
    gate = load_gate(out)
    if not manifest_path.is_file() and gate is None:
        raise UsageError(f"{out}: no manifest.json or gate.json (not a verify output folder, or it never started)")
    manifest = _load_json(manifest_path) if manifest_path.is_file() else {}
    data = ReportData(out=out, manifest=manifest, verdict=run_verdict(manifest) if manifest else gate["verdict"],
                      gate=gate)
    first_member = _scan_findings(data, max_findings)
    data.triaged = folder.clusters.is_file()
    _cluster_rows(data, first_member, max_clusters)
    _shards_and_throughput(data)
    data.certificate = _certificate_view(folder.certificate)
    return data


CERTIFICATE_COUNTEREXAMPLES = 20  # rows on the page; all of them are in certificate.json


def _certificate_view(path: Path) -> dict[str, Any] | None:
    """The certificate of a ``verify certify`` run for the page: its statement, the space per
    length, the premises and the first counterexamples (None: no certificate here). A file that
    is not what certify writes is one line naming it, as for the manifest."""
    from verify import jsonl
    from verify.errors import CorruptFileError

    if not path.is_file():
        return None
    doc = jsonl.load(path)
    try:
        per_length = [{"length": int(n), "atom_strings": int(v["atom_strings"]), "strings": int(v["strings"]),
                       "compared": int(v["compared"])} for n, v in doc["strings"]["per_length"].items()]
        premises = [{"name": str(name), "status": str(p.get("status", "")), "verdict": str(p.get("verdict", "—")),
                     "samples": p.get("samples", "—")} for name, p in doc["premises"].items()]
        examples = [{"engine": str(c["engine"]), "text": repr(c["text"]), "length": int(c["length"]),
                     "atoms": " ".join(map(str, c["atoms"])), "expected": c.get("expected"), "actual": c.get("actual")}
                    for c in doc["counterexamples"][:CERTIFICATE_COUNTEREXAMPLES]]
        return {"verdict": str(doc["verdict"]), "statement": str(doc["statement"]), "k": int(doc["k"]),
                "atoms": int(doc["alphabet"]["atoms"]), "reps": int(doc["alphabet"]["representatives_per_atom"]),
                "digest": str(doc["alphabet"]["digest"]), "total": int(doc["strings"]["total"]),
                "compared": int(doc["strings"]["compared"]), "per_length": per_length, "premises": premises,
                "counterexamples": examples, "counterexamples_total": len(doc["counterexamples"])}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptFileError(f"{path}: not a certificate as verify certify writes it ({type(exc).__name__}: {exc}; "
                               "changed since?)") from None
