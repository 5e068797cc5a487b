"""The simplest plugin: ``python:MODULE:ATTR``.

``ATTR`` is a zero-argument callable returning any object with
``encode_batch(texts: list[str]) -> list[sequence of int]`` (lists or NumPy
arrays) and optionally a ``name`` attribute. Such an engine receives plain text
only: it is never asked to emit special tokens, so samples with an
``allow_special=True`` segment are skipped for it (and counted as skipped).

An object that also has ``encode_segments(segments: list[tuple[str, bool]])``
and sets ``supports_special = True`` is driven with segments instead.

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


class PythonPluginEngine(Adapter):
    adapter_name = "python"
    package = None
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.engine = load_factory(target)()
        self._sessions = callable(getattr(self.engine, "open_session", None))
        if not callable(getattr(self.engine, "encode_batch", None)) and not self._sessions:
            raise ConfigError(f"'{target}' returned {type(self.engine).__name__}, which has neither "
                              "encode_batch(texts) nor open_session()")
        self.name = getattr(self.engine, "name", None) or target
        special = getattr(self.engine, "supports_special", False) and \
            callable(getattr(self.engine, "encode_segments", None))
        if special or self._sessions:
            # Declared by the plugin itself; an instance attribute shadows the class default.
            self.capabilities = Capabilities(special_tokens=bool(special), segments=bool(special), decode=False,
                                             sessions=self._sessions)

    def encode_texts(self, texts, allow_special):
        if allow_special and self.capabilities.segments:  # the plugin's own special-token path
            return [as_token_array(self.engine.encode_segments([(t, True)])) for t in texts]
        if not callable(getattr(self.engine, "encode_batch", None)):  # a session-only plugin
            return [self._encode_in_session(t) for t in texts]
        return [as_token_array(ids) for ids in self.engine.encode_batch(list(texts))]

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
