"""One row of the adapter registry: where an adapter lives and what it needs. (A parsed engine
spec, ``EngineSpec``, is a core value: ``verify.engine_spec``.)"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from verify.engine_spec import EngineSpec
from verify.errors import EngineUnavailableError

__all__ = ["AdapterEntry", "EngineSpec", "describe_adapter"]


@dataclass(frozen=True)
class AdapterEntry:
    name: str
    target: str  # "module:Class"
    requires: str | None  # importable module the adapter needs
    install_hint: str
    summary: str
    origin: str = "built-in"

    def installed(self) -> bool:
        return self.requires is None or importlib.util.find_spec(self.requires) is not None

    def load(self) -> type:
        if not self.installed():
            raise EngineUnavailableError(f"engine adapter '{self.name}' needs {self.requires}: {self.install_hint}")
        module_name, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module_name), attr)


def describe_adapter(entry: AdapterEntry) -> str:
    """One block of `verify engines` output. Imports the adapter only when installed."""
    from verify.engines.base import package_version
    from verify.engines.provenance import provider

    if not entry.installed():
        return f"{entry.name:16} not installed  ({entry.install_hint})  {entry.summary}"
    cls = entry.load()
    def shown(value) -> str:
        return ", ".join(value) if isinstance(value, (tuple, list)) else str(value)

    caps = ", ".join(f"{k}={shown(v)}" for k, v in cls.capabilities.as_dict().items() if v not in (False, None, (), []))
    found = provider(entry.requires, digest=False) if entry.requires else None
    if found is not None and found.distribution:  # what is installed here: a fork under its own name too
        package, version = found.distribution, found.version or "-"
    else:
        package, version = cls.package or entry.origin, package_version(cls.package) or "-"
    offline = getattr(importlib.import_module(cls.__module__), "OFFLINE_VOCABS", None)
    line = f"{entry.name:16} {package} {version}  [{caps}]  {entry.summary}"
    supported = getattr(cls, "supported_builds", None)
    if supported:
        line += f"\n{'':16} builds it supports: {supported}"
    if offline is not None:
        line += f"\n{'':16} offline vocabularies here: {', '.join(offline) or 'none (hub only)'}"
    return line
