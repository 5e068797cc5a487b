"""What one check of a gate is given and what it gives back.

    CheckContext  the suite, the check's spec, its folder OUT/checks/NAME, the allowlist
    CheckRun      how it ran (``ran``, ``skipped`` when its capability is missing, ``error``
                  with ``error_class`` config or harness), counts and throughput from the
                  manifests, the clusters found, and ``problems``: failures that are no
                  cluster (skipped samples, an incomplete run, unverified samples that no
                  cluster explains, a check that ran nothing), ``skips`` (per engine and
                  reason, with the remedy: ``verify.reports.skips``) and ``empty`` (the parts
                  of the check its budget left empty, from the hunt's own notes, in the suite's
                  words: a part that ran nothing fails the check, naming the key to raise). Whether it
                  passes is decided with the allowlist (``verify.gate.verdict``). Saved as
                  OUT/checks/NAME/gate-check.json.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from verify import atomic
from verify.counts import STATES, Counts
from verify.gate.suite_model import CheckSpec, Suite
from verify.rundir.layout import GATE_CHECK_FILE, RunFolder

RESULT_FILE = GATE_CHECK_FILE  # the name verify.gate.checks re-exports
RESULT_SCHEMA = "verify.gate-check/1"


@dataclass
class CheckContext:
    suite: "Suite"
    spec: "CheckSpec"
    out: Path  # OUT/checks/NAME
    rel: str  # "checks/NAME", as gate.json names it
    allowlist: Any  # verify.allowlist.Allowlist
    argv: list[str] = field(default_factory=list)


@dataclass
class CheckRun:
    name: str
    kind: str
    digest: str
    state: str = "ran"  # ran | skipped | error
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    throughput: dict[str, float | None] = field(default_factory=dict)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    error_class: str | None = None  # config | harness
    detail: str | None = None  # a harness bug's whole message (a worker's traceback)
    skips: list[dict[str, Any]] = field(default_factory=list)  # {engine, reason, count, remedy} per engine and reason
    empty: list[str] = field(default_factory=list)  # parts of the check that ran nothing, as the hunt noted them
    cut: str | None = None  # the gate's deadline cut it, or left it no time to start (verify.gate.deadline)

    def to_json(self) -> dict[str, Any]:
        return {"schema": RESULT_SCHEMA, **asdict(self)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "CheckRun":
        return cls(**{k: v for k, v in doc.items() if k != "schema"})


# --- helpers ---------------------------------------------------------------------------

def manifest_of(out: Path) -> dict[str, Any]:
    from verify import jsonl

    path = RunFolder(out).manifest
    return jsonl.load(path) if path.is_file() else {}


# a hunt's notes name its command's flags; in a gate the same knob is a suite key
SUITE_KEYS = {"--stress-budget": "stress_seconds", "--budget": "seconds", "--max-examples": "examples",
              "--max-chars": "max_chars", "--limit": "limit", "--minimize-budget": "minimize_budget",
              "--timeout": "timeout", "--memory-limit-mb": "memory_limit_mb"}


def in_suite_terms(note: str) -> str:
    """A hunt's note as a gate says it: ``(raise --stress-budget)`` -> ``(raise stress_seconds)``."""
    return re.sub(r"--[a-z][a-z-]*", lambda m: SUITE_KEYS.get(m.group(0), m.group(0)), note)


def _hunt_notes(manifest: dict[str, Any]) -> list[str]:
    """The notes a hunt wrote into its own manifest section (``check.notes``: a stress phase
    its budget left empty): each says that part of the check ran nothing."""
    notes = []
    for name, section in manifest.items():
        if name != "engine_notes" and isinstance(section, dict) and isinstance(section.get("notes"), list):
            notes += [str(n) for n in section["notes"] if isinstance(n, str) and n]
    return notes


def tally(run: CheckRun, outs: list[Path], allow_skipped: bool) -> None:
    """Counts, throughput, skips and the failures that are no cluster, from the manifests in ``outs``."""
    from verify.reports.skips import describe, replays_traces, skip_rows

    total, seconds, traces = Counts(), 0.0, False
    for out in outs:
        manifest = manifest_of(out)
        if not manifest:
            run.problems.append(f"{out.name}: no manifest.json: the command wrote no report")
            continue
        total.add(Counts.from_dict(manifest.get("counts") or {}))
        seconds += float(manifest.get("seconds") or 0.0)
        traces = traces or replays_traces(manifest)
        for note in _hunt_notes(manifest):
            note = in_suite_terms(note)
            note = f"{out.name}: {note}" if len(outs) > 1 else note  # which candidate's run, when there are several
            if note not in run.empty:  # a part its budget left empty: the check did not check it, so it fails
                run.empty.append(note)
                run.problems.append(f"ran nothing: {note}")
        if not manifest.get("complete", False):
            run.problems.append(f"incomplete: {manifest.get('aborted') or 'shards failed or were not run'} "
                                f"(see {out.name}/manifest.json; verify gate --resume retries)")
    counts = total.as_dict()
    counts.pop("per_engine")
    counts.pop("skipped_reasons", None)
    run.counts = counts
    run.throughput = {"samples_per_s": round(total.samples / seconds, 3) if seconds else None,
                      "mb_per_s": round(total.bytes / 1e6 / seconds, 6) if seconds else None,
                      "seconds": round(seconds, 3)}
    rows = skip_rows(total.as_dict(), traces=traces)
    run.skips = [row.as_dict() for row in rows]
    if rows:
        unit = "turns" if traces else "samples"
        text = "; ".join(describe(row, unit) for row in rows)
        (run.notes if allow_skipped else run.problems).append(text + (" -- allowed by allow_skipped" if allow_skipped
                                                                      else " -- allow_skipped = true accepts this"))
    unverified = sum(counts[s] for s in STATES if s not in ("verified", "skipped")) + counts["bad_records"]
    if unverified and not run.clusters:
        run.problems.append(f"{unverified} samples not verified and no cluster explains them")
    if total.samples and total.states["skipped"] == total.samples and allow_skipped:
        run.empty.append(f"every one of its {total.samples} samples was skipped: nothing was compared")
    if run.state == "ran" and outs and not total.samples and not total.bad_records and not run.clusters \
            and not run.problems:
        run.problems.append("ran nothing: 0 samples checked (a budget, a limit or a corpus left it empty), "
                            "so it cannot pass")


def one_line(text: str, limit: int = 400) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = " (more in gate-check.json)" if "\n" in text.strip() else ""
    return (first[:limit] + ("..." if len(first) > limit else "")) + more


def fresh_folder(out: Path) -> None:
    """A check that cannot resume starts again in an empty folder."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)


def save_run(run: CheckRun, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(RunFolder(out).gate_check, run.to_json())


def load_run(out: Path) -> CheckRun | None:
    path = RunFolder(out).gate_check
    if not path.is_file():
        return None
    try:  # a result changed since (not JSON, of the wrong shape) is not kept: the check runs again
        doc = json.loads(path.read_text(encoding="utf-8"))
        return CheckRun.from_json(doc) if isinstance(doc, dict) and doc.get("schema") == RESULT_SCHEMA else None
    except (OSError, ValueError, TypeError, RecursionError):
        return None
