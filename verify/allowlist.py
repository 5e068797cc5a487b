"""Allowlists: clusters a user has accepted, so that searching commands count them but
do not report them again (``verify fuzz --allowlist FILE``), and the nightly gate does
not fail on them (``verify gate``, ``ci/allowlist.toml``).

A cluster is named by its key (``verify.classify.signature_key``, the key triage
groups findings by, e.g. ``ids/Zs+Ll/Common+Latin/space|letter`` or
``error/ValueError``; the gate's own keys such as ``unicode/mismatch/unicode-17.0``
are in ci/README.md). The file is TOML, one ``[[allow]]`` row per accepted cluster::

    [[allow]]
    engine = "^python:my_engine"        # regex on the engine spec (searched, not anchored; "" = any)
    key = "ids/Sm+Ll/Common+Latin/symbol|letter"   # the exact cluster key, or instead:
    cluster = "^ids/Sm\\+"              # regex on the cluster key (searched, not anchored; "" = any)
    reason = "known: '<' handling, upstream #123"   # required: why it is accepted
    link = "https://github.com/org/engine/issues/123"   # optional: where it is tracked
    expires = 2026-12-31                # optional TOML date (or "YYYY-MM-DD"): the row applies
                                        # up to and including that day, then it is ignored

The regexes run on RE2 (``verify.user_regex``): linear time whatever they say, so a row such
as ``cluster = "^(.+)+Q$"`` costs microseconds, never a hung gate.

A row has ``key`` or ``cluster``, not both. A row that has expired is kept in
``Allowlist.expired`` (commands list it in their manifest; the gate fails on it) but
matches nothing (``match_expired`` says which expired row would have). Unknown keys
in a row are an error, so a typo does not silently widen or narrow a row.
"""

from __future__ import annotations

import datetime as dt

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.errors import ConfigError
from verify.toml_config import read_toml
from verify.user_regex import compile_user

ROW_KEYS = {"engine", "key", "cluster", "reason", "link", "expires"}


@dataclass(frozen=True)
class AllowRule:
    engine: Any  # a compiled regex (verify.user_regex): .search, .pattern
    cluster: Any
    reason: str
    expires: dt.date | None = None
    row: int = 0  # 1-based position in the file, for messages
    key: str | None = None  # the exact cluster key (instead of the ``cluster`` regex)
    link: str | None = None

    def matches(self, engine: str | None, key: str) -> bool:
        if not self.engine.search(engine or ""):
            return False
        return key == self.key if self.key is not None else bool(self.cluster.search(key))

    @property
    def names(self) -> str:
        """What the row accepts, as written: its key, or its cluster regex."""
        return self.key if self.key is not None else self.cluster.pattern

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "engine": self.engine.pattern, "key": self.key,
                "cluster": None if self.key is not None else self.cluster.pattern, "reason": self.reason,
                "link": self.link, "expires": self.expires.isoformat() if self.expires else None}


@dataclass
class Allowlist:
    rules: list[AllowRule] = field(default_factory=list)
    expired: list[AllowRule] = field(default_factory=list)
    path: Path | None = None

    def match(self, engine: str | None, key: str) -> AllowRule | None:
        """The first rule (in file order) that accepts ``key`` for ``engine``, else None."""
        return next((rule for rule in self.rules if rule.matches(engine, key)), None)

    def match_expired(self, engine: str | None, key: str) -> AllowRule | None:
        """The first expired rule that would have accepted ``key`` for ``engine``, else None."""
        return next((rule for rule in self.expired if rule.matches(engine, key)), None)

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None, "rules": [r.as_dict() for r in self.rules],
                "expired": [r.as_dict() for r in self.expired]}


def _date(value: Any, where: str) -> dt.date | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise ConfigError(f"{where}: 'expires' must be a date (2026-12-31), got {value!r}")


def _regex(row: dict, name: str, where: str):
    return compile_user(row.get(name, ""), where, name)


def parse_allowlist(doc: dict[str, Any], where: str = "allowlist", today: dt.date | None = None) -> Allowlist:
    """An ``Allowlist`` from an already-parsed TOML document (``{"allow": [rows]}``)."""
    today = today or dt.date.today()
    rows = doc.get("allow", [])
    if not isinstance(rows, list):
        raise ConfigError(f"{where}: 'allow' must be an array of tables ([[allow]] rows)")
    extra = set(doc) - {"allow"}
    if extra:
        raise ConfigError(f"{where}: unknown top-level key(s) {', '.join(sorted(extra))} (expected [[allow]] rows)")
    allowlist = Allowlist()
    for i, row in enumerate(rows, 1):
        at = f"{where}: [[allow]] row {i}"
        if not isinstance(row, dict):
            raise ConfigError(f"{at} is not a table")
        unknown = set(row) - ROW_KEYS
        if unknown:
            raise ConfigError(f"{at}: unknown key(s) {', '.join(sorted(unknown))} "
                              f"(allowed: {', '.join(sorted(ROW_KEYS))})")
        reason = row.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{at} needs a non-empty 'reason'")
        expires = _date(row.get("expires"), at)
        if "key" in row and "cluster" in row:
            raise ConfigError(f"{at}: give 'key' (the exact cluster key) or 'cluster' (a regex), not both")
        key = row.get("key")
        if key is not None and (not isinstance(key, str) or not key):
            raise ConfigError(f"{at}: 'key' must be a non-empty cluster key")
        link = row.get("link")
        if link is not None and not isinstance(link, str):
            raise ConfigError(f"{at}: 'link' must be a string (a URL or a path)")
        rule = AllowRule(_regex(row, "engine", at), _regex(row, "cluster", at), reason.strip(), expires, i, key,
                         link)
        (allowlist.expired if rule.expires is not None and rule.expires < today else allowlist.rules).append(rule)
    return allowlist


def load_allowlist(path: Path, today: dt.date | None = None) -> Allowlist:
    """Read an allowlist file. A missing or unreadable file is a ``ConfigError`` (the user named it)."""
    path = Path(path)
    doc = read_toml(path, "allowlist")
    allowlist = parse_allowlist(doc, f"allowlist {path}", today)
    allowlist.path = path
    return allowlist
