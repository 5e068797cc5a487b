"""A gate suite (``ci/nightly.toml``): what ``verify gate`` runs, read and checked in full
before anything runs.

    load_suite(path) -> Suite

A suite is TOML: one ``[gate]`` table (the candidates, the reference, the allowlist,
how engines run) and ``[[check]]`` rows, each of one ``kind`` with its own budget
(``CHECK_KEYS``). Every value is checked here, so a typo, an unknown key or kind, a
wrong type or an unknown engine is one ``ConfigError`` line naming the row, and no
check has started. A relative path (allowlist, corpus or trace file) is taken from the
suite file's folder when it exists there, else from the current directory; ``cases``
and ``database`` always from the suite's folder. The format: ci/README.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from verify.engine_spec import EngineSpec
from verify.config import parse_spec
from verify.engines.registry import adapters
from verify.errors import ConfigError
from verify.executors.isolated import MAX_MEMORY_MB, MAX_TIMEOUT_S
from verify.limits import MAX_SECONDS
from verify.executors.workers import MAX_WORKERS
from verify.gate.kinds import KINDS
from verify.gate.suite_model import CheckSpec, Suite
from verify.toml_config import (boolean, checked, integer, read_toml,
                                 seconds, text, texts)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DEFAULT_MINIMIZE_BUDGET_S = 30.0


GATE_KEYS: dict[str, Callable] = {
    "name": text, "description": text, "reference": text, "candidates": texts, "allowlist": text,
    "workers": integer(1, MAX_WORKERS), "in_process": boolean, "timeout": seconds(True, MAX_TIMEOUT_S),
    "load_timeout": seconds(True, MAX_SECONDS), "memory_limit_mb": integer(64, MAX_MEMORY_MB),
    "minimize_budget": seconds(False), "fail_on_skip": boolean, "deadline": seconds(True, MAX_TIMEOUT_S),
}
COMMON_KEYS: dict[str, Callable] = {"name": text, "kind": text, "minimize_budget": seconds(False),
                                    "allow_skipped": boolean}

__all__ = ["CheckSpec", "Suite", "load_suite", "parse_suite"]


def _resolve(folder: Path, value: str) -> str:
    """A relative path from the suite's folder when it exists there, else as written (from
    the current directory); names (``smoke``, ``generated:7``, ``agent:3``) and URLs stay."""
    if "://" in value or ":" in value.split("/")[0] or Path(value).is_absolute():
        return value
    candidate = folder / value
    return str(candidate) if candidate.exists() else value


def _engine(spec: str, where: str) -> EngineSpec:
    """A suite's engine, parsed where the suite is read (unknown names raise UnknownEngineError,
    a ConfigError)."""
    parsed = parse_spec(spec)
    if parsed.adapter not in adapters():
        raise ConfigError(f"{where}: unknown engine adapter '{parsed.adapter}' in '{spec}' "
                          f"(adapters: {', '.join(adapters())})")
    return parsed


def parse_suite(doc: dict[str, Any], path: Path) -> Suite:
    where = str(path)
    extra = sorted(set(doc) - {"gate", "check"})
    if extra:
        raise ConfigError(f"{where}: unknown top-level key(s) {', '.join(extra)} (expected [gate] and [[check]])")
    gate = doc.get("gate")
    if not isinstance(gate, dict):
        raise ConfigError(f"{where}: needs a [gate] table (name, reference, candidates)")
    settings = checked(gate, GATE_KEYS, f"{where}: [gate]")
    for key in ("name", "reference", "candidates"):
        if key not in settings:
            raise ConfigError(f"{where}: [gate] needs '{key}'")
    reference, candidates = settings["reference"], settings["candidates"]
    if reference in candidates:
        raise ConfigError(f"{where}: [gate] '{reference}' is both the reference and a candidate")
    if "all" in candidates:
        raise ConfigError(f"{where}: [gate] candidates must be named engines, not 'all' (a gate tests what it names)")
    reference = _engine(reference, f"{where}: [gate]")
    candidates = [_engine(spec, f"{where}: [gate]") for spec in candidates]
    rows = doc.get("check")
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{where}: needs at least one [[check]] row")
    folder = path.parent
    default_budget = settings.get("minimize_budget", DEFAULT_MINIMIZE_BUDGET_S)
    checks: list[CheckSpec] = []
    names: set[str] = set()
    for i, row in enumerate(rows, 1):
        at = f"{where}: [[check]] {i}"
        if not isinstance(row, dict):
            raise ConfigError(f"{at} is not a table")
        kind = row.get("kind")
        if kind not in KINDS:
            raise ConfigError(f"{at}: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        at = f"{at} ({kind})"
        row_kind = KINDS[kind]
        values = checked(row, COMMON_KEYS | row_kind.options, at)
        options = {k: v for k, v in values.items() if k not in COMMON_KEYS}
        missing = [k for k in row_kind.required if k not in options]
        if missing:
            raise ConfigError(f"{at}: needs '{missing[0]}'")
        if row_kind.validate is not None:
            row_kind.validate(options, at)
        for key in ("corpus", "traces"):
            if key in options:
                options[key] = [_resolve(folder, v) for v in options[key]]
        for key in row_kind.paths & set(options):
            options[key] = str(folder / options[key]) if not Path(options[key]).is_absolute() else options[key]
        name = row.get("name") or (kind if kind not in names and not any(r.get("name") == kind for r in rows)
                                   else f"{kind}-{i}")
        if not NAME_RE.match(name):
            raise ConfigError(f"{at}: name {name!r} must be letters, digits, '.', '_' or '-' (a folder name)")
        if name in names:
            raise ConfigError(f"{at}: name '{name}' is used by another check")
        names.add(name)
        checks.append(CheckSpec(name, kind, options, values.get("minimize_budget", default_budget),
                                values.get("allow_skipped", False)))
    allowlist = settings.get("allowlist")
    allowlist_path = None
    if allowlist is not None:
        allowlist_path = Path(_resolve(folder, allowlist))
        if not allowlist_path.is_file():
            raise ConfigError(f"{where}: [gate] allowlist '{allowlist}' not found (looked in {folder} and the "
                              f"current directory)")
    return Suite(path=path, name=settings["name"], reference=reference, candidates=list(candidates), checks=checks,
                 allowlist=allowlist_path, description=settings.get("description", ""),
                 workers=settings.get("workers", 1), in_process=settings.get("in_process", False),
                 timeout_s=settings.get("timeout"), memory_limit_mb=settings.get("memory_limit_mb"),
                 fail_on_skip=settings.get("fail_on_skip", False), load_timeout_s=settings.get("load_timeout"),
                 deadline_s=settings.get("deadline"), raw=doc)


def load_suite(path: Path) -> Suite:
    return parse_suite(read_toml(path, "suite"), Path(path))
