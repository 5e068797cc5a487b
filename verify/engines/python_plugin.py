"""The simplest plugin: ``python:MODULE:ATTR[?name=value&...]`` (docs/plugins.md).

``ATTR`` is a callable (a factory, or a class) returning any object with
``encode_batch(texts: list[str]) -> list[sequence of int]`` (lists or NumPy arrays). The
spec's options are the factory's keyword arguments, typed by its annotations
(``python:mypkg.engines:make?cache_mb=64&vocab=cl100k_base`` -> ``make(cache_mb=64,
vocab="cl100k_base")`` when ``cache_mb: int``); an option it has no parameter for is refused
in one line. ``entry``, ``pip`` and ``python`` are the harness's own.

What the object may declare as attributes (all optional):

``name``, ``version``   what it is: the manifest, the engine key of ledgers and baselines, and
                        regression cases record them beside the distribution that provides
                        the module and a digest of the module's files (``verify.engines.provenance``)
``vocabulary``          the vocabulary it encodes: a known name (``cl100k_base``) or a file path;
                        ``gate init`` then picks the reference without ``--reference``
``supports_special``    with ``encode_segments(segments: list[tuple[str, bool]])``: driven with
                        typed segments (special tokens where ``allow_special`` is true)
``entry_points``        its production calls, the default first (below)
``token_bytes(ids)``    the bytes of each token (offsets and pieces in reports)

An ``encode_batch(texts, *, allow_special=False)`` (or ``encode(text, *, allow_special=False)``)
that takes the keyword honours special tokens: it is called with ``allow_special=True`` for
segments that may hold them and ``False`` for plain text, where it must encode a special
token's literal as text. Without the keyword the engine receives plain text only: samples with
an ``allow_special=True`` segment are skipped for it (and counted as skipped).

Entry points (``verify.engines.base``): ``encode_batch`` is ``batch`` (the default),
``encode_segments`` is ``segments`` (with ``supports_special``), ``encode(text) -> ids`` is
``single``; ``entry_points = ("single", "batch")`` says which it has, in the order it wants
them tried; ``?entry=NAME`` drives one of them (``verify check --check api`` compares them).

An object with ``open_session()`` is a stateful engine too: the session object's
``append(text)`` returns the ids of the whole transcript so far (optionally
``state() -> bytes`` and ``open_session(state)`` to resume; see
``verify.engines.sessions``). ``encode_batch`` may then be left out: a stateless
encode opens a session, appends the text and closes it.

The module is imported with the current folder first on the import path, as ``python -m``
does, so ``python:mystack.tokenizer:make`` finds ``./mystack/tokenizer.py``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
import typing
from pathlib import Path
from typing import Any

from verify.engines.base import ENTRY_OPTION, Adapter, Capabilities, as_token_array
from verify.engines.environments import ENVIRONMENT_OPTIONS
from verify.errors import ConfigError

# entry point -> the method of the plugin object that is that call
PLUGIN_CALLS = {"single": "encode", "batch": "encode_batch", "segments": "encode_segments"}
HARNESS_OPTIONS = (ENTRY_OPTION, *ENVIRONMENT_OPTIONS)  # never the factory's
TRUE_WORDS, FALSE_WORDS = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def load_factory(target: str):
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"python engine spec needs MODULE:ATTR, got '{target}'")
    current_folder_importable()
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import engine module '{module_name}': {exc} (the current folder, "
                          f"{os.getcwd()}, is on the import path; is the module installed, or in it?)") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ConfigError(f"'{target}': {attr} is not a callable in {module_name}")
    return factory


def current_folder_importable() -> None:
    """The current folder first on the import path, as ``python -m`` puts it (the console script
    does not): a team's ``mystack/tokenizer.py`` loads from the project folder."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)


def factory_arguments(factory, options: dict[str, Any], target: str) -> dict[str, Any]:
    """The spec's options as the factory's keyword arguments, each converted to its parameter's
    annotation (``int``, ``float``, ``bool``, ``str``, ``pathlib.Path``, or ``X | None`` of
    those; unannotated: the text as written). Refuses, in one line, an option the factory has
    no parameter for, and a value its annotation cannot take."""
    given = {k: v for k, v in options.items() if k not in HARNESS_OPTIONS}
    if not given:
        return {}
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        raise ConfigError(f"'{target}': cannot read the parameters of {factory!r}, so its options cannot be "
                          "passed") from None
    try:
        hints = typing.get_type_hints(factory.__init__ if inspect.isclass(factory) else factory)
    except Exception:  # an annotation that does not evaluate: the text as written
        hints = {}
    params = signature.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    out = {}
    for key, value in given.items():
        if key not in named and not takes_any:
            raise ConfigError(f"'{target}': unknown option {key!r} (its factory takes: "
                              f"{', '.join(named) or 'no options'}; the harness's own: {', '.join(HARNESS_OPTIONS)})")
        out[key] = _typed(value, hints.get(key), key, target)
    return out


def _typed(value: Any, annotation: Any, key: str, target: str) -> Any:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)] if typing.get_args(annotation) \
        else [annotation]
    kind = kinds[0] if len(kinds) == 1 else None
    try:
        if kind is bool:
            if text.lower() not in TRUE_WORDS + FALSE_WORDS:
                raise ValueError(text)
            return text.lower() in TRUE_WORDS
        if kind in (int, float, Path):
            return kind(text)
    except ValueError:
        raise ConfigError(f"'{target}': option {key}={text!r} is not a {kind.__name__}") from None
    return text


def make_plugin(target: str, options: dict[str, Any]):
    factory = load_factory(target)
    return factory(**factory_arguments(factory, options, target))


