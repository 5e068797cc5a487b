"""Resolve ``--corpus`` values to sources and stream their samples.

A value is a named corpus from corpora/*.toml, ``generated[:SEED]``, a file,
a directory (every supported file below it, sorted) or a glob.
"""

from __future__ import annotations

import glob
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol

from verify.config import named_corpora
from verify.corpora import files
from verify.errors import ConfigError, CorpusError
from verify.sample import Sample


class Source(Protocol):
    name: str

    def describe(self) -> dict[str, Any]: ...

    def samples(self) -> Iterator[Sample]: ...


@dataclass
class GeneratedSource:
    name: str
    seed: int = 0
    documents: int = 2000
    long_documents: int = 3

    def describe(self) -> dict[str, Any]:
        from verify.corpora import generated

        return {"name": self.name, "kind": "generated",
                **generated.describe(self.seed, self.documents, self.long_documents)}

    def samples(self) -> Iterator[Sample]:
        from verify.corpora import generated

        return generated.generate(self.seed, self.documents, self.long_documents)


@dataclass
class FileSource:
    name: str
    paths: list[Path]
    text_field: str = "text"
    id_field: str = "id"
    stats: dict[str, int] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "files", "files": [str(p) for p in self.paths],
                "text_field": self.text_field, "id_field": self.id_field}

    def samples(self) -> Iterator[Sample]:
        for path in self.paths:
            yield from files.read_file(path, self.text_field, self.id_field)


def expand_paths(pattern: str) -> list[Path]:
    path = Path(pattern).expanduser()
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and files.is_supported(p))
        if not found:
            raise CorpusError(f"{pattern}: directory holds no .txt/.jsonl/.parquet files")
        return found
    if path.is_file():
        if not files.is_supported(path):
            raise CorpusError(f"{pattern}: unsupported file type (use .txt, .jsonl, .ndjson, .parquet; .gz/.zst compressed)")
        return [path]
    if any(ch in pattern for ch in "*?["):
        found = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if files.is_supported(Path(p)))
        if not found:
            raise CorpusError(f"{pattern}: no corpus files match")
        return found
    raise CorpusError(f"corpus not found: {pattern} (not a file, directory, glob or named corpus; see corpora/)")


def open_corpus(value: str, text_field: str = "text", id_field: str = "id") -> Source:
    named = named_corpora()
    if value in named:
        return _from_table(value, named[value], text_field, id_field)
    if value == "default":  # no corpora/default.toml (a wheel install): the built-in generator
        return GeneratedSource(value)
    if value == "generated" or value.startswith("generated:"):
        seed = value.partition(":")[2]
        if seed and not seed.isdigit():
            raise ConfigError(f"generated corpus seed must be an integer, got '{seed}'")
        return GeneratedSource(value, seed=int(seed or 0))
    return FileSource(value, expand_paths(value), text_field, id_field)


def _from_table(name: str, table: dict[str, Any], text_field: str, id_field: str) -> Source:
    kind = table.get("kind")
    where = table.get("_file", "corpora/")
    if kind == "generated":
        return GeneratedSource(name, int(table.get("seed", 0)), int(table.get("documents", 2000)),
                               int(table.get("long_documents", 3)))
    if kind == "files":
        paths: list[Path] = []
        for pattern in table.get("paths", []):
            try:
                pattern = string.Template(pattern).substitute(os.environ)
            except KeyError as exc:
                raise ConfigError(f"corpus '{name}' ({where}) needs the environment variable {exc.args[0]}") from None
            paths.extend(expand_paths(pattern))
        if not paths:
            raise ConfigError(f"corpus '{name}' ({where}) lists no paths")
        return FileSource(name, paths, table.get("text_field", text_field), table.get("id_field", id_field))
    raise ConfigError(f"corpus '{name}' ({where}): unknown kind '{kind}' (use 'generated' or 'files')")
