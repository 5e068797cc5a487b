"""OUT/manifest.json: what ran, on what, with which engines, and every count."""

from __future__ import annotations

import json
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from verify import __version__
from verify.findings import SCHEMA as DIVERGENCE_SCHEMA

MANIFEST_SCHEMA = "verify.manifest/1"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


def build_manifest(*, argv: list[str], reference: dict, candidates: list[dict], sources: list[dict],
                   counts: dict, started: float, finished: float, engine_notes: dict | None = None,
                   interrupted: bool = False) -> dict[str, Any]:
    return {
        "schema": MANIFEST_SCHEMA,
        "harness": {"name": "verify", "version": __version__, "python": sys.version.split()[0],
                    "platform": platform.platform()},
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
        "seconds": round(finished - started, 3),
        "interrupted": interrupted,
    }


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> Path:
    path = out_dir / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
