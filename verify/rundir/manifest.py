"""OUT/manifest.json (schema ``verify.manifest/3``): what ran, on what, with which
engines, and every count.

``command_manifest`` is the common part; ``run_manifest`` adds what a sharded run knows
(shards committed, failed, redone; attempts; completeness) and the hunt's own section
(``OUT/hunt.json``: ``unicode``, ``vocab_sweep``, ``fuzz``, ``check``, ``recheck`` ...).
It is rendered from what earlier stages committed, so ``verify triage OUT`` can render
it again later, elsewhere.
"""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from typing_extensions import NotRequired, TypedDict

from verify import __version__
from verify.findings import SCHEMA as DIVERGENCE_SCHEMA
from verify.keys import KEYS_VERSION
from verify.rundir.layout import FINDINGS_FILE, RunFolder
from verify import atomic

MANIFEST_SCHEMA = "verify.manifest/3"
HUNT_SCHEMA = "verify.hunt/1"


class ShardTally(TypedDict):
    total: int
    committed: int
    failed: list[Any]


class Manifest(TypedDict):
    """``OUT/manifest.json`` (``verify.manifest/3``; docs/schema.md): what ran, on what, with which
    engines, and every count. A sharded run adds ``shards`` to ``options`` (``run_manifest``); ``triage`` comes from
    ``triage.json``; then the hunt's own sections (``hunt.json``), each present only for its hunt."""

    schema: str
    harness: dict[str, str]
    keys_version: int
    command: list[str]
    reference: dict[str, Any] | None
    candidates: list[dict[str, Any]]
    engine_notes: dict[str, Any]
    sources: list[dict[str, Any]]
    counts: dict[str, Any]
    divergence_schema: str
    findings_file: str
    started: str | None
    finished: str | None
    seconds: float | None
    complete: bool
    interrupted: bool
    shards: NotRequired[ShardTally]
    hunt: NotRequired[str]
    attempts: NotRequired[list[dict[str, Any]]]
    resumed: NotRequired[bool]
    resume: NotRequired[dict[str, int]]
    options: NotRequired[dict[str, Any]]
    triage: NotRequired[dict[str, Any]]
    # the hunts' sections (hunt.json)
    unicode: NotRequired[dict[str, Any]]
    vocab_sweep: NotRequired[dict[str, Any]]
    fuzz: NotRequired[dict[str, Any]]
    check: NotRequired[dict[str, Any]]
    recheck: NotRequired[dict[str, Any]]
    shadow: NotRequired[dict[str, Any]]
    edits: NotRequired[dict[str, Any]]
    length: NotRequired[dict[str, Any]]
    certify: NotRequired[dict[str, Any]]
    statement: NotRequired[str]  # certify's certificate in words
    reports: NotRequired[dict[str, str]]  # a hunt's own reports: title -> file in OUT


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def command_manifest(*, argv: list[str], reference: dict | None, candidates: list[dict], sources: list[dict],
                     counts: dict, started: float, finished: float | None, engine_notes: dict | None = None,
                     interrupted: bool = False, complete: bool = True) -> Manifest:
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
        "findings_file": FINDINGS_FILE,
        "started": iso(started),
        "finished": iso(finished),
        "seconds": round(finished - started, 3) if finished is not None else None,
        "complete": complete,
        "interrupted": interrupted,
    }


def run_manifest(*, plan, counts: dict, committed: int, attempts: list[dict[str, Any]],
                 live: bool = False, hunt: dict[str, Any] | None = None) -> Manifest:
    """A sharded run's manifest. ``live``: written while shards still run (``complete`` false).
    ``hunt``: the hunt's own sections (``read_hunt``)."""
    sessions = attempts
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
    manifest["hunt"] = plan.hunt
    manifest["attempts"] = [{k: v for k, v in s.items() if k not in ("engine_notes",)} | {
        "started": iso(s.get("started")), "finished": iso(s.get("finished"))} for s in sessions]
    resumed = [s for s in sessions if s.get("resumed")]
    manifest["resumed"] = bool(resumed)
    if resumed:
        manifest["resume"] = {"attempts": len(sessions), "shards_redone": sum(s.get("shards_redone", 0) for s in resumed),
                              "shards_run_after_resume": sum(s.get("shards_run", 0) for s in resumed)}
    manifest["options"] = plan.options
    if hunt:
        manifest.update(hunt)
    return manifest


def write_hunt(out_dir: Path, sections: dict[str, Any]) -> Path:
    """The hunt's own manifest sections, committed once its shards are merged."""
    return atomic.write_json(RunFolder(out_dir).hunt, {"schema": HUNT_SCHEMA, "manifest": sections})


def read_hunt(out_dir: Path) -> dict[str, Any]:
    from verify import jsonl
    from verify.errors import CorruptFileError

    path = RunFolder(out_dir).hunt
    if not path.is_file():
        return {}
    doc = jsonl.load(path)
    if doc.get("schema") != HUNT_SCHEMA:
        return {}
    if not isinstance(doc.get("manifest") or {}, dict):
        raise CorruptFileError(f"{path}: 'manifest' is not an object: not a file verify wrote (changed since?)")
    return dict(doc.get("manifest") or {})


def _notes(plan, sessions: list[dict[str, Any]]) -> dict[str, Any]:
    notes = dict(sessions[-1].get("engine_notes") or {}) if sessions else {}
    for spec, why in plan.not_loaded.items():
        notes.setdefault(spec, {})["not_loaded"] = why
    return notes


def write_manifest(out_dir: Path, manifest: Manifest) -> Path:
    return atomic.write_json(RunFolder(out_dir).manifest, manifest)


def committed_manifest(out_dir: Path, plan=None, store=None, markers: dict | None = None) -> Manifest:
    """The manifest of a run folder from what it committed: plan, shard markers, attempts, hunt."""
    from verify.rundir.attempts import read_attempts
    from verify.rundir.plan import load_plan
    from verify.rundir.store import ShardStore

    plan = plan or load_plan(out_dir)
    store = store or ShardStore(out_dir)
    markers = markers if markers is not None else store.committed([s.id for s in plan.shards])
    return run_manifest(plan=plan, counts=store.totals(markers).as_dict(), committed=len(markers),
                        attempts=read_attempts(out_dir), hunt=read_hunt(out_dir))
