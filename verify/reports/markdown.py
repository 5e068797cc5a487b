"""OUT/summary.md: the run in one page (verdict, counts, first findings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from verify import atomic
from verify.reports.md import md_cell, md_text
from verify.reports.views import UNMEASURED

MAX_LISTED = 50
HUNT_TITLES = {"run": "verify run", "vocab-sweep": "verify vocab sweep", "length": "verify length sweep",
               "replay-edits": "verify replay --edits", "edits": "verify replay --edits"}
EXAMPLE_CHARS = 60


def _cell(value: Any, limit: int = 80) -> str:
    """Any value from a corpus, an engine or a committed file: a code span, inert in a viewer."""
    return md_cell(value, limit)


def _example(segments: list | None) -> str:
    """A minimised input: its run-length form when it is mostly repetition (``'1'×24998 +
    '\\x1c' + '1'×2``), else a Python repr; at most EXAMPLE_CHARS characters."""
    if not segments:
        return ""
    from verify.run_length import compact, describe

    plain = len(segments) == 1 and not segments[0][1]
    runs = compact(segments[0][0]) if plain else None
    text = describe(runs) if runs else repr(segments[0][0]) if plain else repr([tuple(s) for s in segments])
    return md_cell(text, EXAMPLE_CHARS)


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


def _causes_section(clusters: list[dict[str, Any]]) -> list[str]:
    """Clusters whose minimised reproducers coincide, merged: one row per likely root cause."""
    causes: dict[str, dict[str, Any]] = {}
    for c in clusters:
        if c.get("cause"):
            row = causes.setdefault(c["cause"], {"engine": c["engine"], "count": 0, "clusters": 0,
                                                 "example": c.get("example"), "tags": set()})
            row["count"] += c["count"]
            row["clusters"] += 1
            row["tags"].update(c["tags"])
    if not causes:
        return []
    rows = sorted(causes.items(), key=lambda kv: (-kv[1]["count"], kv[1]["engine"], kv[0]))
    lines = [f"## Likely causes ({len(causes)}: clusters with the same minimised reproducer)", "",
             "| cause | engine | findings | clusters | minimised reproducer | tags |", "|---|---|---|---|---|---|"]
    for cause, row in rows[:MAX_LISTED]:
        lines.append(f"| {_cell(cause)} | {_cell(row['engine'])} | {row['count']} | {row['clusters']} | "
                     f"{_example(row['example'])} | {_cell(', '.join(sorted(row['tags'])))} |")
    return lines + [""]


def _clusters_section(clusters: list[dict[str, Any]]) -> list[str]:
    lines = [f"## Clusters ({len(clusters)}; first {min(len(clusters), MAX_LISTED)} listed, all in clusters.json)", "",
             "| cluster | engine | count | tags | minimised example |", "|---|---|---|---|---|"]
    for c in clusters[:MAX_LISTED]:
        lines.append(f"| {_cell(c['key'])} | {_cell(c['engine'])} | {c['count']} | {_cell(', '.join(c['tags']))} | "
                     f"{_example(c.get('example'))} |")
    return lines + [""]


def render_summary(manifest: dict[str, Any], findings: list[dict[str, Any]],
                   clusters: list[dict[str, Any]] | None = None, title: str = "verify run") -> str:
    from verify.reports.report_data import run_verdict

    counts = manifest["counts"]
    verdict = run_verdict(manifest)
    lines = [f"# {md_text(title)}: {verdict}", ""]
    if manifest.get("aborted"):
        lines.append(f"- **aborted**: {md_text(manifest['aborted'])}")
    if manifest.get("statement"):  # a hunt's verdict in words (``verify certify``'s certificate)
        lines.append(f"- **statement**: {md_text(manifest['statement'])}")
    ref = manifest.get("reference")
    if ref:
        lines.append(f"- reference: {_cell(ref['spec'])} ({md_text(_package(ref))}vocab sha256 "
                     f"{_cell((ref.get('vocab_sha256') or '-')[:16])})")
    for cand in manifest["candidates"]:
        lines.append(f"- candidate: {_cell(cand['spec'])} ({md_text(_package(cand))}fingerprint "
                     f"{_cell(cand.get('fingerprint'))})")
    for name, report in (manifest.get("reports") or {}).items():
        lines.append(f"- {md_text(name)}: {_cell(report)}")
    lines.append(f"- sources: {', '.join(md_text(s['name']) for s in manifest['sources']) or '-'}")
    lines.append(f"- {manifest['started']} .. {manifest['finished'] or 'still running'} ({manifest['seconds']} s)"
                 + (" — INTERRUPTED, counts are partial" if manifest.get("interrupted") else ""))
    shards = manifest.get("shards")
    if shards:
        lines.append(f"- shards: {shards['committed']}/{shards['total']} committed"
                     + (f", **{len(shards['failed'])} failed**" if shards.get("failed") else "")
                     + (f"; resumed, {manifest['resume']['shards_redone']} shards redone" if manifest.get("resumed") else ""))
    if counts.get("bad_records"):
        lines.append(f"- **bad records: {counts['bad_records']}** (reported as `bad-input` findings)")
    for spec, note in (manifest.get("engine_notes") or {}).items():
        for warning in note.get("warnings", []):
            lines.append(f"- **warning** {_cell(spec)}: {md_text(warning)}")
        if "not_loaded" in note:
            lines.append(f"- **not loaded** {_cell(spec)}: {md_text(note['not_loaded'])}")
    unmeasured = not counts.get("chars") and manifest.get("hunt") in UNMEASURED
    lines += ["", "| samples | chars | tokens | verified | diverged | error | crash | timeout | skipped |",
              "|---|---|---|---|---|---|---|---|---|",
              "| " + " | ".join("not counted" if unmeasured and k in ("chars", "tokens") else str(counts[k])
                                for k in ("samples", "chars", "tokens", "verified", "diverged",
                                          "error", "crash", "timeout", "skipped")) + " |", ""]
    lines += ["## Per engine", "", "| engine | verified | diverged | error | crash | timeout | skipped |",
              "|---|---|---|---|---|---|---|"]
    for spec, tally in counts["per_engine"].items():
        lines.append(f"| {_cell(spec)} | " + " | ".join(str(tally[k]) for k in
                                                  ("verified", "diverged", "error", "crash", "timeout", "skipped")) + " |")
    lines.append("")
    lines += _skips_section(manifest)
    if clusters:
        lines += _causes_section(clusters) + _clusters_section(clusters)
    if findings:
        lines += [f"## Findings ({counts['findings']}; first {min(len(findings), MAX_LISTED)} listed, "
                  "all in divergences.jsonl)", "",
                  "| kind | engine | sample | token | byte | context | expected | actual | minimised |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for f in findings[:MAX_LISTED]:
            ctx = f.get("context") or {}
            context = f"{ctx.get('before', '')[-20:]}⟦{ctx.get('after', '')[:12]}" if ctx else ""
            exp = f.get("expected", {}).get("pieces") or f.get("expected", {}).get("ids") or ""
            act = f.get("actual", {}).get("pieces") or f.get("actual", {}).get("ids") or f.get("error", {}).get("message", "")
            lines.append(f"| {_cell(f['kind'])} | {_cell(f['engine'])} | {_cell(f['sample_id'])} | {f.get('token_index', '')} | "
                         f"{f.get('byte_offset', '')} | {_cell(context)} | {_cell(exp)} | {_cell(act)} | "
                         f"{_example((f.get('minimized') or {}).get('input'))} |")
        lines.append("")
    lines += _sessions_section(findings)
    return "\n".join(lines)


def _skips_section(manifest: dict[str, Any]) -> list[str]:
    """Why samples were skipped, per engine and reason, and what to do (``verify.reports.skips``)."""
    from verify.reports.skips import manifest_skip_rows, sample_unit

    rows = manifest_skip_rows(manifest)
    if not rows:
        return []
    unit = sample_unit(manifest)
    lines = [f"## Skipped ({sum(r.count for r in rows)} {unit}: never counted as verified)", "",
             "| engine | skipped | why | what to do |", "|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {_cell(row.engine)} | {row.count} | {md_text(row.reason)} | "
                     f"{md_text(row.remedy) if row.remedy else '-'} |")
    return lines + [""]


def _sessions_section(findings: list[dict[str, Any]]) -> list[str]:
    """Session findings: where in the session, what the engine said about the splice
    (for ``repair``: the certificate rules it relied on), the minimised (prefix, append)."""
    rows = [f for f in findings[:MAX_LISTED] if f.get("session")]
    if not rows:
        return []
    lines = ["## Session findings", "",
             "| engine | session | turn | prefix chars | append | replace_from | engine's notes | minimised prefix | "
             "minimised append |", "|---|---|---|---|---|---|---|---|---|"]
    for f in rows:
        s = f["session"]
        update = s.get("update") or {}
        notes = update.get("notes") or {}
        relied = notes.get("rules") if isinstance(notes, dict) else None
        shown = f"rules: {', '.join(map(str, relied))}" if relied else ", ".join(
            f"{k}={v}" for k, v in notes.items()) if isinstance(notes, dict) else str(notes)
        small = (f.get("minimized") or {}).get("session") or {}
        lines.append(f"| {_cell(f['engine'])} | {_cell(s.get('id'))} | {s.get('turn')} | {s.get('prefix_chars')} | "
                     f"{_example(s.get('append'))} | {update.get('replace_from', '')} | {_cell(shown)} | "
                     f"{_example(small.get('prefix')) if small else ''} | {_example(small.get('append')) if small else ''} |")
    return lines + [""]


def write_summary(out_dir: Path, manifest: dict[str, Any], findings: list[dict[str, Any]],
                  clusters: list[dict[str, Any]] | None = None, title: str = "verify run") -> Path:
    path = Path(out_dir) / "summary.md"
    atomic.write_text(path, render_summary(manifest, findings, clusters, title))
    return path


def hunt_title(manifest: dict[str, Any]) -> str:
    """The title of a run's reports, by the hunt that ran it (``verify replay --edits`` ...)."""
    from verify.reports.skips import replays_traces

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
