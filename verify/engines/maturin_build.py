"""Build a crate with ``maturin build`` into a cache keyed by what the build depends on.

    build = ensure_built(source, BuildRequest(features, profile, coverage))

The cache (``$VERIFY_MATURIN_CACHE``, else ``$XDG_CACHE_HOME/verify/maturin``, else
``~/.cache/verify/maturin``) holds one folder per *build key*: the SHA-256 of the source
digest (``verify.engines.maturin_source``), the features, the profile, the coverage flag, the
effective ``RUSTFLAGS``, the crate's folder within the workspace, the toolchain (``rustc -vV`` in the crate's folder, so a
``rust-toolchain.toml`` counts), the maturin version and the Python the wheel is for::

    builds/KEY/src/        the snapshot that was built (copied from the tree, or for PATH@REV
                           from revs/COMMIT-ROOT/, the commit's files from git archive)
    builds/KEY/wheel/      what maturin built
    builds/KEY/site/       the wheel installed with pip install --no-deps --target (the private dir)
    builds/KEY/build.log   maturin's and pip's output (the compiler's errors, on a failure)
    builds/KEY/build.json  written last: the build is complete (identity, toolchain, seconds)
    target/FLAGS/          CARGO_TARGET_DIR, shared by builds with the same flags and profile

A second run with unchanged sources finds ``build.json`` and builds nothing. Two processes
starting the same engine at once (two workers) take a file lock: one builds, the other waits
and reuses. A failed build is one line (``ConfigError``, exit 2) naming ``build.log``.

The environment passes through (a user's crates.io setup, ``CARGO_HOME``, proxies); the cache
only sets ``CARGO_TARGET_DIR`` and, for a coverage build, adds to ``RUSTFLAGS``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from verify.atomic import file_lock, write_json
from verify.config import cache_folder
from verify.engines.maturin_coverage import COVERAGE_RUSTFLAGS
from verify.engines.maturin_source import (CrateSource, archive_snapshot, copy_snapshot, digest_files,
                                           source_files)
from verify.errors import ConfigError

CACHE_ENV = "VERIFY_MATURIN_CACHE"
BUILD_TIMEOUT_S = 3600
LOG_TAIL_LINES = 40


class BuildFailed(ConfigError):
    """maturin (cargo, the compiler) failed: one line, and the log with the compiler's output."""

    def __init__(self, summary: str, log: Path):
        super().__init__(f"{summary}; compiler output: {log}")
        self.summary, self.log = summary, log
        self.artifacts = [log]  # files a caller that knows OUT may copy there (verify fuzz --atheris does)


@dataclass(frozen=True)
class BuildRequest:
    features: tuple[str, ...] = ()
    profile: str = "release"
    coverage: bool = False


@dataclass(frozen=True)
class Build:
    """A finished build: where it is installed and what it is."""

    key: str
    folder: Path
    site: Path  # the private install dir: put on sys.path to import the module
    record: dict  # build.json
    cached: bool  # found in the cache (nothing was built by this call)
    seconds: float  # this call: the build, or the look-up of a cached one


def cache_root() -> Path:
    return cache_folder("maturin", CACHE_ENV)




def find_tool(name: str) -> str | None:
    """``name`` on PATH, beside this Python (a venv's maturin), or in rustup's ``~/.cargo/bin``."""
    for folder in (Path(sys.executable).parent, None, Path.home() / ".cargo" / "bin"):
        found = shutil.which(name) if folder is None else shutil.which(name, path=str(folder))
        if found:
            return found
    return None


@lru_cache(maxsize=16)
def toolchain(folder: str) -> dict:
    """rustc's version (as rustup resolves it in ``folder``), its host and LLVM, maturin's version."""
    rustc = find_tool("rustc")
    if rustc is None or find_tool("cargo") is None:
        raise ConfigError("maturin: engines need the Rust toolchain (cargo, rustc): install it with rustup")
    try:
        proc = subprocess.run([rustc, "-vV"], cwd=folder, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"cannot run rustc -vV: {exc}") from None
    if proc.returncode != 0:
        raise ConfigError(f"rustc -vV failed in {folder}: {_first_error(proc.stderr)}")
    fields = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    try:
        maturin = metadata.version("maturin")
    except metadata.PackageNotFoundError:
        maturin = None
    return {"rustc": proc.stdout.splitlines()[0].strip(), "host": fields.get("host"),
            "llvm": fields.get("LLVM version"), "maturin": maturin, "rustc_vV": proc.stdout}


