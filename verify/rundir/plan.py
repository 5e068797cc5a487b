"""The run plan (``OUT/plan.json``, schema ``verify.plan/2``): everything that decides a
run's results, written before the first shard runs.

Every command that sends inputs through engines is a *hunt* with a plan: ``run`` (corpora
and traces), ``unicode``, ``vocab-sweep``, ``fuzz``, ``check``, ``recheck``, ``shadow``,
``length``. ``options`` holds every option that changes what a shard gives.

``--resume OUT`` reads it back. A resumed run must be the same run: the same hunt, the
same engines (same identities, so an upgraded package is refused), the same sources cut
into the same shards, the same options. Only how the work is spread (``--workers``,
``--executor``) and what happens after the shards (``--minimize-budget``) may differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.corpora.shards import Shard
from verify.engine_spec import EngineSpec
from verify.engines.catalogue import ALL
from verify.config import parse_spec
from verify.errors import CorruptFileError, UsageError, one_line
from verify.keys import KEYS_VERSION, engine_key
from verify.rundir.layout import PLAN_FILE, RunFolder
from verify import atomic

SCHEMA = "verify.plan/2"

@dataclass
class RunPlan:
    hunt: str  # run | unicode | vocab-sweep | fuzz | check | recheck | shadow | length
    reference: EngineSpec | str  # "" for a hunt without one
    requested: list[EngineSpec | str]  # the candidates as asked for (``all`` included)
    candidates: list[EngineSpec]  # what that expands to; once started, the ones that loaded
    optional: list[EngineSpec]  # swept in by --candidate all: left out (and reported) when they do not load
    corpora: list[str]
    sources: list[dict[str, Any]]
    shards: list[Shard]
    options: dict[str, Any]  # every option that changes what a shard gives
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)  # spec -> identity, once started
    not_loaded: dict[str, str] = field(default_factory=dict)
    traces: list[str] = field(default_factory=list)  # agent traces replayed turn by turn

    @property
    def specs(self) -> list[EngineSpec]:
        """Every engine, the reference first (a hunt without a reference -- regression cases
        name their own -- has ``reference`` empty)."""
        return [self.reference, *self.candidates] if self.reference else list(self.candidates)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "keys_version": KEYS_VERSION, "hunt": self.hunt, "reference": self.reference,
                "requested": self.requested, "candidates": self.candidates, "optional": self.optional, "corpora": self.corpora,
                "sources": self.sources, "options": self.options, "identities": self.identities,
                "not_loaded": self.not_loaded, "traces": self.traces,
                "shards": [s.to_json() for s in self.shards]}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "RunPlan":
        return cls(hunt=doc["hunt"], reference=_spec(doc["reference"]), requested=[_spec(s) for s in doc["requested"]],
                   candidates=[_spec(s) for s in doc["candidates"]], optional=[_spec(s) for s in doc["optional"]],
                   corpora=list(doc["corpora"]), sources=list(doc["sources"]),
                   shards=[Shard.from_json(s) for s in doc["shards"]], options=dict(doc["options"]),
                   identities=dict(doc.get("identities", {})), not_loaded=dict(doc.get("not_loaded", {})),
                   traces=list(doc.get("traces", [])))

    @property
    def kind(self) -> str:
        return self.hunt

    def save(self, out: Path) -> None:
        atomic.write_json(RunFolder(out).plan, self.to_json(), indent=1)


def _spec(text: str) -> EngineSpec | str:
    """An engine of a saved plan, parsed as the plan is read (``--resume``): the hunt is handed the
    value, as a new run's plan is. ``all`` and a hunt's empty reference stay as written."""
    return text if text in ("", ALL) else parse_spec(text)


def load_plan(out: Path) -> RunPlan:
    path = RunFolder(out).plan
    if not path.is_file():
        raise UsageError(f"--resume {out}: no {PLAN_FILE} there (not a verify run directory, or it never started)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise CorruptFileError(f"--resume {out}: unreadable {PLAN_FILE} ({one_line(str(exc)) or 'nested too deeply'})"
                               ) from None
    if not isinstance(doc, dict):
        raise CorruptFileError(f"--resume {out}: {PLAN_FILE} is not a verify plan (a JSON {type(doc).__name__})")
    if doc.get("schema") != SCHEMA or doc.get("keys_version") != KEYS_VERSION:
        raise UsageError(f"--resume {out}: the run was written by another harness version "
                         f"({doc.get('schema')}, keys {doc.get('keys_version')}); start a new run")
    try:
        plan = RunPlan.from_json(doc)
        [s.id for s in plan.shards]  # every shard descriptor is whole
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise CorruptFileError(f"--resume {out}: {PLAN_FILE} is not a verify plan ({type(exc).__name__}: "
                               f"{one_line(str(exc))}): changed since the run started?") from None
    return plan


def check_same_run(saved: RunPlan, fresh: RunPlan, out: Path) -> None:
    """Refuse (one line) to resume ``saved`` with anything that would change its results."""
    def refuse(what: str, was: Any, now: Any) -> None:
        raise UsageError(f"--resume {out}: the run used {what} {was!r}, this command asks for {now!r}; "
                         "results would mix, so start a new run (another --out) instead")

    if saved.hunt != fresh.hunt:
        raise UsageError(f"--resume {out}: that folder holds a 'verify {saved.hunt}' run, not 'verify {fresh.hunt}'")
    for name, flag in (("reference", "--reference"), ("requested", "--candidate"), ("corpora", "--corpus"),
                       ("traces", "--traces")):
        if getattr(saved, name) != getattr(fresh, name):
            refuse(flag, getattr(saved, name), getattr(fresh, name))
    for name in sorted(set(saved.options) | set(fresh.options)):
        if saved.options.get(name) != fresh.options.get(name):
            refuse(f"{name}=", saved.options.get(name), fresh.options.get(name))
    if [s.id for s in saved.shards] != [s.id for s in fresh.shards]:
        raise UsageError(f"--resume {out}: the inputs are no longer cut into the same shards (files added, "
                         "removed or resized, or another vocabulary, since the run started); start a new run")


def check_same_engines(saved: dict[str, dict[str, Any]], now: dict[str, dict[str, Any]], out: Path) -> None:
    for spec, identity in saved.items():
        if spec in now and engine_key(identity) != engine_key(now[spec]):
            before, after = _build_line(identity), _build_line(now[spec])
            raise UsageError(f"--resume {out}: engine '{spec}' changed since the run started ({before} -> {after}); "
                             "start a new run")


def _build_line(identity: dict[str, Any]) -> str:
    """``fastokens-b10 0.2.17, fingerprint d61f..., build 4a84...``: what a resume refusal shows of an engine."""
    line = f"{identity.get('package')} {identity.get('package_version')}, fingerprint {identity.get('fingerprint')}"
    return line + (f", build {str(identity['files_digest'])[:12]}" if identity.get("files_digest") else "")
