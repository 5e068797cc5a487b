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

from verify.engines.environments import check_loaded_from, environment_for, split_options
from verify.config import parse_spec  # the one parser of spec text (a core function: every room may parse at its edge)
from verify.engines.registry_entry import AdapterEntry, EngineSpec
from verify.engines.thirdparty import THIRD_PARTY_ADAPTERS
from verify.errors import ConfigError, UnknownEngineError

__all__ = ["BUILTIN_ADAPTERS", "WRAPPERS", "adapters", "build_engine", "list_adapters", "parse_spec", "wrapped_spec"]

ENTRY_POINT_GROUP = "verify.engines"
WRAPPERS = ("repair", "naive", "concat", "faulty")  # adapters whose target is a whole engine spec


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


def wrapped_spec(spec: EngineSpec) -> EngineSpec | None:
    """The engine a wrapper spec wraps (``repair:tiktoken:cl100k_base``: its target, a spec of its
    own), parsed; None for any other adapter."""
    return parse_spec(spec.target) if spec.adapter in WRAPPERS else None


def build_engine(spec: str | EngineSpec):
    """Instantiate the engine a spec names. Raises typed errors for anything wrong."""
    parsed = parse_spec(spec)  # the Python API hands text; a value passes through
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
    engine = entry.load()(parsed.target, options, spec=parsed)
    if engine.library_module is None:
        engine.library_module = entry.requires
    if environment is not None:
        engine.environment = environment.describe()
        check_loaded_from(environment, engine.library_module, parsed.text)
    return engine
