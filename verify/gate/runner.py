"""The whole gate: read the suite, run (or keep) every check, judge, write the reports.

    run_gate(suite_path, out, baseline=None, resume=False, argv=()) -> GateResult

OUT holds ``suite.json`` (the suite as run and its digest), ``checks/NAME/`` per check
(the command's own report plus ``gate-check.json`` once it finished), then
``gate.json`` (``verify.gate/1``), ``junit.xml`` and, where those writers are
installed, ``report.html`` and ``ci-summary.md``. Running a suite again into an OUT that
holds a finished gate starts a new attempt: the earlier one moves to ``OUT/attempts/N/`` and
is the baseline (unless ``--baseline`` names another). The suite's ``deadline`` (or
``--deadline S``) bounds the whole gate: a check it cuts, or one it leaves no time to start,
fails and says so (``verify.gate.deadline``). With ``resume`` a finished check
keeps its result, a corpus or replay check that was cut short continues its run, any
other unfinished check runs again; the allowlist is read again, so editing it and
resuming judges the same results anew. Exit codes: 0 pass, 1 fail, 2 a configuration
error (in the suite, or in a check: an engine that does not load, a missing corpus),
3 a harness bug in a check.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.errors import UsageError
from verify.exit_codes import ExitCode
from verify.gate.checks import CheckContext, CheckRun, load_run, run_check, save_run
from verify.gate.deadline import Deadline
from verify.gate.suite import Suite, load_suite
from verify.gate.verdict import evaluate, load_baseline
from verify.rundir.layout import LOCK_FILE
from verify.rundir.lock import out_lock
from verify.rundir.paths import folder_to_write
from verify import atomic, jsonl

SUITE_FILE = "suite.json"
ATTEMPTS_DIR = "attempts"  # OUT/attempts/N/: the finished gates OUT held before this one
GATE_FILE = "gate.json"
JUNIT_FILE = "junit.xml"
OPTIONAL_REPORTS = (("verify.reports.html", "write_html"), ("verify.reports.ci_markdown", "write_ci_summary"))
# The gate's names for the one table (verify/exit_codes.py).
EXIT_PASS, EXIT_FAIL, EXIT_CONFIG, EXIT_HARNESS = ExitCode.OK, ExitCode.FINDINGS, ExitCode.USAGE, ExitCode.HARNESS_BUG


@dataclass
class GateResult:
    doc: dict[str, Any]
    out: Path
    exit_code: int


def _prepare_out(out: Path, suite: Suite, resume: bool) -> Path | None:
    """Make OUT ready; returns where an earlier, finished gate in OUT was kept (None: none was):
    running a suite again into the same --out starts a new attempt, the earlier one moved to
    ``OUT/attempts/N/`` and taken as the baseline."""
    folder_to_write(out, "--out")
    saved = out / SUITE_FILE
    if resume:
        if not saved.is_file():
            raise UsageError(f"--resume {out}: no gate was started there (no {SUITE_FILE})")
        doc = jsonl.load(saved)
        if doc.get("digest") != suite.digest():
            raise UsageError(f"--resume {out}: the suite's engines or checks changed since that gate started "
                             f"({doc.get('path')}); run it into a new --out")
        return None
    kept = None
    if (out / GATE_FILE).is_file():  # a finished gate: the new attempt's baseline
        kept = _keep_attempt(out)
    elif out.is_dir() and any((out / name).exists() for name in (SUITE_FILE, "checks")):
        raise UsageError(f"--out {out} holds a gate that did not finish: continue it with --resume, or choose "
                         "another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(saved, json.dumps({"schema": "verify.gate-suite/1", "path": str(suite.path), "name": suite.name,
                                     "digest": suite.digest(), "suite": suite.raw}, indent=2, default=str) + "\n")
    return kept


def _keep_attempt(out: Path) -> Path:
    """Move everything of the finished gate in OUT (but earlier attempts) to ``OUT/attempts/N/``."""
    folder = out / ATTEMPTS_DIR
    numbers = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() else []
    dest = folder / str(max(numbers, default=0) + 1)
    dest.mkdir(parents=True)
    for entry in sorted(out.iterdir()):
        if entry.name not in (ATTEMPTS_DIR, LOCK_FILE):  # the lock stays: this gate holds it
            entry.rename(dest / entry.name)
    return dest


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
             argv: list[str] | tuple = (), deadline: float | None = None, allow_skipped: bool = False) -> GateResult:
    from verify.allowlist import load_allowlist

    started = time.time()
    suite = load_suite(Path(suite_path))
    if allow_skipped:  # --allow-skipped: as allow_skipped = true on every check
        suite.checks = [dataclasses.replace(c, allow_skipped=True) for c in suite.checks]
    allowlist = load_allowlist(suite.allowlist) if suite.allowlist else None
    previous = load_baseline(baseline) if baseline is not None else None
    out = Path(out)
    folder_to_write(out, "--out")
    with out_lock(out):  # one gate per OUT at a time
        return _run_locked(suite, suite_path, out, allowlist, previous, baseline, resume, argv, started, deadline)


def _run_locked(suite: Suite, suite_path: Path, out: Path, allowlist, previous, baseline, resume: bool, argv,
                started: float, deadline: float | None) -> GateResult:
    from verify import __version__
    from verify.reports.junit import write_junit
    from verify.rundir.manifest import iso

    earlier = _prepare_out(out, suite, resume)
    if earlier is not None:
        print(f"gate: {out} held a finished gate: kept as {earlier}"
              + (", this gate's baseline" if previous is None else f" (the baseline is {baseline})"), file=sys.stderr)
        previous = previous if previous is not None else load_baseline(earlier)
    limit = deadline if deadline is not None else suite.deadline_s
    clock = Deadline(limit, "--deadline" if deadline is not None else "[gate] deadline")
    runs: list[CheckRun] = []
    for spec in suite.checks:
        check_out = out / "checks" / spec.name
        kept = load_run(check_out) if resume else None
        if kept is not None and kept.digest == spec.digest() and kept.state != "error" and not kept.cut:
            print(f"gate: {spec.name}: kept from the earlier session", file=sys.stderr, flush=True)
            runs.append(kept)
            continue
        ctx = CheckContext(suite, spec, check_out, f"checks/{spec.name}", allowlist,
                           ["gate", str(suite_path), "--check", spec.name])
        if clock.passed():
            run = clock.not_started(spec)
        else:
            print(f"gate: {spec.name} ({spec.kind}) ...", file=sys.stderr, flush=True)
            run = clock.run(ctx, run_check)
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
