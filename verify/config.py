"""The declarative side: engines/*.toml, corpora/*.toml, adversarial/ (tags, regression
cases), ci/ (example suites), found in the project directory (``$VERIFY_PROJECT``, else the
current directory if it has an ``engines/`` or ``corpora/`` folder, else the checkout this
package lives in, else the current directory) -- each file or folder there when the project
has it, else the copy packaged in the wheel (``verify/_data/``, made by setup.py from the
checkout's top-level folders), so an install from a wheel runs from any folder:

    declared("engines")                        project/engines, else verify/_data/engines
    declared("adversarial", "tags.toml")       project/adversarial/tags.toml, else the packaged one
"""

from __future__ import annotations

import os

from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from verify.engine_spec import EngineSpec
from verify.errors import ConfigError, UnknownEngineError
from verify.toml_config import read_toml

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
PACKAGED_DATA = Path(__file__).resolve().parent / "_data"  # the wheel's copy of the top-level folders


def project_dir() -> Path:
    env = os.environ.get("VERIFY_PROJECT")
    if env:
        return Path(env)
    cwd = Path.cwd()
    if (cwd / "engines").is_dir() or (cwd / "corpora").is_dir():
        return cwd
    if (PACKAGE_ROOT / "engines").is_dir():  # an editable install of a checkout
        return PACKAGE_ROOT
    return cwd  # installed from a wheel: built-in defaults, reports under the current directory


def declared(*parts: str) -> Path:
    """A file or folder of the declarative side: the project's own when it has it, else the
    packaged copy when there is one, else the project's path (which does not exist)."""
    mine = project_dir().joinpath(*parts)
    if mine.exists():
        return mine
    packaged = PACKAGED_DATA.joinpath(*parts)
    return packaged if packaged.exists() else mine


def _load_tables(folder: str, table: str) -> dict[str, tuple[dict[str, Any], Path]]:
    found: dict[str, tuple[dict[str, Any], Path]] = {}
    directory = declared(folder)
    for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
        doc = read_toml(path)
        for name, body in doc.get(table, {}).items():
            if name in found:
                raise ConfigError(f"{path}: {table} '{name}' is already defined in {found[name][1]}")
            if not isinstance(body, dict):
                raise ConfigError(f"{path}: [{table}.{name}] must be a table")
            found[name] = (body, path)
    return found


@lru_cache(maxsize=None)
def named_engines() -> dict[str, EngineSpec]:
    specs = {}
    for name, (body, path) in _load_tables("engines", "engine").items():
        if "adapter" not in body or "target" not in body:
            raise ConfigError(f"{path}: [engine.{name}] needs 'adapter' and 'target'")
        specs[name] = EngineSpec(body["adapter"], str(body["target"]), dict(body.get("options", {})), name)
    return specs


def parse_spec(text: str) -> EngineSpec:
    """The one parser of engine specs, called where a spec's text comes in (a command-line
    option, a TOML file, a run folder's plan, the Python API); a parsed value is returned as it is."""
    if isinstance(text, EngineSpec):
        return text
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
            f"unknown engine '{name}': use ADAPTER:VOCAB (`verify engines` lists the adapters) "
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


@lru_cache(maxsize=None)
def named_corpora() -> dict[str, dict[str, Any]]:
    return {name: dict(body, _file=str(path)) for name, (body, path) in _load_tables("corpora", "corpus").items()}


@lru_cache(maxsize=None)
def run_defaults() -> dict[str, Any]:
    path = declared("engines", "defaults.toml")
    if not path.is_file():
        return {"reference": "tiktoken:cl100k_base", "candidates": ["hf:cl100k_base"], "corpus": "default"}
    return read_toml(path).get("defaults", {})


def cache_folder(kind: str, variable: str) -> Path:
    """Where the cache of ``kind`` lives: ``$variable``, else ``$XDG_CACHE_HOME/verify/KIND``, else
    ``~/.cache/verify/KIND`` (the builds of ``maturin:``, the private environments of ``?pip=``)."""
    explicit = os.environ.get(variable)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verify" / kind
