"""OUT/manifest.json (schema ``verify.manifest/2``): what ran, on what, with which
engines, and every count.

``command_manifest`` is the manifest of any command; ``run_manifest`` adds what a
sharded run knows (shards committed, failed, redone; sessions; completeness). Both
are rendered from what earlier stages committed, so ``verify triage OUT`` can
render them again later, elsewhere.
"""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from verify import __version__
from verify.findings import SCHEMA as DIVERGENCE_SCHEMA
from verify.keys import KEYS_VERSION
from verify import atomic

MANIFEST_SCHEMA = "verify.manifest/2"


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def command_manifest(*, argv: list[str], reference: dict | None, candidates: list[dict], sources: list[dict],
                     counts: dict, started: float, finished: float | None, engine_notes: dict | None = None,
                     interrupted: bool = False, complete: bool = True) -> dict[str, Any]:
    return {
        "schema": MANIFEST_SCHEMA,
        "harness": {"name": "verify", "version": __version__, "python": sys.version.split()[0],
                    "platform": platform.platform()},
        "keys_version": KEYS_VERSION,
        "command": argv,
        "reference": reference,
        "candidates": candidates,
        "engine_notes": engine_notes or {},
        "sources": sources,
        "counts": counts,
        "divergence_schema": DIVERGENCE_SCHEMA,
        "findings_file": "divergences.jsonl",
        "started": iso(started),
        "finished": iso(finished),
        "seconds": round(finished - started, 3) if finished is not None else None,
        "complete": complete,
        "interrupted": interrupted,
    }


def run_manifest(*, plan, counts: dict, committed: int, sessions: list[dict[str, Any]],
                 live: bool = False) -> dict[str, Any]:
    """A sharded run's manifest. ``live``: written while shards still run (``complete`` false)."""
    first, last = (sessions[0], sessions[-1]) if sessions else ({}, {})
    finished = None if live else last.get("finished")
    failed = [f for s in sessions[-1:] for f in s.get("failed", [])]
    manifest = command_manifest(
        argv=last.get("argv", []), reference=plan.identities.get(plan.reference),
        candidates=[plan.identities[s] for s in plan.candidates if s in plan.identities],
        sources=plan.sources, counts=counts, started=first.get("started") or 0.0, finished=finished,
        engine_notes=_notes(plan, sessions), interrupted=bool(last.get("interrupted")),
        complete=not live and committed == len(plan.shards),
    )
    manifest["shards"] = {"total": len(plan.shards), "committed": committed, "failed": failed}
    manifest["sessions"] = [{k: v for k, v in s.items() if k not in ("engine_notes",)} | {
        "started": iso(s.get("started")), "finished": iso(s.get("finished"))} for s in sessions]
    resumed = [s for s in sessions if s.get("resumed")]
    manifest["resumed"] = bool(resumed)
    if resumed:
        manifest["resume"] = {"sessions": len(sessions), "shards_redone": sum(s.get("shards_redone", 0) for s in resumed),
                              "shards_run_after_resume": sum(s.get("shards_run", 0) for s in resumed)}
    manifest["options"] = plan.options
    return manifest


def _notes(plan, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    notes = dict(sessions[-1].get("engine_notes") or {}) if sessions else {}
    for spec, why in plan.not_loaded.items():
        notes.setdefault(spec, {})["not_loaded"] = why
    return notes


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> Path:
    path = Path(out_dir) / "manifest.json"
    return atomic.write_json(path, manifest)
