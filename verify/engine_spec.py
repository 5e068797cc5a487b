"""A parsed engine spec: the value an engine is built from (``verify.engines.registry.parse_spec``
reads one from text such as ``tiktoken:cl100k_base?chunk=400000``; ``engines/*.toml`` name them).
A core value, so that the declarative side (``verify.config``) can hold one without importing
the engines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class EngineSpec:
    """A parsed engine spec (``verify.engines.registry.parse_spec``)."""

    adapter: str
    target: str
    options: dict[str, Any]
    text: str  # how the user wrote it (or the named spec's name)
