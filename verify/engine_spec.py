"""A parsed engine spec: the value an engine is built from, parsed once where the text comes in.

``verify.config.parse_spec`` reads one from text such as ``tiktoken:cl100k_base?chunk=400000`` or
a named spec of ``engines/*.toml`` (a core function, so that any room can parse at its edge without
importing the engines). Text becomes a value once, where it comes in:

  a hunt's engines        ``verify.engines.catalogue.run_engines`` / ``engine_values`` (the command
                          line's text or engines/defaults.toml's; every hunt's ``plan()``)
  a gate suite            ``verify.gate.suite`` (its [gate] reference and candidates)
  a regression case       ``verify.adversarial.regressions.cases``
  a run folder's plan     ``verify.rundir.plan`` (``--resume``)
  a child's environment   ``verify.adversarial.fuzz.atheris_target`` (the libFuzzer process)
  the Python API          ``verify.engines.build_engine(text)``

Every room below takes the value and reads its parts, never the text again, and a worker
process or Ray actor builds its engine from the value it was handed (it pickles with its parts).

An ``EngineSpec`` *is* its text (a ``str`` subclass): the engine's name in records, plans, keys
and messages, exactly as the user wrote it (or the named spec's name), so everything that names
an engine keeps doing so unchanged. A core value, so that the declarative side
(``verify.config``) can hold one without importing the engines."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

# adapters whose target is a user's program, not a vocabulary: nothing of theirs to read from files
PLUGIN_ADAPTERS = frozenset({"python", "subprocess", "http"})


class EngineSpec(str):
    """A parsed engine spec: ``adapter``, ``target`` (a vocabulary, a file, a wrapped spec's text),
    ``options`` (the query, typed: ``?chunk=400000`` is an int), and the text itself."""

    adapter: str
    target: str
    options: Mapping[str, Any]

    def __new__(cls, adapter: str, target: str, options: Mapping[str, Any], text: str) -> "EngineSpec":
        self = super().__new__(cls, text)
        self.adapter = adapter
        self.target = target
        self.options = MappingProxyType(dict(options))  # read-only: one value shared by every reader
        return self

    @property
    def text(self) -> str:
        """How the user wrote it (or the named spec's name), as a plain string."""
        return str.__str__(self)

    @property
    def parts(self) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
        """What builds the engine (two specs with the same parts build the same engine, whatever
        their names)."""
        return self.adapter, self.target, tuple(sorted(self.options.items(), key=lambda kv: kv[0]))

    def builds_same_engine(self, other: object) -> bool:
        """Whether ``other`` (a parsed spec) builds the same engine, whatever the two are named;
        never for text that was not parsed (a case naming an engine unknown here)."""
        return isinstance(other, EngineSpec) and self.parts == other.parts

    def __reduce__(self):  # to a worker process or a Ray actor: with its parts, never parsed again
        return EngineSpec, (self.adapter, self.target, dict(self.options), self.text)

    def __repr__(self) -> str:
        return f"EngineSpec({self.text!r})"

