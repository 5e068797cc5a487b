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

import glob
import os
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from verify.config import named_corpora
from verify.corpora import files, remote
from verify.corpora.shards import Shard, file_shards, generated_shards
from verify.errors import ConfigError, CorpusError, UsageError
from verify.sample import BadRecord, Sample


@dataclass
class Source:
    """A named corpus: what it is (``describe``) and the shards it is cut into."""

    name: str
    description: dict[str, Any]
    shard_list: list[Shard]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, **self.description, "shards": len(self.shard_list)}

    def shards(self) -> list[Shard]:
        return list(self.shard_list)

    def samples(self) -> Iterator[Sample]:
        """Every sample in shard order; a bad record raises ``CorpusError`` (strict reading)."""
        for shard in self.shard_list:
            for record in shard.records():
                if isinstance(record, BadRecord):
                    raise CorpusError(f"{record.position}: {record.reason}")
                yield record


def generated_source(name: str, seed: int = 0, documents: int = 2000, long_documents: int = 3) -> Source:
    from verify.corpora import generated

    return Source(name, {"kind": "generated", **generated.describe(seed, documents, long_documents)},
                  generated_shards(name, seed, documents, long_documents))


def file_source(name: str, paths: list, text_field: str = "text", id_field: str = "id") -> Source:
    """``paths``: local paths or URLs, or ``(path, size)`` pairs from a listing. Remote
    Parquet files are not opened here except the first (its columns)."""
    pairs = [p if isinstance(p, tuple) else (p, None) for p in paths]
    remote_parquet = [p for p, _ in pairs if remote.is_url(p) and files.base_suffix(p) in files.PARQUET_SUFFIXES]
    if remote_parquet:
        files.parquet_row_groups(remote_parquet[0], text_field)
    shards = [s for p, size in pairs for s in file_shards(name, p, text_field, id_field, size=size)]
    return Source(name, {"kind": "files", "files": [str(p) for p, _ in pairs], "text_field": text_field,
                         "id_field": id_field}, shards)


UNSUPPORTED = "unsupported file type (use .txt, .jsonl, .ndjson, .parquet; .gz/.zst/.zstd compressed)"


def expand_paths(pattern: str) -> list:
    """The files a value names, sorted: local ``Path``s, or for a URL ``(url, size)`` pairs."""
    if remote.is_url(pattern):
        return _expand_url(pattern)
    path = Path(pattern).expanduser()
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and files.is_supported(p))
        if not found:
            raise CorpusError(f"{pattern}: directory holds no .txt/.jsonl/.parquet files")
        return found
    if path.is_file():
        if not files.is_supported(path):
            raise CorpusError(f"{pattern}: {UNSUPPORTED}")
        return [path]
    if any(ch in pattern for ch in "*?["):
        found = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if files.is_supported(Path(p)))
        if not found:
            raise CorpusError(f"{pattern}: no corpus files match")
        return found
    raise CorpusError(f"corpus not found: {pattern} (not a file, directory, glob or named corpus; see corpora/)")


def _expand_url(url: str) -> list[tuple[str, int | None]]:
    try:
        if any(ch in url.split("://", 1)[1] for ch in "*?["):
            found = [(p, size) for p, size in remote.glob(url) if files.is_supported(p)]
            if not found:
                raise CorpusError(f"{url}: no corpus files match")
            return found
        if remote.is_dir(url):
            found = [(remote.join(url, rel), size) for rel, size in remote.walk(url) if files.is_supported(rel)]
            if not found:
                raise CorpusError(f"{url}: directory holds no .txt/.jsonl/.parquet files")
            return found
        if remote.is_file(url):
            if not files.is_supported(url):
                raise CorpusError(f"{url}: {UNSUPPORTED}")
            return [(url, None)]
    except (CorpusError, ImportError):
        raise
    except Exception as exc:  # a missing fsspec backend, no network, no permission
        raise CorpusError(f"{url}: cannot list ({type(exc).__name__}: {exc})") from None
    raise CorpusError(f"corpus not found: {url} (no such file or directory)")


def open_corpus(value: str, text_field: str | None = None, id_field: str | None = None, *,
                root: str | None = None, where: dict[str, str] | None = None) -> Source:
    """``text_field``/``id_field`` (None: ``text``/``id``, or what a named corpus says);
    ``root``: where a named corpus with a root lives (``--corpus-root``); ``where``:
    partition filters (``--where quality=high``) for corpora with partition fields."""
    named = named_corpora()
    if value in named:
        return _from_table(value, named[value], text_field, id_field, root, where or {})
    if where:
        raise UsageError(f"--where: corpus '{value}' has no partition fields (--where applies to partitioned "
                         "named corpora such as nemotron-cc)")
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
    return file_source(value, expand_paths(value), text_field, id_field)


def _from_table(name: str, table: dict[str, Any], text_field: str | None, id_field: str | None,
                root: str | None, where: dict[str, str]) -> Source:
    """A named corpus; its own text_field/id_field apply unless the command line gives one."""
    kind = table.get("kind")
    origin = table.get("_file", "corpora/")
    if kind == "partitioned":
        from verify.corpora.partitioned import partitioned_source

        return partitioned_source(name, table, root=root, where=where, text_field=text_field, id_field=id_field)
    if where:
        raise UsageError(f"--where: corpus '{name}' ({origin}) has no partition fields (kind '{kind}')")
    if kind == "generated":
        return generated_source(name, int(table.get("seed", 0)), int(table.get("documents", 2000)),
                                int(table.get("long_documents", 3)))
    if kind == "hf":
        from verify.corpora.hf_datasets import hf_source

        spec = ":".join(str(table.get(k) or "") for k in ("dataset", "config", "split")).rstrip(":")
        return hf_source(f"hf:{spec}", text_field or table.get("text_field", "text"),
                         id_field or table.get("id_field", "id"), name=name)
    if kind == "files":
        paths: list = []
        for pattern in table.get("paths", []):
            try:
                pattern = string.Template(pattern).substitute(os.environ)
            except KeyError as exc:
                raise ConfigError(f"corpus '{name}' ({origin}) needs the environment variable {exc.args[0]}") from None
            paths.extend(expand_paths(pattern))
        if not paths:
            raise ConfigError(f"corpus '{name}' ({origin}) lists no paths")
        return file_source(name, paths, text_field or table.get("text_field", "text"),
                           id_field or table.get("id_field", "id"))
    raise ConfigError(f"corpus '{name}' ({origin}): unknown kind '{kind}' (use 'generated', 'files', "
                      "'partitioned' or 'hf')")
