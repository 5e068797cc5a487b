"""The simplest plugin: ``python:MODULE:ATTR``.

``ATTR`` is a zero-argument callable returning any object with
``encode_batch(texts: list[str]) -> list[sequence of int]`` (lists or NumPy
arrays) and optionally a ``name`` attribute. Such an engine receives plain text
only: it is never asked to emit special tokens, so samples with an
``allow_special=True`` segment are skipped for it (and counted as skipped).

An object that also has ``encode_segments(segments: list[tuple[str, bool]])``
and sets ``supports_special = True`` is driven with segments instead.

Entry points (``verify.engines.base``): ``encode_batch`` is ``batch`` (the default),
``encode_segments`` is ``segments`` (with ``supports_special``). An object that has
more production calls says which, in the order it wants them tried, the default first:
``entry_points = ("single", "batch")``, where ``single`` is ``encode(text) -> ids``.
``?entry=NAME`` drives one of them (``verify check --check api`` compares them).

An object with ``open_session()`` is a stateful engine too: the session object's
``append(text)`` returns the ids of the whole transcript so far (optionally
``state() -> bytes`` and ``open_session(state)`` to resume; see
``verify.engines.sessions``). ``encode_batch`` may then be left out: a stateless
encode opens a session, appends the text and closes it.
"""

from __future__ import annotations

import importlib

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.errors import ConfigError

# entry point -> the method of the plugin object that is that call
PLUGIN_CALLS = {"single": "encode", "batch": "encode_batch", "segments": "encode_segments"}


def load_factory(target: str):
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"python engine spec needs MODULE:ATTR, got '{target}'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import engine module '{module_name}': {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ConfigError(f"'{target}': {attr} is not a callable in {module_name}")
    return factory


def plugin_capabilities(engine, target: str) -> Capabilities:
    """What a plugin object can do, from what it has and declares."""
    sessions = callable(getattr(engine, "open_session", None))
    special = bool(getattr(engine, "supports_special", False)) and callable(getattr(engine, "encode_segments", None))
    declared = getattr(engine, "entry_points", None)
    if declared is None:
        declared = (("batch",) if callable(getattr(engine, "encode_batch", None)) else ()) + (
            ("segments",) if special else ())
    declared = tuple(declared)
    for name in declared:
        if name not in PLUGIN_CALLS or not callable(getattr(engine, PLUGIN_CALLS[name], None)) or (
                name == "segments" and not special):
            raise ConfigError(f"'{target}' declares entry point {name!r} but has no {PLUGIN_CALLS.get(name, name)}() "
                              f"for it (entry points a plugin can have: {', '.join(PLUGIN_CALLS)}; segments needs "
                              "supports_special)")
    return Capabilities(special_tokens=special, segments=special, decode=False, sessions=sessions,
                        entry_points=declared)


class PythonPluginEngine(Adapter):
    adapter_name = "python"
    package = None
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False, entry_points=("batch",))

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.engine = load_factory(target)()
        self._sessions = callable(getattr(self.engine, "open_session", None))
        if not callable(getattr(self.engine, "encode_batch", None)) and not self._sessions:
            raise ConfigError(f"'{target}' returned {type(self.engine).__name__}, which has neither "
                              "encode_batch(texts) nor open_session()")
        self.name = getattr(self.engine, "name", None) or target
        # Declared by the plugin itself; an instance attribute shadows the class default.
        self.capabilities = plugin_capabilities(self.engine, target)
        self.check_entry()

    @classmethod
    def declared_entry_points(cls, target, options):
        """The plugin object's own declaration: the factory is called once to read it. A plugin
        that fails to start declares nothing here (it fails, in one line, when its engine starts)."""
        try:
            capabilities = plugin_capabilities(load_factory(target)(), target)
        except Exception:
            return cls.capabilities, None
        entry = options.get("entry")
        declared = capabilities.entry_points
        return capabilities, str(entry) if entry is not None else (declared[0] if declared else None)

    def encode_texts(self, texts, allow_special):
        if self.route is None:  # a session-only plugin
            return [self._encode_in_session(t) for t in texts]
        if allow_special and self.capabilities.segments and self.route != "segments":
            # the plugin's only special-token path: its segments call, one text each
            self.ran("segments", len(texts), len(texts))
            return [as_token_array(self.engine.encode_segments([(t, True)])) for t in texts]
        return super().encode_texts(texts, allow_special)

    def encode_one(self, text, allow_special):
        return self.engine.encode(text)

    def encode_many(self, texts, allow_special):
        return self.engine.encode_batch(list(texts))

    def _encode_in_session(self, text: str):
        session = self.engine.open_session()
        try:
            return as_token_array(session.append(text))
        finally:
            if callable(getattr(session, "close", None)):
                session.close()

    def open_session(self, state: bytes | None = None):
        from verify.engines.sessions import PluginSession

        inner = self.engine.open_session(state) if state is not None else self.engine.open_session()
        return PluginSession(inner, special=self.capabilities.special_tokens)

    def encode_segments(self, segments):
        return as_token_array(self.engine.encode_segments([(s.text, s.allow_special) for s in segments]))
