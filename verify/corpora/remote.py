"""Where corpus files live: a local path, or any fsspec URL (``s3://``, ``gs://``,
``hf://datasets/...``, ``https://``, ``file://``, ``memory://``, chained ``simplecache::s3://``).

Local paths stay on the fast local path (``open``, ``os``); only URLs go through
fsspec. A URL is kept exactly as given (protocol, chain and all) and relative paths
are joined onto it, so a shard's path opens the same file on any machine that can
reach it. Credentials and filesystem options are not stored in descriptors: fsspec
reads them from the environment (``AWS_*``, ``HF_TOKEN``, ``FSSPEC_S3_ANON=true``,
fsspec's own config files).
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import IO, Iterator

PathLike = str | Path


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


def url_to_fs(url: str):
    import fsspec.core

    return fsspec.core.url_to_fs(url)


def open_raw(path: PathLike, compression: str | None = None) -> IO[bytes]:
    """A binary file object (seekable where the filesystem allows). ``compression``
    (fsspec's name: ``gzip``, ...) applies to URLs only; local callers decompress themselves."""
    if not is_url(path):
        return open(path, "rb")
    import fsspec

    return fsspec.open(path, "rb", compression=compression).open()


def exists(path: PathLike) -> bool:
    if not is_url(path):
        return os.path.exists(path)
    fs, stripped = url_to_fs(path)
    return fs.exists(stripped)


def is_file(path: PathLike) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    fs, stripped = url_to_fs(path)
    return fs.isfile(stripped)


def is_dir(path: PathLike) -> bool:
    if not is_url(path):
        return os.path.isdir(path)
    fs, stripped = url_to_fs(path)
    return fs.isdir(stripped)


def size(path: PathLike) -> int:
    if not is_url(path):
        return os.stat(path).st_size
    fs, stripped = url_to_fs(path)
    return int(fs.size(stripped))


def sort_key(relative: str) -> tuple[str, ...]:
    """Listing order: by path components, the same for a directory and its ``file://`` URL."""
    return tuple(relative.split("/"))


def walk(root: PathLike) -> Iterator[tuple[str, int | None]]:
    """``(relative path, size)`` of every file below ``root``, in ``sort_key`` order.
    Local directories are walked with ``os.walk`` (sorted as it goes); URLs are listed
    once with the filesystem's recursive ``find`` (one paged listing on object stores)."""
    if not is_url(root):
        base = str(root)
        found = []
        for folder, dirs, names in os.walk(base):
            dirs.sort()
            rel_folder = os.path.relpath(folder, base).replace(os.sep, "/")
            for name in names:
                rel = name if rel_folder == "." else f"{rel_folder}/{name}"
                found.append((rel, None))
        found.sort(key=lambda item: sort_key(item[0]))
        return iter(found)
    fs, stripped = url_to_fs(root)
    prefix = stripped.rstrip("/") + "/"
    listed = fs.find(stripped, detail=True)
    found = [(p[len(prefix):], info.get("size")) for p, info in listed.items()
             if p.startswith(prefix) and info.get("type", "file") == "file"]
    found.sort(key=lambda item: sort_key(item[0]))
    return iter(found)


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
