"""OUT/report.html: one self-contained static page (inline CSS and SVG, no script,
nothing fetched) rendered from the committed files of OUT by jinja2 templates.

    write_html(out_dir) -> Path

A gate folder (``gate.json``) gets the gate's own page (``gate.html.j2``: its verdict,
checks, plots per check, clusters by status, baseline); any other folder the run's
(``report.html.j2``: titled by the command that ran, counts in its unit -- turns, edit
scripts -- skips with why and what to do, clusters, findings, session findings). Links
go only to files that exist in OUT.

The page carries a strict Content-Security-Policy: nothing may load, no script may
run, and the only style allowed is the report's own (by its SHA-256). Autoescaping
is on for every template and every expression; corpus text reaches the templates
already passed through ``verify.reports.visible`` (control, bidi and invisible
characters as escapes), and a ``finalize`` hook escapes any invisible character
that reached an expression some other way.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
from pathlib import Path
from typing import Any

from verify.counts import STATES
from verify.reports.plots import bar_chart, column_chart, line_chart
from verify.reports.report_data import ReportData, load_report
from verify.reports.gate_view import section_title
from verify.reports.views import THROUGHPUT_FLAG, UNMEASURED
from verify.reports.visible import reveal_invisible, visible
from verify.rundir.layout import FINDINGS_FILE, REPORT_FILE, RunFolder
STATUS_CLASSES = ("pass", "fail", "error", "skipped", "new", "allowlisted", "unchanged", "expired", "matched", "stale",
                  "empty", "fixed", "not_rechecked", "unknown")
MAX_GATE_ROWS = 200  # clusters listed per status on the gate page; the rest are counted
IDENTITY_FIELDS = ("spec", "name", "version", "package", "package_version", "vocab", "vocab_sha256", "fingerprint",
                   "files_digest", "environment")


def _finalize(value: Any) -> Any:
    from markupsafe import Markup

    if isinstance(value, Markup):  # a macro's output: template text, its expressions already finalized
        return value
    return reveal_invisible(value) if isinstance(value, str) else "" if value is None else value


def environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("verify.reports", "templates"), autoescape=True, undefined=StrictUndefined,
                      finalize=_finalize, trim_blocks=True, lstrip_blocks=True)
    env.filters["separated"] = separated
    env.globals["status_class"] = lambda s: s if s in STATUS_CLASSES else "other"
    env.globals["section_title"] = section_title
    env.globals["FINDINGS_FILE"] = FINDINGS_FILE
    return env


BREAK_AFTER = re.compile(r"(?<=[/:|?&=+,])")


def separated(value: Any) -> list[str]:
    """An engine spec or a cluster key in the pieces it may wrap between: after each ``/``, ``:``,
    ``|``, ``?``, ``&``, ``=``, ``+`` and ``,``, never inside a word (``m.breakable`` puts a
    ``<wbr>`` between them)."""
    return [part for part in BREAK_AFTER.split("" if value is None else str(value)) if part]


def content_security_policy(css: str) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'sha256-{digest}'; img-src 'none'; script-src 'none'; "
            "object-src 'none'; base-uri 'none'; form-action 'none'")


def _identity(e: dict[str, Any] | None) -> dict[str, Any] | None:
    def shown(key: str, value: Any) -> str:
        if key == "environment" and isinstance(value, dict):  # the requirements it was made for
            return ", ".join(value.get("requirements") or []) or str(value.get("python"))
        return str(value)

    return None if not e else {k: (None if e.get(k) is None else shown(k, e.get(k))) for k in IDENTITY_FIELDS}


def _source(s: dict[str, Any]) -> dict[str, str]:
    detail = [f"{k} {s[k]}" for k in ("kind", "shards", "text_field") if s.get(k) not in (None, "")]
    if isinstance(s.get("files"), list):
        detail.append(f"{len(s['files'])} file(s)")
    return {"name": visible(str(s.get("name", "?")), 200), "detail": ", ".join(detail)}


def _run(manifest: dict[str, Any]) -> dict[str, Any]:
    shards = manifest.get("shards") or {}
    failed = len(shards.get("failed") or [])
    return {"started": manifest.get("started") or "—", "finished": manifest.get("finished") or "still running",
            "seconds": manifest.get("seconds") if manifest.get("seconds") is not None else "—",
            "shards": f"{shards.get('committed', 0)}/{shards.get('total', 0)} committed"
                      + (f", {failed} failed" if failed else "") if shards else "",
            "interrupted": bool(manifest.get("interrupted")), "rate": overall_rate(manifest),
            "command": visible(shlex.join(["verify", *map(str, manifest.get("command") or [])]), 600)}


def _warnings(manifest: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for spec, note in (manifest.get("engine_notes") or {}).items():
        for warning in (note or {}).get("warnings", []) or []:
            rows.append({"engine": spec, "text": visible(str(warning), 300)})
        if (note or {}).get("not_loaded"):
            rows.append({"engine": spec, "text": visible(f"not loaded: {note['not_loaded']}", 300)})
    return rows


def run_title(manifest: dict[str, Any]) -> str:
    """The command that wrote the run, as its reports are titled: ``verify replay-edits``, ``verify run``."""
    from verify.reports.markdown import hunt_title

    return hunt_title(manifest)


def overall_rate(manifest: dict[str, Any]) -> str:
    """``2,003 samples in 12.1 s: 166 samples/s, 172k chars/s`` from the manifest's counts and seconds
    (``turns`` for a replay; no chars/s where the hunt does not count characters)."""
    from verify.reports.skips import sample_unit

    counts, seconds = manifest.get("counts") or {}, manifest.get("seconds")
    if not seconds or not isinstance(seconds, (int, float)):
        return ""
    unit, n = sample_unit(manifest), counts.get("samples", 0)
    chars = "" if manifest.get("hunt") in UNMEASURED and not counts.get("chars") else \
        f", {counts.get('chars', 0) / seconds:,.0f} chars/s"
    return f"{n:,} {unit} in {seconds:,.1f} s: {n / seconds:,.0f} {unit}/s{chars}"


def _plots(data: ReportData) -> dict[str, dict]:
    return {
        "by_class": bar_chart("By class (kind / character classes at the first difference)", data.by_class),
        "by_script": bar_chart("By Unicode script at the first difference", data.by_script),
        "by_engine": bar_chart("By engine", data.by_engine),
        "by_position": column_chart("By position in the corpus (findings per shard)",
                                    [(i, n) for i, n, _ in data.by_shard], data.shards_total,
                                    empty="no shards (not a sharded run)" if not data.shards_total else
                                    "no shards committed"),
        "throughput": line_chart("Throughput: samples committed over time", [(t, n) for t, n, _ in data.throughput],
                                 y_unit="samples", empty="no timed shard commits (not a sharded run)"
                                 + (f"; overall {overall_rate(data.manifest)}" if overall_rate(data.manifest) else "")),
    }


def _sessions(data: ReportData) -> list[dict[str, Any]]:
    dash = "—"
    return [{"session": s.get("session", dash), "started": s.get("started_at") or dash,
             "finished": s.get("finished_at") or "no end (killed?)", "workers": s.get("workers", dash),
             "shards_run": s.get("shards_run", dash), "samples": s.get("samples", dash),
             "chars": dash if data.unmeasured else s.get("chars", dash),
             "chars_per_s": s.get("chars_per_s") if s.get("chars_per_s") is not None and not data.unmeasured else dash,
             "resumed": "yes" if s.get("resumed") else "no"} for s in data.sessions]


def render_gate_html(data: ReportData) -> str:
    """The page of a gate folder: the gate's own header, checks, plots, clusters by status, baseline."""
    from verify.reports.gate_plots import gate_plots

    env = environment()
    css = env.get_template("report.css").render()
    return env.get_template("gate.html.j2").render(
        d=data, csp=content_security_policy(css), states=STATES, plots=gate_plots(data.gate, data.out),
        max_rows=MAX_GATE_ROWS, flag_percent=round(THROUGHPUT_FLAG * 100))