def rustflags(coverage: bool) -> tuple[str, str]:
    """(variable, value): the user's flags, plus the sancov flags for a coverage build."""
    if "CARGO_ENCODED_RUSTFLAGS" in os.environ:  # cargo prefers it to RUSTFLAGS
        flags = [f for f in os.environ["CARGO_ENCODED_RUSTFLAGS"].split("\x1f") if f]
        return "CARGO_ENCODED_RUSTFLAGS", "\x1f".join(flags + (list(COVERAGE_RUSTFLAGS) if coverage else []))
    flags = os.environ.get("RUSTFLAGS", "").split()
    return "RUSTFLAGS", " ".join(flags + (list(COVERAGE_RUSTFLAGS) if coverage else []))


def python_tag() -> str:
    return f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}-{sysconfig.get_config_var('SOABI')}"


def build_key(digest: str, member: str, request: BuildRequest, tools: dict) -> str:
    variable, flags = rustflags(request.coverage)
    doc = {"source": digest, "member": member, "features": sorted(request.features), "profile": request.profile,
           "coverage": request.coverage, variable: flags, "rustc": tools["rustc_vV"], "maturin": tools["maturin"],
           "python": python_tag()}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def rev_snapshot(source: CrateSource, cache: Path) -> Path:
    """The sources of ``source.commit`` (PATH@REV), extracted once: a commit never changes."""
    sub = hashlib.sha256(str(source.root).encode()).hexdigest()[:12]
    dest = cache / "revs" / f"{source.commit}-{sub}"
    complete = dest.with_name(dest.name + ".complete")
    with file_lock(dest.with_name(dest.name + ".lock")):
        if not complete.is_file():
            shutil.rmtree(dest, ignore_errors=True)
            archive_snapshot(source, dest)
            complete.write_text("")
    return dest


