"""The whole gate: read the suite, run (or keep) every check, judge, write the reports.

    run_gate(suite_path, out, baseline=None, resume=False, argv=()) -> GateResult

OUT holds ``suite.json`` (the suite as run and its digest), ``checks/NAME/`` per check
(the command's own report plus ``gate-check.json`` once it finished), then
``gate.json`` (``verify.gate/1``), ``junit.xml`` and, where those writers are
installed, ``report.html`` and ``ci-summary.md``. With ``resume`` a finished check
keeps its result, a corpus or replay check that was cut short continues its run, any
other unfinished check runs again; the allowlist is read again, so editing it and
resuming judges the same results anew. Exit codes: 0 pass, 1 fail, 2 a configuration
error (in the suite, or in a check: an engine that does not load, a missing corpus),
3 a harness bug in a check.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.errors import UsageError
from verify.gate.checks import CheckContext, CheckRun, load_run, run_check, save_run
from verify.gate.suite import Suite, load_suite
from verify.gate.verdict import evaluate, load_baseline
from verify.rundir.lock import out_lock
from verify.rundir.paths import folder_to_write
from verify import atomic, jsonl

SUITE_FILE = "suite.json"
GATE_FILE = "gate.json"
JUNIT_FILE = "junit.xml"
OPTIONAL_REPORTS = (("verify.reports.html", "write_html"), ("verify.reports.ci_markdown", "write_ci_summary"))
EXIT_PASS, EXIT_FAIL, EXIT_CONFIG, EXIT_HARNESS = 0, 1, 2, 3


@dataclass
class GateResult:
    doc: dict[str, Any]
    out: Path
    exit_code: int


def _prepare_out(out: Path, suite: Suite, resume: bool) -> None:
    folder_to_write(out, "--out")
    saved = out / SUITE_FILE
    if resume:
        if not saved.is_file():
            raise UsageError(f"--resume {out}: no gate was started there (no {SUITE_FILE})")
        doc = jsonl.load(saved)
        if doc.get("digest") != suite.digest():
            raise UsageError(f"--resume {out}: the suite's engines or checks changed since that gate started "
                             f"({doc.get('path')}); run it into a new --out")
        return
    if out.is_dir() and any((out / name).exists() for name in (SUITE_FILE, GATE_FILE, "checks")):
        raise UsageError(f"--out {out} already holds a gate: continue it with --resume, or choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(saved, json.dumps({"schema": "verify.gate-suite/1", "path": str(suite.path), "name": suite.name,
                                     "digest": suite.digest(), "suite": suite.raw}, indent=2, default=str) + "\n")


def _write_optional_reports(out: Path) -> list[str]:
    """The HTML report and the CI summary, when their writers are installed."""
    written = []
    for module_name, function in OPTIONAL_REPORTS:
        try:
            found = importlib.util.find_spec(module_name) is not None
        except ImportError:
            found = False
        if not found:
            continue
        path = getattr(importlib.import_module(module_name), function)(out)
        written.append(Path(path).name if path else module_name.rsplit(".", 1)[1])
    return written


def _line(check: dict[str, Any], clusters: list[dict[str, Any]]) -> str:
    mine = [c for c in clusters if check["name"] in (c.get("checks") or [])]
    by_status: dict[str, int] = {}
    for c in mine:
        by_status[c["status"]] = by_status.get(c["status"], 0) + 1
    found = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
    samples = (check.get("counts") or {}).get("samples", 0)
    text = f"{samples} samples" + (f", clusters: {found}" if found else "")
    if check.get("note"):
        text += f" -- {check['note']}"
    return f"{check['name']:16} {check['kind']:11} {check['status'].upper():7} {check['seconds']:7.1f}s  {text}"


def run_gate(suite_path: Path, out: Path, baseline: Path | None = None, resume: bool = False,
             argv: list[str] | tuple = ()) -> GateResult:
    from verify.allowlist import load_allowlist

    started = time.time()
    suite = load_suite(Path(suite_path))
    allowlist = load_allowlist(suite.allowlist) if suite.allowlist else None
    previous = load_baseline(baseline) if baseline is not None else None
    out = Path(out)
    folder_to_write(out, "--out")
    with out_lock(out):  # one gate per OUT at a time
        return _run_locked(suite, suite_path, out, allowlist, previous, resume, argv, started)


def _run_locked(suite: Suite, suite_path: Path, out: Path, allowlist, previous, resume: bool, argv,
                started: float) -> GateResult:
    from verify import __version__
    from verify.reports.junit import write_junit
    from verify.rundir.manifest import iso

    _prepare_out(out, suite, resume)
    runs: list[CheckRun] = []
    for spec in suite.checks:
        check_out = out / "checks" / spec.name
        kept = load_run(check_out) if resume else None
        if kept is not None and kept.digest == spec.digest() and kept.state != "error":
            print(f"gate: {spec.name}: kept from the earlier session", file=sys.stderr, flush=True)
            runs.append(kept)
            continue
        print(f"gate: {spec.name} ({spec.kind}) ...", file=sys.stderr, flush=True)
        ctx = CheckContext(suite, spec, check_out, f"checks/{spec.name}", allowlist,
                           ["gate", str(suite_path), "--check", spec.name])
        run = run_check(ctx)
        save_run(run, check_out)
        runs.append(run)
    doc = evaluate(suite, runs, allowlist, previous)
    finished = time.time()
    doc.update({"reference": suite.reference, "candidates": suite.candidates, "suite_file": str(suite.path),
                "allowlist_file": str(suite.allowlist) if suite.allowlist else None,
                "harness": {"name": "verify", "version": __version__}, "command": ["verify", *argv],
                "started": iso(started), "finished": iso(finished), "seconds": round(finished - started, 3)})
    classes = {r.error_class for r in runs}
    code = EXIT_HARNESS if "harness" in classes else EXIT_CONFIG if "config" in classes else \
        EXIT_FAIL if doc["verdict"] == "fail" else EXIT_PASS
    doc["exit_code"] = code
    atomic.write_text(out / GATE_FILE, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    write_junit(out / JUNIT_FILE, doc)
    for check in doc["checks"]:
        print(_line(check, doc["clusters"]))
    why = f" ({'; '.join(doc['reasons'])})" if doc["reasons"] else ""
    skipped = [c["name"] for c in doc["checks"] if c["status"] == "skipped"]
    empty = [c["name"] for c in doc["checks"] if c.get("empty")]
    why += f"; skipped: {', '.join(skipped)}" if skipped else ""
    why += f"; parts that ran nothing: {', '.join(empty)}" if empty else ""
    print(f"gate {suite.name}: {doc['verdict'].upper()}{why} -> {out / GATE_FILE}, {out / JUNIT_FILE}", flush=True)
    reports = _write_optional_reports(out)  # after the verdict is out: a broken writer cannot hide it
    if reports:
        print(f"reports: {', '.join(str(out / name) for name in reports)}")
    return GateResult(doc, out, code)
