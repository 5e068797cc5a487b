"""A corpus source -- what it is and the shards it is cut into -- and how file names,
directories, globs and fsspec URLs expand to files. The resolver of ``--corpus`` values
(named corpora, ``hf:``, ``generated``) is ``verify.corpora.sources``.

A local folder stays inside itself: a symlink below it that leads out of it (to a file, or
to a folder) is skipped and counted (the source's ``symlinks_skipped``), unless
``follow_symlinks`` (``verify run --follow-symlinks``).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from verify.corpora import files, remote
from verify.corpora.shards import Shard, file_shards, generated_shards
from verify.errors import CorpusError
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


def file_source(name: str, paths: list, text_field: str = "text", id_field: str = "id",
                symlinks_skipped: int = 0) -> Source:
    """``paths``: local paths or URLs, or ``(path, size)`` pairs from a listing. Remote
    Parquet files are not opened here except the first (its columns): one of several that
    cannot be opened is left to its reader (a bad-input record), a missing text column is refused."""
    pairs = [p if isinstance(p, tuple) else (p, None) for p in paths]
    remote_parquet = [p for p, _ in pairs if remote.is_url(p) and files.base_suffix(p) in files.PARQUET_SUFFIXES]
    if remote_parquet:
        try:
            files.parquet_row_groups(remote_parquet[0], text_field)
        except files.UnreadableParquet:
            if len(pairs) == 1:  # the one file named: refused before any work
                raise
    shards = [s for p, size in pairs for s in file_shards(name, p, text_field, id_field, size=size)]
    described = {"kind": "files", "files": [str(p) for p, _ in pairs], "text_field": text_field, "id_field": id_field}
    if symlinks_skipped:
        described["symlinks_skipped"] = symlinks_skipped
    return Source(name, described, shards)


UNSUPPORTED = "unsupported file type (use .txt, .jsonl, .ndjson, .parquet; .gz/.zst/.zstd compressed)"


def expand_paths(pattern: str, follow_symlinks: bool = False) -> list:
    """The files a value names, sorted: local ``Path``s, or for a URL ``(url, size)`` pairs."""
    return list_paths(pattern, follow_symlinks)[0]


def list_paths(pattern: str, follow_symlinks: bool = False) -> tuple[list, int]:
    """``expand_paths`` and how many symlinks leading out of a folder were skipped."""
    # A local value stays on os.walk / glob, not fsspec: the symlink rule needs each link's real
    # target and following folder links with a loop guard, where fsspec's local find types a link
    # "other" and never follows it; and a local glob keeps Python's glob rules (`*` skips dotfiles)
    if remote.is_url(pattern):
        return _expand_url(pattern), 0
    path = Path(pattern).expanduser()
    if path.is_dir():
        found, skipped = folder_files(path, follow_symlinks)
        if not found:
            outside = f" ({skipped} symlinks out of it skipped; --follow-symlinks follows them)" if skipped else ""
            raise CorpusError(f"{pattern}: directory holds no .txt/.jsonl/.parquet files{outside}")
        return found, skipped
    return _expand_local(pattern, path), 0


def folder_files(folder: Path, follow_symlinks: bool = False) -> tuple[list[Path], int]:
    """The supported files below ``folder``, sorted, and the symlinks skipped because they lead out
    of it (all followed with ``follow_symlinks``, each real folder once: a symlink loop ends)."""
    root = folder.resolve()
    found: list[Path] = []
    skipped = 0
    seen: set[str] = set()
    for here, dirs, names in os.walk(folder, followlinks=follow_symlinks):
        real = os.path.realpath(here)
        if real in seen:  # a symlink back to a folder already walked
            dirs[:] = []
            continue
        seen.add(real)
        if not follow_symlinks:
            kept = []
            for d in dirs:
                target = Path(here, d)
                if target.is_symlink() and not _inside(root, target):
                    skipped += 1
                else:
                    kept.append(d)
            dirs[:] = kept
        for name in names:
            p = Path(here, name)
            if not p.is_file() or not files.is_supported(p):
                continue
            if not follow_symlinks and p.is_symlink() and not _inside(root, p):
                skipped += 1
                continue
            found.append(p)
    return sorted(found), skipped


def _inside(root: Path, path: Path) -> bool:
    target = path.resolve()
    return target == root or root in target.parents


def _expand_local(pattern: str, path: Path) -> list:
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