def ensure_built(source: CrateSource, request: BuildRequest) -> Build:
    """The build of ``source`` for ``request``: from the cache, or built now."""
    started = time.perf_counter()
    cache = cache_root()
    if source.rev is not None:  # the commit's files, extracted once and never built in
        origin = rev_snapshot(source, cache)
        names = source_files(origin, use_git=False)
    else:
        origin = source.root
        names = source_files(origin)
    digest = digest_files(origin, names)
    tools = toolchain(str(source.crate))
    key = build_key(digest, source.member, request, tools)
    folder = cache / "builds" / key[:32]
    record_path = folder / "build.json"
    if record_path.is_file():  # the common case, without taking the lock
        return Build(key, folder, folder / "site", _read(record_path), True, time.perf_counter() - started)
    waited_since = time.time()
    with file_lock(cache / "builds" / f"{key[:32]}.lock"):
        if record_path.is_file():  # built by another process while this one waited
            return Build(key, folder, folder / "site", _read(record_path), True, time.perf_counter() - started)
        failed = folder / "failed.json"
        if failed.is_file() and failed.stat().st_mtime >= waited_since:  # it failed while this one waited
            raise BuildFailed(_read(failed)["summary"], folder / "build.log")
        shutil.rmtree(folder, ignore_errors=True)  # what an interrupted or failed build left: try again
        folder.mkdir(parents=True)
        snapshot_root = folder / "src"  # built here: cargo may write Cargo.lock, never into the origin
        copy_snapshot(origin, names, snapshot_root)
        if digest_files(snapshot_root, names) != digest:
            raise ConfigError(f"maturin:{source.crate}: its sources changed while they were copied; run again")
        wheel = _run_maturin(source, snapshot_root, folder, request, tools, cache)
        site = folder / "site"
        _install(wheel, site, folder / "build.log", source)
        record = {"key": key, "source_digest": digest, "files": len(names), "member": source.member,
                  "built_from": {"crate": str(source.crate), "git": source.git_dict()},
                  "features": sorted(request.features),
                  "profile": request.profile, "coverage": request.coverage,
                  "rustflags": rustflags(request.coverage)[1],
                  "toolchain": {k: tools[k] for k in ("rustc", "host", "llvm", "maturin")},
                  "python": python_tag(), "wheel": wheel.name, "snapshot": str(snapshot_root),
                  "seconds": round(time.perf_counter() - started, 2), "built_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
        write_json(record_path, record)
    return Build(key, folder, site, record, False, time.perf_counter() - started)


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _run_maturin(source: CrateSource, snapshot_root: Path, folder: Path, request: BuildRequest, tools: dict,
                 cache: Path) -> Path:
    maturin = find_tool("maturin")
    if maturin is None:
        raise ConfigError("maturin: engines need maturin: pip install 'verify-tokenizers[maturin]'")
    variable, flags = rustflags(request.coverage)
    flag_key = hashlib.sha256(f"{request.profile}\0{variable}={flags}".encode()).hexdigest()[:16]
    target_dir = cache / "target" / flag_key
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir), variable: flags}
    cargo = find_tool("cargo")
    assert cargo is not None  # toolchain() checked
    env["PATH"] = os.pathsep.join([str(Path(cargo).parent), env.get("PATH", "")])
    cmd = [maturin, "build", "--profile", request.profile, "--out", str(folder / "wheel"),
           "--interpreter", sys.executable]
    if request.features:
        cmd += ["--features", ",".join(request.features)]
    if request.coverage and tools["host"]:
        cmd += ["--target", tools["host"]]  # RUSTFLAGS then reach the target's crates only, not build scripts
    log = folder / "build.log"
    with open(log, "w", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n# in {snapshot_root / source.member}\n# {variable}={flags!r}\n")
        fh.flush()
        try:
            # One build at a time in a target dir: two builds of one crate (two revisions, two
            # feature sets) write the same final artifact name, which maturin then moves.
            with file_lock(target_dir.with_name(target_dir.name + ".lock")):
                _touch(snapshot_root)
                proc = subprocess.run(cmd, cwd=snapshot_root / source.member, stdout=fh, stderr=subprocess.STDOUT,
                                      env=env, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ConfigError(f"maturin:{source.crate}: the build took over {BUILD_TIMEOUT_S} s; log: {log}") from None
        except OSError as exc:
            raise ConfigError(f"maturin:{source.crate}: cannot run maturin: {exc}") from None
    wheels = sorted((folder / "wheel").glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        summary = (f"maturin:{source.crate}: the build failed (maturin exit {proc.returncode}): "
                   f"{first_error(log)}")
        write_json(folder / "failed.json", {"summary": summary})  # for the processes waiting on this build
        raise BuildFailed(summary, log)
    return wheels[0]


def _touch(snapshot_root: Path) -> None:
    """Every file of the snapshot newer than anything built before in the shared target dir.
    cargo leaves a workspace member's path out of its metadata hash, so two snapshots of one
    crate (two revisions, or the tree before and after an edit) share cargo's fingerprint, which
    then goes by the sources' mtimes -- and a copied or archived file keeps an old one."""
    for folder, _, files in os.walk(snapshot_root):
        for name in files:
            os.utime(os.path.join(folder, name), None)


def _install(wheel: Path, site: Path, log: Path, source: CrateSource) -> None:
    """The wheel into the private dir, never into the environment."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile", "--quiet",
           "--disable-pip-version-check", "--target", str(site), str(wheel)]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=600)
    if proc.returncode != 0:
        raise ConfigError(f"maturin:{source.crate}: pip could not install {wheel.name} into {site}: "
                          f"{first_error(log)}; log: {log}")


def first_error(log: Path) -> str:
    """The compiler's first error (``error[E0425]: ...``, ``error: ...``), else maturin's last
    ``Caused by:`` line, else the last line of the log."""
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error")]
    causes = [line for line in lines if line.startswith("Caused by:")]
    return (errors[0] if errors else causes[-1] if causes else lines[-1] if lines else "no output")[:300]


def log_tail(log: Path, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


__all__ = ["Build", "BuildFailed", "BuildRequest", "CACHE_ENV", "cache_folder", "cache_root", "ensure_built",
           "first_error", "find_tool", "log_tail", "toolchain"]


def _first_error(stderr: str) -> str:
    """The line of a tool's stderr that says what is wrong: its first ``error`` line (rustup
    follows it with help and a backtrace), else its first line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return next((line for line in lines if line.lower().startswith("error")), lines[0] if lines else "?")
