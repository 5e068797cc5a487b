"""Adapter registry: name -> dotted path + the module it needs + install hint.

Imported lazily, like fsspec's registry: listing adapters never imports an
engine. Third parties register through the ``verify.engines`` entry-point group
(``name = "pkg.module:Class"``); a third-party name that collides with a
built-in one is refused, never silently overriding it.

Engine specs:
  ADAPTER:TARGET[?opt=value&opt=value]   e.g. tiktoken:cl100k_base, hf:path/tokenizer.json
  WRAPPER:INNER_SPEC[?opt=value]         repair:tiktoken:cl100k_base?window=512: the target is a
                                         whole engine spec, the options are the wrapper's
  NAME[?opt=value]                       a named spec from engines/*.toml (options merged over its own)
  ...?pip=REQ[,REQ] / ?python=PATH       the engine in a private environment (verify.engines.environments)
"""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata
from typing import Any
from urllib.parse import parse_qsl

from verify.engines.environments import check_loaded_from, environment_for, split_options
from verify.engines.registry_entry import AdapterEntry, EngineSpec
from verify.engines.thirdparty import THIRD_PARTY_ADAPTERS
from verify.errors import ConfigError, UnknownEngineError

ENTRY_POINT_GROUP = "verify.engines"


BUILTIN_ADAPTERS: dict[str, AdapterEntry] = {
    e.name: e
    for e in [
        AdapterEntry("tiktoken", "verify.engines.tiktoken_engine:TiktokenEngine", "tiktoken",
                     "pip install tiktoken", "OpenAI tiktoken (reference)"),
        AdapterEntry("hf", "verify.engines.hf_engine:HFEngine", "tokenizers",
                     "pip install tokenizers", "HuggingFace tokenizers (reference)"),
        AdapterEntry("python", "verify.engines.python_plugin:PythonPluginEngine", None,
                     "", "your own engine: python:MODULE:ATTR, ATTR() returns an object with encode_batch"),
        AdapterEntry("maturin", "verify.engines.maturin_engine:MaturinEngine", "maturin",
                     "pip install 'verify-tokenizers[maturin]' (and the Rust toolchain)",
                     "a crate built from source: maturin:PATH[@REV][?features=a,b&target=VOCAB&coverage=1]"),
        AdapterEntry("subprocess", "verify.engines.subprocess_engine:SubprocessEngine", None,
                     "", "an engine process speaking verify-tokenize/1 JSON lines: subprocess:COMMAND"),
        AdapterEntry("http", "verify.engines.http_engine:HTTPEngine", None,
                     "", "a running vLLM/SGLang /tokenize endpoint: http://HOST:PORT?api=vllm|sglang&model=NAME"),
        AdapterEntry("repair", "verify.engines.repair_engine:RepairEngine", None,
                     "", "incremental sessions over any engine with token bytes: repair:INNER_SPEC[?window=512&...]"),
        AdapterEntry("naive", "verify.engines.session_controls:NaiveEngine", None,
                     "", "control: sessions that re-encode the whole transcript every append: naive:INNER_SPEC"),
        AdapterEntry("concat", "verify.engines.session_controls:ConcatEngine", None,
                     "", "control, wrong by design: sessions that concatenate each append's ids: concat:INNER_SPEC"),
        AdapterEntry("faulty", "verify.engines.planted.faulty:FaultyEngine", None,
                     "", "faults planted on purpose (verify selftest): faulty:INNER_SPEC?kind=KIND&rate=R"),
    ]
    + THIRD_PARTY_ADAPTERS
}


@lru_cache(maxsize=1)
def adapters() -> dict[str, AdapterEntry]:
    table = dict(BUILTIN_ADAPTERS)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in table:
            raise ConfigError(
                f"entry point '{ep.name}' from {ep.dist.name if ep.dist else '?'} would override the "
                f"{table[ep.name].origin} adapter '{ep.name}'; rename it"
            )
        dist = ep.dist.name if ep.dist else "unknown"
        table[ep.name] = AdapterEntry(ep.name, ep.value, None, f"pip install {dist}", f"from {dist}", dist)
    return table


def list_adapters() -> list[AdapterEntry]:
    return sorted(adapters().values(), key=lambda e: e.name)


def parse_spec(text: str) -> EngineSpec:
    from verify.config import named_engines

    named = named_engines()
    if text in named:
        return named[text]
    name, has_query, query = text.partition("?")
    if has_query and name in named:  # NAME?entry=batch: the name's options, then these
        base = named[name]
        return EngineSpec(base.adapter, base.target, {**base.options, **_options(query)}, text)
    adapter, sep, rest = text.partition(":")
    if not sep:
        known = ", ".join(sorted(named)) or "none"
        raise UnknownEngineError(
            f"unknown engine '{name}': use ADAPTER:VOCAB (adapters: {', '.join(adapters())}) "
            f"or a named engine (known: {known})"
        )
    target, _, query = rest.partition("?")
    return EngineSpec(adapter, target, _options(query), text)


def _options(query: str) -> dict[str, Any]:
    return {k: _option_value(v) for k, v in parse_qsl(query, keep_blank_values=True)}


def _option_value(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(raw)
    except ValueError:
        return raw


def build_engine(spec: str | EngineSpec):
    """Instantiate the engine a spec names. Raises typed errors for anything wrong."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    entry = adapters().get(parsed.adapter)
    if entry is None:
        raise UnknownEngineError(
            f"unknown engine adapter '{parsed.adapter}' in '{parsed.text}' (adapters: {', '.join(adapters())})"
        )
    if not parsed.target:
        raise ConfigError(f"engine spec '{parsed.text}' names no vocabulary or target after '{parsed.adapter}:'")
    options, wanted = split_options(parsed.options)
    environment = environment_for(wanted) if wanted else None
    if environment is not None:
        environment.activate()  # before the adapter's module is looked for: it may live only there
    engine = entry.load()(parsed.target, options, spec=parsed.text)
    if engine.library_module is None:
        engine.library_module = entry.requires
    if environment is not None:
        engine.environment = environment.describe()
        check_loaded_from(environment, engine.library_module, parsed.text)
    return engine
