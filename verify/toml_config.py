"""Reading the declarative side (engines/, corpora/, ci/, adversarial/tags.toml, chat
templates): one reader and the validators every TOML file shares, so each mistake is one
``ConfigError`` line naming the file and the key.

    doc = read_toml(path, "allowlist")            # {} for a missing file with missing_ok=True
    known_keys(doc, {"name", "begin"}, "chat template x.toml")
    strings(doc.get("corpus"), "[check.x] corpus")
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable

from verify.errors import ConfigError
from verify.limits import MAX_COUNT, MAX_SECONDS, MAX_SEED, seconds_problem, whole_problem


def parse_toml(text: str, what: str) -> dict[str, Any]:
    """The document; invalid TOML, or TOML nested deeper than the parser recurses (Python's
    recursion limit, about 1,000 levels), is one ``ConfigError`` line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{what}: TOML nested deeper than Python parses (its recursion limit)") from None


def read_toml(path: Path, what: str | None = None, *, missing_ok: bool = False) -> dict[str, Any]:
    """The document of a TOML file. ``what`` names it in errors (default: the path);
    a missing file is ``{}`` with ``missing_ok``, else a ``ConfigError``."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    if missing_ok and not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: cannot read: {exc}") from None
    return parse_toml(text, label)


# --- value checkers: (value, where) -> normalised value, or ConfigError ------------------

def checked(doc: dict[str, Any], keys: dict[str, Callable], where: str) -> dict[str, Any]:
    """Every key of ``doc`` through its checker; an unknown key is an error naming the allowed ones."""
    unknown = sorted(set(doc) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(keys))})")
    return {k: keys[k](v, f"{where}: '{k}'") for k, v in doc.items()}


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a non-empty string")
    return value


def texts(value: Any, where: str) -> list[str]:
    """A string or a non-empty array of strings -> list."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where} must be a string or a non-empty array of strings")
    return list(value)


def strings(value: Any, where: str) -> tuple[str, ...]:
    """An array of strings (possibly empty)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false")
    return value


def integer(minimum: int, maximum: int = MAX_COUNT) -> Callable[[Any, str], int]:
    """A whole number from ``minimum`` to ``maximum`` (the CLI's bound for the same option: one
    check, ``verify.limits.whole_problem``, for both)."""
    def check(value: Any, where: str) -> int:
        problem = whole_problem(value, minimum, maximum)
        if problem:
            raise ConfigError(f"{where} {problem}")
        return value
    return check


def seconds(minimum_exclusive: bool, maximum: float = MAX_SECONDS) -> Callable[[Any, str], float]:
    """A finite number of seconds above 0 (or from 0) up to ``maximum`` (``verify.limits.seconds_problem``)."""
    def check(value: Any, where: str) -> float:
        problem = seconds_problem(value, zero_ok=not minimum_exclusive, high=maximum)
        if problem:
            raise ConfigError(f"{where} {problem}")
        return float(value)
    return check


def fraction(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ConfigError(f"{where} must be a fraction in (0, 1]")
    return float(value)


def choices(*allowed: str) -> Callable[[Any, str], list[str]]:
    def check(value: Any, where: str) -> list[str]:
        values = texts(value, where)
        bad = [v for v in values if v not in allowed]
        if bad:
            raise ConfigError(f"{where}: unknown value(s) {', '.join(bad)} (allowed: {', '.join(allowed)})")
        return values
    return check


def table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table")
    return value


POSITIVE, NON_NEGATIVE = integer(1), integer(0)
SEED = integer(0, MAX_SEED)  # as the CLI's --seed
