"""Engine adapters: one small module per engine behind one protocol (``base.Engine``)."""

from verify.engines.base import Adapter, Capabilities, Engine, EngineIdentity
from verify.engines.registry import build_engine, list_adapters

__all__ = ["Adapter", "Capabilities", "Engine", "EngineIdentity", "build_engine", "list_adapters"]
