"""The sources of a ``maturin:`` engine: which files, their digest, their git state, a snapshot.

A crate is built from a *snapshot* of its sources, never in place: the files that make the
digest are copied (or, for ``PATH@REV``, taken from ``git archive REV``) into the build cache
and built there, so what was built is exactly what was digested, and the crate's own tree is
never written to (no ``target/``, no ``Cargo.lock``).

The files: the cargo workspace root of the crate (``cargo locate-project --workspace``, else
the crate's folder) and below it, in a git tree the files git knows or would add (tracked,
plus untracked and not ignored: a new ``.rs`` file is built even before ``git add``), else every
file; always ``Cargo.lock`` when there is one; never ``target/`` or ``.git/``. The digest is the
SHA-256 of every file's path, executable bit and content. A path dependency outside the
workspace root is not in the snapshot (cargo then says which path it could not read).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from verify.errors import ConfigError

SKIPPED_DIRS = {".git", "__pycache__", ".venv", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
# (walked trees only, at any depth; target/ at the top only: cargo's default build folder)
GIT_TIMEOUT_S = 120


@dataclass(frozen=True)
class CrateSource:
    """Where a crate is: its folder as given, the workspace root above it, its git state."""

    crate: Path  # the folder with Cargo.toml or pyproject.toml (absolute)
    root: Path  # the cargo workspace root (the crate itself when it is not in a workspace)
    member: str  # the crate's folder relative to ``root`` ("." for the root itself)
    git_root: Path | None  # the git work tree holding ``root``, if any
    rev: str | None  # PATH@REV: the revision as given
    commit: str | None  # the commit built (PATH@REV), or HEAD of the work tree
    dirty: bool  # the work tree differs from HEAD under ``root`` (never for PATH@REV)

    def git_dict(self) -> dict | None:
        if self.git_root is None:
            return None
        return {"root": str(self.git_root), "revision": self.commit, "rev": self.rev, "dirty": self.dirty}


def split_target(target: str) -> tuple[str, str | None]:
    """``PATH@REV`` -> (PATH, REV), split at the last ``@`` (a revision may hold ``/``:
    ``origin/main``); a path that exists as written, ``@`` and all, has no revision."""
    head, sep, rev = target.rpartition("@")
    if sep and head and rev and not Path(target).exists():
        return head, rev
    return target, None


def _git(args: list[str], cwd: Path, check: bool = True) -> str | None:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        if check:
            raise ConfigError(f"git {' '.join(args[:2])} in {cwd} failed: {exc}") from None
        return None
    if proc.returncode != 0:
        if check:
            why = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise ConfigError(f"git {' '.join(args[:2])} in {cwd} failed: {why[0]}")
        return None
    return proc.stdout.decode("utf-8", "surrogateescape")


def _workspace_root(crate: Path, cargo: str | None) -> Path:
    if cargo is not None:
        try:
            proc = subprocess.run([cargo, "locate-project", "--workspace", "--message-format", "plain"], cwd=crate,
                                  capture_output=True, timeout=60, text=True)
            if proc.returncode == 0 and proc.stdout.strip():
                root = Path(proc.stdout.strip()).parent.resolve()
                if crate == root or root in crate.parents:
                    return root
        except (OSError, subprocess.TimeoutExpired):
            pass
    return crate  # a broken manifest: the build itself will say what is wrong


def locate(target: str, cargo: str | None) -> CrateSource:
    """The crate a ``maturin:`` target names (``PATH`` or ``PATH@REV``)."""
    path_text, rev = split_target(target)
    crate = Path(path_text).expanduser().resolve()
    if crate.is_file() and crate.name in ("Cargo.toml", "pyproject.toml"):
        crate = crate.parent
    if not crate.is_dir():
        raise ConfigError(f"maturin:{target}: {crate} is not a folder")
    if not (crate / "Cargo.toml").is_file() and not (crate / "pyproject.toml").is_file():
        raise ConfigError(f"maturin:{target}: {crate} has neither Cargo.toml nor pyproject.toml")
    root = _workspace_root(crate, cargo)
    top = _git(["rev-parse", "--show-toplevel"], root, check=False)
    git_root = Path(top.strip()).resolve() if top else None
    commit, dirty = None, False
    if git_root is not None:
        if rev is not None:
            resolved = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root, check=False)
            if not resolved:
                raise ConfigError(f"maturin:{target}: {rev!r} is not a revision of the git repository {git_root}")
            commit = resolved.strip()
        else:
            head = _git(["rev-parse", "--verify", "--quiet", "HEAD"], root, check=False)
            commit = head.strip() if head else None
            status = _git(["status", "--porcelain", "--untracked-files=normal", "--", "."], root, check=False)
            dirty = bool(status and status.strip())
    elif rev is not None:
        raise ConfigError(f"maturin:{target}: @{rev} needs the crate in a git repository; {root} is not in one")
    member = crate.relative_to(root).as_posix() or "."
    return CrateSource(crate, root, member, git_root, rev, commit, dirty)


# --- the files and their digest -------------------------------------------------------------

def source_files(root: Path, use_git: bool = True) -> list[str]:
    """The files of the snapshot, relative to ``root`` (POSIX), sorted. ``use_git=False`` walks
    every file (a snapshot already extracted, which is no work tree of its own)."""
    listed = _git(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."], root,
                  check=False) if use_git else None
    if listed is not None:
        names = {n for n in listed.split("\0") if n}
    else:
        names = set()
        for folder, dirs, files in os.walk(root):
            rel = Path(folder).relative_to(root)
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not (rel == Path(".") and d == "target")]
            names.update((rel / f).as_posix() for f in files)
    if (root / "Cargo.lock").is_file():
        names.add("Cargo.lock")  # it pins the dependencies even where .gitignore leaves it out
    keep = []
    for name in names:
        parts = name.split("/")
        if parts[0] == "target" or ".git" in parts or "__pycache__" in parts:
            continue
        if (root / name).is_file():  # a tracked file deleted in the work tree is not built
            keep.append(name)
    return sorted(keep)


def digest_files(root: Path, names: list[str]) -> str:
    h = hashlib.sha256()
    for name in names:
        path = root / name
        executable = bool(path.stat().st_mode & stat.S_IXUSR)
        h.update(name.encode("utf-8", "surrogateescape") + b"\0" + (b"x" if executable else b"-") + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def copy_snapshot(root: Path, names: list[str], dest: Path) -> None:
    for name in names:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)


def archive_snapshot(source: CrateSource, dest: Path) -> None:
    """``git archive`` of the commit, the workspace root's subtree only, extracted into ``dest``."""
    assert source.git_root is not None and source.commit is not None
    sub = source.root.relative_to(source.git_root).as_posix()
    args = ["archive", "--format=tar", source.commit] + ([] if sub in ("", ".") else ["--", sub])
    try:
        proc = subprocess.run(["git", *args], cwd=source.git_root, capture_output=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"git archive {source.commit[:12]} failed: {exc}") from None
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise ConfigError(f"git archive {source.commit[:12]} -- {sub} failed: {why[0]} (is {sub} in that revision?)")
    prefix = "" if sub in ("", ".") else sub.rstrip("/") + "/"
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        for member in tar.getmembers():
            if not member.name.startswith(prefix) or not (member.isfile() or member.isdir()):
                continue  # symlinks and the like are not sources of a crate snapshot
            member.name = member.name[len(prefix):] or "."
            try:
                tar.extract(member, dest, filter="data")
            except TypeError:  # a Python without extraction filters (before 3.10.12 / 3.11.4)
                tar.extract(member, dest)


__all__ = ["CrateSource", "archive_snapshot", "copy_snapshot", "digest_files", "locate", "source_files",
           "split_target"]
