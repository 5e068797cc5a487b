"""Which build of a library an engine runs, read from what is installed, never from a name.

    provider("fastokens") -> Provider("fastokens-b10", "0.2.17", digest, Path(.../fastokens))

Two forks may install one module (``fastokens-b10`` and ``toktier-fastokens`` both install
``fastokens``), and a package may be importable without being a distribution at all (a
plugin module in the current folder). So the distribution is the one whose installed files
hold the module actually imported (``importlib.metadata``), and the digest is computed from
the module's own files: its Python sources and its native extensions (``.so``, ``.pyd``,
``.dylib``), never its data. Two builds that report one version still differ in the digest.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

CODE_SUFFIXES = (".py", ".so", ".pyd", ".dylib")
MAX_FILES = 5000  # a module folder larger than this is digested by its first files in name order
SKIPPED_DIRS = {"__pycache__", ".git", "node_modules", ".venv", "site-packages", "tests"}


@dataclass(frozen=True)
class Provider:
    distribution: str | None  # the installed distribution holding the module (None: not installed as one)
    version: str | None
    digest: str | None  # sha256 (32 hex) of the module's code files, names and contents
    location: Path | None  # the module's folder (a package) or file


def provider(module_name: str, digest: bool = True) -> Provider:
    """The distribution that provides the module ``module_name`` (its top-level package) as this
    process imported it -- or, not imported yet, as it would be (nothing is imported) -- its
    version, and (``digest``) the digest of the module's code files."""
    top = module_name.partition(".")[0]
    module = sys.modules.get(top)
    location = module_location(module) if module is not None else _findable(top)
    if location is None:
        return Provider(None, None, None, None)
    dist = _distribution_holding(top, location)
    return Provider(dist.metadata["Name"] if dist else None, dist.version if dist else None,
                    code_digest(location) if digest else None, location)


def _findable(top: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        path = Path(spec.origin).resolve()
        return path.parent if path.name.startswith("__init__.") else path
    locations = list(spec.submodule_search_locations or [])
    return Path(locations[0]).resolve() if locations else None


def module_location(module) -> Path | None:
    """A package's folder, or a module's file; None for a built-in or frozen module."""
    file = getattr(module, "__file__", None)
    if file:
        path = Path(file).resolve()
        return path.parent if path.name.startswith("__init__.") else path
    paths = list(getattr(module, "__path__", []) or [])  # a namespace package
    return Path(paths[0]).resolve() if paths else None


def _distribution_holding(top: str, location: Path | None):
    """The distribution whose RECORD lists a file of ``location``; else, for an editable or
    RECORD-less install, the only distribution that says it provides ``top``."""
    if location is not None:  # the usual case first: a distribution named as its module holds it
        for name in dict.fromkeys((top, top.replace("_", "-"))):
            for dist in metadata.distributions(name=name):
                if any(_inside(dist, f, location) for f in dist.files or []):
                    return dist
    names = _packages(tuple(sys.path)).get(top, [])
    fallback = []
    for name in dict.fromkeys(names):
        for dist in metadata.distributions(name=name):
            files = dist.files or []
            if location is not None and any(_inside(dist, f, location) for f in files):
                return dist
            fallback.append(dist)
    return fallback[0] if len({d.metadata["Name"] for d in fallback}) == 1 else None


def _inside(dist, file, location: Path) -> bool:
    if not str(file).startswith(location.name):  # a cheap first test: RECORD paths start at site-packages
        return False
    try:
        path = Path(os.path.realpath(dist.locate_file(file)))
    except (OSError, ValueError):
        return False
    return path == location or location in path.parents


@lru_cache(maxsize=8)
def _packages(path: tuple[str, ...]) -> dict[str, list[str]]:
    """``packages_distributions()`` for one ``sys.path`` (a private environment adds to it)."""
    return metadata.packages_distributions()


@lru_cache(maxsize=64)
def _digest(location: str, stamp: tuple) -> str:
    h = hashlib.sha256()
    root = Path(location)
    for path in _code_files(root):
        h.update(str(path.relative_to(root.parent)).encode("utf-8", "surrogatepass") + b"\0")
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:32]


def code_digest(location: Path) -> str | None:
    """sha256 over the code files of a module (a file, or a package folder walked in name
    order): their paths and contents. Cached per process by the files' sizes and times."""
    files = _code_files(location)
    if not files:
        return None
    stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _digest(str(location), stamp)


def _code_files(location: Path) -> list[Path]:
    if location.is_file():
        return [location]
    found: list[Path] = []
    for folder, dirs, files in os.walk(location):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(CODE_SUFFIXES) or ".cpython-" in name:
                found.append(Path(folder) / name)
                if len(found) >= MAX_FILES:
                    return found
    return found