def takes_allow_special(call) -> bool:
    """Whether a plugin's call takes ``allow_special`` as a keyword (it then honours special tokens)."""
    try:
        return "allow_special" in inspect.signature(call).parameters
    except (TypeError, ValueError):
        return False


def plugin_capabilities(engine, target: str) -> Capabilities:
    """What a plugin object can do, from what it has and declares."""
    sessions = callable(getattr(engine, "open_session", None))
    segments = bool(getattr(engine, "supports_special", False)) and callable(getattr(engine, "encode_segments", None))
    keyword = any(takes_allow_special(getattr(engine, call)) for call in ("encode_batch", "encode")
                  if callable(getattr(engine, call, None)))
    declared = getattr(engine, "entry_points", None)
    if declared is None:
        declared = (("batch",) if callable(getattr(engine, "encode_batch", None)) else ()) + (
            ("segments",) if segments else ())
    declared = tuple(declared)
    for name in declared:
        if name not in PLUGIN_CALLS or not callable(getattr(engine, PLUGIN_CALLS[name], None)) or (
                name == "segments" and not segments):
            raise ConfigError(f"'{target}' declares entry point {name!r} but has no {PLUGIN_CALLS.get(name, name)}() "
                              f"for it (entry points a plugin can have: {', '.join(PLUGIN_CALLS)}; segments needs "
                              "supports_special)")
    return Capabilities(special_tokens=segments or keyword, segments=segments,
                        decode=callable(getattr(engine, "token_bytes", None)), sessions=sessions,
                        entry_points=declared)


def declared_text(engine, attribute: str) -> str | None:
    value = getattr(engine, attribute, None)
    return None if value is None or callable(value) else str(value)


def plugin_vocabulary(engine) -> tuple[str | None, str | None]:
    """``(name, sha256)`` of the vocabulary a plugin declares (``vocabulary = "cl100k_base"`` or a
    file path): a known name's pinned hash, a file's own; nothing is fetched here."""
    from verify.vocab.known import KNOWN_VOCABS
    from verify.vocab.resolver import sha256_file

    vocab = declared_text(engine, "vocabulary")
    if vocab is None:
        return None, None
    if vocab in KNOWN_VOCABS:
        return vocab, KNOWN_VOCABS[vocab].sha256
    path = Path(vocab).expanduser()
    if path.is_file():
        return str(path.resolve()), sha256_file(path)
    raise ConfigError(f"the plugin declares vocabulary = {vocab!r}: neither a known vocabulary ("
                      f"{', '.join(sorted(KNOWN_VOCABS))}) nor a file")


class PythonPluginEngine(Adapter):
    adapter_name = "python"
    package = None
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False, entry_points=("batch",))

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.engine = make_plugin(target, self.options)
        self._adopt(self.engine, target)
        self.library_module = target.rpartition(":")[0]

    def _adopt(self, engine, where: str) -> None:
        """What the plugin object has and declares: capabilities, name, version, vocabulary."""
        self._sessions = callable(getattr(engine, "open_session", None))
        if not callable(getattr(engine, "encode_batch", None)) and not self._sessions:
            raise ConfigError(f"{where}: the plugin is a {type(engine).__name__}, which has neither "
                              "encode_batch(texts) nor open_session()")
        self.declared_name, self.declared_version = declared_text(engine, "name"), declared_text(engine, "version")
        self.name = self.declared_name or self.spec
        self.vocab_name, self.vocab_sha256 = plugin_vocabulary(engine)
        # Declared by the plugin itself; an instance attribute shadows the class default.
        self.capabilities = plugin_capabilities(engine, where)
        self._keyword = {call: takes_allow_special(getattr(engine, call)) for call in ("encode_batch", "encode")
                         if callable(getattr(engine, call, None))}
        self.check_entry()

    @classmethod
    def declared_entry_points(cls, target, options):
        """The plugin object's own declaration: the factory is called once to read it. A plugin
        that fails to start declares nothing here (it fails, in one line, when its engine starts)."""
        try:
            capabilities = plugin_capabilities(make_plugin(target, options), target)
        except Exception:
            return cls.capabilities, None
        entry = options.get("entry")
        declared = capabilities.entry_points
        return capabilities, str(entry) if entry is not None else (declared[0] if declared else None)

    def identity(self):
        return dataclasses.replace(super().identity(), name=self.declared_name, version=self.declared_version)

    def encode_texts(self, texts, allow_special):
        if self.route is None:  # a session-only plugin
            return [self._encode_in_session(t) for t in texts]
        keyword = self._keyword.get(PLUGIN_CALLS.get(self.route, ""), False)
        if allow_special and self.capabilities.segments and self.route != "segments" and not keyword:
            # the plugin's only special-token path: its segments call, one text each
            self.ran("segments", len(texts), len(texts))
            return [as_token_array(self.engine.encode_segments([(t, True)])) for t in texts]
        return super().encode_texts(texts, allow_special)

    def encode_one(self, text, allow_special):
        if self._keyword.get("encode"):
            return self.engine.encode(text, allow_special=bool(allow_special))
        return self.engine.encode(text)

    def encode_many(self, texts, allow_special):
        if self._keyword.get("encode_batch"):
            return self.engine.encode_batch(list(texts), allow_special=bool(allow_special))
        return self.engine.encode_batch(list(texts))

    def token_bytes(self, ids):
        return [bytes(b) for b in self.engine.token_bytes([int(i) for i in as_token_array(ids)])]

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
        return PluginSession(inner, special=self.capabilities.segments)

    def encode_segments(self, segments):
        return as_token_array(self.engine.encode_segments([(s.text, s.allow_special) for s in segments]))
