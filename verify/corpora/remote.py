"""Where corpus files live: a local path, or any fsspec URL (``s3://``, ``gs://``,
``hf://datasets/...``, ``https://``, ``file://``, ``memory://``, chained ``simplecache::s3://``).

Every operation goes through the fsspec filesystem that holds the path (``url_to_fs``):
a local path is fsspec's ``LocalFileSystem``, so local and remote files are listed,
sized and opened by one code path. A URL is kept exactly as given (protocol, chain and
all) and relative paths are joined onto it, so a shard's path opens the same file on
any machine that can reach it. Credentials and filesystem options are not stored in
descriptors: fsspec reads them from the environment (``AWS_*``, ``HF_TOKEN``,
``FSSPEC_S3_ANON=true``, fsspec's own config files).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import IO, Any, Iterator

import fsspec.core
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem, make_path_posix

PathLike = str | Path

_LOCAL = LocalFileSystem()


def is_url(path: PathLike) -> bool:
    return isinstance(path, str) and "://" in path


def name_of(path: PathLike) -> str:
    """The file name (last component) of a path or URL."""
    text = str(path)
    return posixpath.basename(text.rstrip("/")) if is_url(text) else os.path.basename(text)


def join(root: PathLike, relative: str) -> str:
    if is_url(root):
        return root.rstrip("/") + "/" + relative.lstrip("/")
    return os.path.join(root, relative)


def url_to_fs(path: PathLike) -> tuple[AbstractFileSystem, str]:
    """The filesystem holding a path or URL, and the path as that filesystem spells it."""
    if is_url(path):
        return fsspec.core.url_to_fs(path)
    # a local path is taken literally: fsspec.core.url_to_fs would read a "::" in it as a URL chain
    return _LOCAL, make_path_posix(str(path))


def open_raw(path: PathLike, compression: str | None = None) -> IO[bytes]:
    """A binary file object (seekable where the filesystem allows), decompressed by
    ``compression``: fsspec's codec name (``gzip``, ``zstd``, ...) or ``"infer"`` (from the
    suffix). Closing it closes the file below the codec too."""
    fs, stripped = url_to_fs(path)
    return fsspec.core.OpenFile(fs, stripped, "rb", compression=compression).open()


def exists(path: PathLike) -> bool:
    fs, stripped = url_to_fs(path)
    return fs.exists(stripped)


def is_file(path: PathLike) -> bool:
    fs, stripped = url_to_fs(path)
    return fs.isfile(stripped)


def is_dir(path: PathLike) -> bool:
    fs, stripped = url_to_fs(path)
    return fs.isdir(stripped)


def size(path: PathLike) -> int:
    fs, stripped = url_to_fs(path)
    return int(fs.size(stripped))


def sort_key(relative: str) -> tuple[str, ...]:
    """Listing order: by path components, the same for a directory and its ``file://`` URL."""
    return tuple(relative.split("/"))


def walk(root: PathLike) -> Iterator[tuple[str, int | None]]:
    """``(relative path, size)`` of every file below ``root``, in ``sort_key`` order: one
    recursive ``find`` (one paged listing on object stores). A symlink to a file is listed; a
    symlink to a folder is not walked into."""
    fs, stripped = url_to_fs(root)
    prefix = stripped.rstrip("/") + "/"
    found = [(path[len(prefix):], info.get("size")) for path, info in fs.find(stripped, detail=True).items()
             if path.startswith(prefix) and _is_file(fs, path, info)]
    found.sort(key=lambda item: sort_key(item[0]))
    return iter(found)


def _is_file(fs: AbstractFileSystem, path: str, info: dict[str, Any]) -> bool:
    # fsspec's local listing types every symlink "other" (it never follows one); a symlinked
    # file is still a file of the corpus, as os.walk lists it, so its target is asked for
    kind = info.get("type", "file")
    return kind == "file" or (kind == "other" and bool(info.get("islink")) and fs.isfile(path))


def glob(pattern: str) -> list[tuple[str, int | None]]:
    """``(URL, size)`` of the files a URL glob matches, sorted. The matches keep the
    pattern's own protocol spelling, so chained URLs stay chained."""
    fs, stripped = url_to_fs(pattern)
    keep = pattern.endswith(stripped)
    head = pattern[: len(pattern) - len(stripped)]
    found = fs.glob(stripped, detail=True)
    return sorted(((head + p if keep else fs.unstrip_protocol(p), info.get("size"))
                   for p, info in found.items() if info.get("type", "file") == "file"),
                  key=lambda item: item[0])