def render_shadow_html(shadow: dict[str, Any]) -> str:
    """The page of a shadow folder (``verify.reports.shadow_view``): status, first and last seen,
    versions, reproducers and why one was not minimised, per cluster."""
    env = environment()
    css = env.get_template("report.css").render()
    return env.get_template("shadow.html.j2").render(d=shadow, csp=content_security_policy(css))


def render_html(data: ReportData) -> str:
    if data.gate is not None:
        return render_gate_html(data)
    from verify.reports.shadow_view import load_shadow

    shadow = load_shadow(data.out) if data.out is not None else None
    if shadow is not None:
        return render_shadow_html(shadow)
    env = environment()
    css = env.get_template("report.css").render()
    counts = {k: data.counts.get(k, 0) for k in ("samples", "chars", "tokens", "bad_records", *STATES)}
    per_engine = [(spec, {k: tally.get(k, 0) for k in STATES})
                  for spec, tally in (data.counts.get("per_engine") or {}).items()]
    return env.get_template("report.html.j2").render(
        d=data, title=run_title(data.manifest), csp=content_security_policy(css), reference=_identity(data.reference),
        candidates=[_identity(c) for c in data.candidates], sources=[_source(s) for s in data.manifest.get("sources") or []],
        run=_run(data.manifest), warnings=_warnings(data.manifest), counts=counts, states=STATES,
        per_engine=per_engine, plots=_plots(data), sessions=_sessions(data))


def write_html(out_dir: Path, data: ReportData | None = None) -> Path:
    """OUT/report.html from ``data`` (or from OUT's files when not given)."""
    out_dir = Path(out_dir)
    path = RunFolder(out_dir).report
    tmp = path.with_name(f".{REPORT_FILE}.tmp")
    tmp.write_text(render_html(data or load_report(out_dir)), encoding="utf-8")
    tmp.replace(path)
    return path
