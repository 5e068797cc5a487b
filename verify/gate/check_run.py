"""What one check of a gate is given and what it gives back.

    CheckContext  the suite, the check's spec, its folder OUT/checks/NAME, the allowlist
    CheckRun      how it ran (``ran``, ``skipped`` when its capability is missing, ``error``
                  with ``error_class`` config or harness), counts and throughput from the
                  manifests, the clusters found, and ``problems``: failures that are no
                  cluster (skipped samples, an incomplete run, unverified samples that no
                  cluster explains). Whether it passes is decided with the allowlist
                  (``verify.gate.verdict``). Saved as OUT/checks/NAME/gate-check.json.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verify import atomic
from verify.counts import STATES, Counts

if TYPE_CHECKING:
    from verify.gate.suite import CheckSpec, Suite

RESULT_FILE = "gate-check.json"
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

    def to_json(self) -> dict[str, Any]:
        return {"schema": RESULT_SCHEMA, **asdict(self)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "CheckRun":
        return cls(**{k: v for k, v in doc.items() if k != "schema"})


# --- helpers ---------------------------------------------------------------------------

def manifest_of(out: Path) -> dict[str, Any]:
    path = out / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def tally(run: CheckRun, outs: list[Path], allow_skipped: bool) -> None:
    """Counts, throughput and the failures that are no cluster, from the manifests in ``outs``."""
    total, seconds = Counts(), 0.0
    for out in outs:
        manifest = manifest_of(out)
        if not manifest:
            run.problems.append(f"{out.name}: no manifest.json: the command wrote no report")
            continue
        total.add(Counts.from_dict(manifest.get("counts") or {}))
        seconds += float(manifest.get("seconds") or 0.0)
        if not manifest.get("complete", False):
            run.problems.append(f"incomplete: {manifest.get('aborted') or 'shards failed or were not run'} "
                                f"(see {out.name}/manifest.json; verify gate --resume retries)")
    counts = total.as_dict()
    per_engine = counts.pop("per_engine")
    run.counts = counts
    run.throughput = {"samples_per_s": round(total.samples / seconds, 3) if seconds else None,
                      "mb_per_s": round(total.bytes / 1e6 / seconds, 6) if seconds else None,
                      "seconds": round(seconds, 3)}
    skipped = {spec: t["skipped"] for spec, t in per_engine.items() if t.get("skipped")}
    if skipped:
        text = "; ".join(f"{spec}: {n} samples skipped" for spec, n in skipped.items()) + \
            " (the engine cannot take them, e.g. special-token segments without special-token support)"
        (run.notes if allow_skipped else run.problems).append(text + (" -- allowed by allow_skipped" if allow_skipped
                                                                      else " -- allow_skipped = true accepts this"))
    unverified = sum(counts[s] for s in STATES if s not in ("verified", "skipped")) + counts["bad_records"]
    if unverified and not run.clusters:
        run.problems.append(f"{unverified} samples not verified and no cluster explains them")


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
    atomic.write_json(out / RESULT_FILE, run.to_json())


def load_run(out: Path) -> CheckRun | None:
    path = out / RESULT_FILE
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    return CheckRun.from_json(doc) if doc.get("schema") == RESULT_SCHEMA else None
