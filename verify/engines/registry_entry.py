"""One row of the adapter registry: where an adapter lives and what it needs."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from verify.errors import EngineUnavailableError


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
