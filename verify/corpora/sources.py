"""Resolve ``--corpus`` values to sources; a source lists its shards.

A value is a named corpus from corpora/*.toml (kinds ``generated``, ``files``,
``partitioned``, ``hf``), ``generated[:SEED]``, ``hf:NAME_OR_PATH[:config][:split]``
(``verify.corpora.hf_datasets``), a file, a directory (every supported file below it,
sorted) or a glob -- each of the last three a local path or an fsspec URL
(``s3://bucket/dump/**/*.parquet``). Listing is deterministic (sorted paths, row groups
and byte ranges in file order) and checks what can be checked up front -- a missing
file, a Parquet file without the text column -- so such mistakes fail before any
engine starts. Listing streams nothing but names: no record is held in memory.
"""

from __future__ import annotations

import os
import string
from dataclasses import dataclass
from typing import Any, Callable

from pathlib import Path

from verify.config import named_corpora
from verify.corpora import files, remote
from verify.corpora.source import Source, expand_paths, file_source, generated_source, list_paths  # noqa: F401
from verify.errors import ConfigError, UsageError


def open_corpus(value: str, text_field: str | None = None, id_field: str | None = None, *,
                root: str | None = None, where: dict[str, str] | None = None,
                follow_symlinks: bool = False) -> Source:
    """``text_field``/``id_field`` (None: ``text``/``id``, or what a named corpus says);
    ``root``: where a named corpus with a root lives (``--corpus-root``); ``where``:
    partition filters (``--where quality=high``) for corpora with partition fields;
    ``follow_symlinks``: a folder's symlinks that lead out of it are read too (else skipped
    and counted, ``verify.corpora.source``)."""
    named = named_corpora()
    if value in named:
        return _from_table(value, named[value], text_field, id_field, root, where or {})
    if where:
        partitioned = sorted(n for n, t in named.items() if t.get("kind") == "partitioned")
        raise UsageError(f"--where: '{value}' has no partition fields: only a named corpus has them (those here: "
                         f"{', '.join(partitioned) or 'none'})")
    if value.startswith("hf:"):
        from verify.corpora.hf_datasets import hf_source

        return hf_source(value, text_field or "text", id_field or "id")
    text_field, id_field = text_field or "text", id_field or "id"
    if value == "default":  # no corpora/default.toml (a wheel install): the built-in generator
        return generated_source(value)
    if value == "generated" or value.startswith("generated:"):
        seed = value.partition(":")[2]
        if seed and not seed.isdigit():
            raise ConfigError(f"generated corpus seed must be an integer, got '{seed}'")
        return generated_source(value, seed=int(seed or 0))
    paths, skipped = list_paths(value, follow_symlinks)
    named = Path(value).expanduser()
    if not remote.is_url(value) and named.is_file() and files.base_suffix(value) in files.PARQUET_SUFFIXES:
        files.parquet_row_groups(named, text_field)  # the file named itself: unreadable is refused before any work
    return file_source(value, paths, text_field, id_field, symlinks_skipped=skipped)


def _from_table(name: str, table: dict[str, Any], text_field: str | None, id_field: str | None,
                root: str | None, where: dict[str, str]) -> Source:
    """A named corpus; its own text_field/id_field apply unless the command line gives one."""
    kind = table.get("kind")
    origin = table.get("_file", "corpora/")
    build = SOURCE_KINDS.get(kind) if isinstance(kind, str) else None
    if build is None:
        *first, last = SOURCE_KINDS
        raise ConfigError(f"corpus '{name}' ({origin}): unknown kind '{kind}' "
                          f"(use {', '.join(map(repr, first))} or {last!r})")
    if where and kind != "partitioned":
        raise UsageError(f"--where: corpus '{name}' ({origin}) has no partition fields (kind '{kind}')")
    return build(_Named(name, table, origin, text_field, id_field, root, where))


@dataclass(frozen=True)
class _Named:
    """A named corpus's table and what the command line adds to it."""

    name: str
    table: dict[str, Any]
    origin: str  # the corpora/*.toml file it comes from
    text_field: str | None
    id_field: str | None
    root: str | None
    where: dict[str, str]


def _partitioned(c: _Named) -> Source:
    from verify.corpora.partitioned import partitioned_source

    return partitioned_source(c.name, c.table, root=c.root, where=c.where, text_field=c.text_field,
                              id_field=c.id_field)


def _generated(c: _Named) -> Source:
    return generated_source(c.name, int(c.table.get("seed", 0)), int(c.table.get("documents", 2000)),
                            int(c.table.get("long_documents", 3)))


def _hf(c: _Named) -> Source:
    from verify.corpora.hf_datasets import hf_source

    spec = ":".join(str(c.table.get(k) or "") for k in ("dataset", "config", "split")).rstrip(":")
    return hf_source(f"hf:{spec}", c.text_field or c.table.get("text_field", "text"),
                     c.id_field or c.table.get("id_field", "id"), name=c.name)


def _files(c: _Named) -> Source:
    paths: list = []
    for pattern in c.table.get("paths", []):
        try:
            pattern = string.Template(pattern).substitute(os.environ)
        except KeyError as exc:
            raise ConfigError(f"corpus '{c.name}' ({c.origin}) needs the environment variable {exc.args[0]}") from None
        paths.extend(expand_paths(pattern))
    if not paths:
        raise ConfigError(f"corpus '{c.name}' ({c.origin}) lists no paths")
    return file_source(c.name, paths, c.text_field or c.table.get("text_field", "text"),
                       c.id_field or c.table.get("id_field", "id"))


# the kinds a corpora/*.toml table may name: a new kind is one function and one row
SOURCE_KINDS: dict[str, Callable[[_Named], Source]] = {
    "generated": _generated, "files": _files, "partitioned": _partitioned, "hf": _hf}
