"""The values a gate suite is read into: one ``CheckSpec`` per ``[[check]]`` row and the
``Suite`` that holds them. They live apart from the reader (``verify.gate.suite``) so that
the check kinds, which the reader dispatches to, can name them without importing it back."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.engine_spec import EngineSpec
from verify.executors.isolated import DEFAULT_TIMEOUT_S
from verify.executors.pool import EngineOptions


@dataclass(frozen=True)
class CheckSpec:
    name: str
    kind: str
    options: dict[str, Any]  # the row's own keys, checked and normalised
    minimize_budget: float
    allow_skipped: bool = False  # samples an engine cannot take are a note, not a failure

    def digest(self) -> str:
        """What the check's result depends on: a resumed gate keeps a result only for the same spec."""
        doc = {"name": self.name, "kind": self.kind, "options": self.options, "minimize_budget": self.minimize_budget,
               "allow_skipped": self.allow_skipped}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class Suite:
    path: Path
    name: str
    reference: EngineSpec  # parsed where the suite is read
    candidates: list[EngineSpec]
    checks: list[CheckSpec]
    allowlist: Path | None = None
    description: str = ""
    workers: int = 1
    in_process: bool = False
    timeout_s: float | None = None
    memory_limit_mb: int | None = None
    fail_on_skip: bool = False
    load_timeout_s: float | None = None
    deadline_s: float | None = None  # the whole gate's (verify.gate.deadline); not in the digest: a resume may
    #                                  change it
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def digest(self) -> str:
        """The suite's checks and engines (not the allowlist's contents: those may change between
        a gate and its ``--resume``, which evaluates again)."""
        doc = {"reference": self.reference, "candidates": self.candidates, "checks": [c.digest() for c in self.checks],
               "workers": self.workers, "in_process": self.in_process, "timeout": self.timeout_s,
               "memory_limit_mb": self.memory_limit_mb}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]

    def engine_options(self) -> EngineOptions:
        loading = {"load_timeout_s": self.load_timeout_s} if self.load_timeout_s else {}
        return EngineOptions(isolate=not self.in_process, timeout_s=self.timeout_s or DEFAULT_TIMEOUT_S,
                             memory_limit_mb=self.memory_limit_mb, **loading)
