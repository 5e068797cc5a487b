"""OUT/summary.md: the run in one page (verdict, counts, first findings); its rows are prepared
here and laid out by ``templates/summary.md.j2``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify import atomic
from verify.reports.md_templates import render
from verify.reports.report_data import run_verdict
from verify.reports.skips import manifest_skip_rows, replays_traces, sample_unit
from verify.reports.views import UNMEASURED
from verify.rundir.layout import RunFolder
from verify.run_length import compact, describe

MAX_LISTED = 50
HUNT_TITLES = {"run": "verify run", "vocab-sweep": "verify vocab sweep", "length": "verify length sweep",
               "replay-edits": "verify replay --edits", "edits": "verify replay --edits"}
TOTALS = ("samples", "chars", "tokens", "verified", "diverged", "error", "crash", "timeout", "skipped")
ENGINE_STATES = ("verified", "diverged", "error", "crash", "timeout", "skipped")


def _example(segments: list | None) -> str | None:
    """A minimised input: its run-length form when it is mostly repetition (``'1'×24998 +
    '\\x1c' + '1'×2``), else a Python repr; None for none."""
    if not segments:
        return None
    plain = len(segments) == 1 and not segments[0][1]
    runs = compact(segments[0][0]) if plain else None
    return describe(runs) if runs else repr(segments[0][0]) if plain else repr([tuple(s) for s in segments])


def _package(identity: dict[str, Any]) -> str:
    """"tiktoken 0.14.0, " -- a plugin's declared name and version first, the build's digest and the
    private environment after: ``my-tok 1.2, fastokens-b10 0.2.17, build 3f2a9c01d2e4, pip fastokens-b10==0.2.17, ``."""
    parts = []
    if identity.get("name"):
        parts.append(f"{identity['name']} {identity.get('version') or ''}".strip())
    if identity.get("package"):
        parts.append(f"{identity['package']} {identity.get('package_version') or '?'}")
    if identity.get("files_digest"):
        parts.append(f"build {str(identity['files_digest'])[:12]}")
    env = identity.get("environment")
    if isinstance(env, dict) and env.get("requirements"):
        parts.append("pip " + " ".join(str(r) for r in env["requirements"]))
    return "".join(f"{p}, " for p in parts)


def _causes(clusters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Clusters whose minimised reproducers coincide, merged: one row per likely root cause, largest first."""
    causes: dict[str, dict[str, Any]] = {}
    for c in clusters:
        if c.get("cause"):
            row = causes.setdefault(c["cause"], {"cause": c["cause"], "engine": c["engine"], "count": 0, "clusters": 0,
                                                 "example": _example(c.get("example")), "tags": set()})
            row["count"] += c["count"]
            row["clusters"] += 1
            row["tags"].update(c["tags"])
    rows = sorted(causes.values(), key=lambda row: (-row["count"], row["engine"] or "", row["cause"]))
    return [{**row, "tags": ", ".join(sorted(row["tags"]))} for row in rows]


def _finding(f: dict[str, Any]) -> dict[str, Any]:
    ctx = f.get("context") or {}
    return {"kind": f["kind"], "engine": f["engine"], "sample_id": f["sample_id"],
            "token_index": f.get("token_index", ""), "byte_offset": f.get("byte_offset", ""),
            "context": f"{ctx.get('before', '')[-20:]}⟦{ctx.get('after', '')[:12]}" if ctx else "",
            "expected": f.get("expected", {}).get("pieces") or f.get("expected", {}).get("ids") or "",
            "actual": f.get("actual", {}).get("pieces") or f.get("actual", {}).get("ids")
            or f.get("error", {}).get("message", ""),
            "minimised": _example((f.get("minimized") or {}).get("input"))}


def _session(f: dict[str, Any]) -> dict[str, Any]:
    """A session finding: where in the session, what the engine said about the splice (for
    ``repair``: the certificate rules it relied on), the minimised (prefix, append)."""
    s = f["session"]
    update = s.get("update") or {}
    notes = update.get("notes") or {}
    relied = notes.get("rules") if isinstance(notes, dict) else None
    shown = f"rules: {', '.join(map(str, relied))}" if relied else ", ".join(
        f"{k}={v}" for k, v in notes.items()) if isinstance(notes, dict) else str(notes)
    small = (f.get("minimized") or {}).get("session") or {}
    return {"engine": f["engine"], "id": s.get("id"), "turn": s.get("turn"), "prefix_chars": s.get("prefix_chars"),
            "append": _example(s.get("append")), "replace_from": update.get("replace_from", ""), "notes": shown,
            "prefix": _example(small.get("prefix")), "appended": _example(small.get("append"))}


def render_summary(manifest: dict[str, Any], findings: list[dict[str, Any]],
                   clusters: list[dict[str, Any]] | None = None, title: str = "verify run") -> str:
    counts = manifest["counts"]
    unmeasured = not counts.get("chars") and manifest.get("hunt") in UNMEASURED
    ref = manifest.get("reference")
    skips = manifest_skip_rows(manifest)
    causes = _causes(clusters) if clusters else []
    return render(
        "summary.md.j2", title=title, verdict=run_verdict(manifest), m=manifest, counts=counts,
        reference=ref and {"spec": ref["spec"], "package": _package(ref),
                           "vocab": (ref.get("vocab_sha256") or "-")[:16]},
        candidates=[{"spec": c["spec"], "package": _package(c), "fingerprint": c.get("fingerprint")}
                    for c in manifest["candidates"]],
        reports=list((manifest.get("reports") or {}).items()), sources=[s["name"] for s in manifest["sources"]],
        shards=manifest.get("shards"), engine_notes=list((manifest.get("engine_notes") or {}).items()),
        totals=["not counted" if unmeasured and k in ("chars", "tokens") else counts[k] for k in TOTALS],
        per_engine=[(spec, [tally[k] for k in ENGINE_STATES]) for spec, tally in counts["per_engine"].items()],
        skips=skips, skipped=sum(r.count for r in skips), unit=sample_unit(manifest),
        causes=causes[:MAX_LISTED], causes_total=len(causes),
        clusters=[{**c, "tags": ", ".join(c["tags"]), "example": _example(c.get("example"))}
                  for c in (clusters or [])[:MAX_LISTED]], clusters_total=len(clusters or []),
        findings=[_finding(f) for f in findings[:MAX_LISTED]], findings_total=counts.get("findings"),
        sessions=[_session(f) for f in findings[:MAX_LISTED] if f.get("session")])


def write_summary(out_dir: Path, manifest: dict[str, Any], findings: list[dict[str, Any]],
                  clusters: list[dict[str, Any]] | None = None, title: str = "verify run") -> Path:
    path = RunFolder(out_dir).summary
    atomic.write_text(path, render_summary(manifest, findings, clusters, title))
    return path


def hunt_title(manifest: dict[str, Any]) -> str:
    """The title of a run's reports, by the hunt that ran it (``verify replay --edits`` ...)."""
    hunt = manifest.get("hunt") or "run"
    if hunt == "run" and replays_traces(manifest):
        return "verify replay"
    return HUNT_TITLES.get(hunt, f"verify {hunt}")


def write_run_summary(out_dir: Path, manifest: dict[str, Any]) -> Path:
    """summary.md from the committed files: the first findings with their triage, the clusters;
    titled by the hunt that ran (``verify unicode``, ``verify check`` ...)."""
    from verify.triage import read_clusters, triaged_records

    return write_summary(out_dir, manifest, triaged_records(out_dir, MAX_LISTED), read_clusters(out_dir) or None,
                         title=hunt_title(manifest))
