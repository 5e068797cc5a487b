"""An engine in its own environment: ``SPEC?pip=REQ[,REQ]`` and ``SPEC?python=/venv/bin/python``.

    env = environment_for({"pip": "fastokens-b10==0.2.17"})   # built once, then found in the cache
    env.activate()                                            # its packages first on sys.path

Two versions (or two forks) of one package install the same module, so one process can hold
only one of them. An engine with ``?pip=`` runs in its own worker process (every engine does,
unless ``--in-process``) whose import path starts with a private environment holding the
requirements: a venv made once per *environment key* (the requirements, a local wheel's
SHA-256, the interpreter and its version) in the cache (``$VERIFY_ENV_CACHE``, else
``$XDG_CACHE_HOME/verify/envs``), the way ``maturin:`` caches its builds
(``verify.config.cache_folder`` and ``verify.atomic.file_lock``, as ``verify.engines.maturin_build``)::

    envs/KEY/venv/        python -m venv --without-pip; a .pth file there names this
                          interpreter's site-packages, so pip installs only what they lack
    envs/KEY/pip.log      pip's output (its error, on a failure)
    envs/KEY/env.json     written last: the environment is complete

``?python=/path/to/venv/bin/python`` runs the engine on the packages of another environment
(one you made, with your engine installed): its site-packages come first on the worker's import
path. The interpreter must be the Python verify runs on (the same major.minor: the worker
imports verify, numpy and the engine side by side); with ``?pip=`` too, the private venv is
made from that interpreter. The harness itself (``verify``) always comes from this install.

The environment is part of the engine's identity (``environment``: requirements, interpreter,
key), so two builds of one package are two engines in the manifest, the ledger and the cases.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from verify.atomic import file_lock, write_json
from verify.errors import ConfigError

ENVIRONMENT_OPTIONS = ("pip", "python")  # spec options that choose the environment, never the adapter's
CACHE_ENV = "VERIFY_ENV_CACHE"
PIP_TIMEOUT_S = 1800
PROBE_TIMEOUT_S = 120
ENV_SCHEMA = "verify.environment/1"


@dataclass(frozen=True)
class Environment:
    key: str
    requirements: tuple[str, ...]
    python: str  # the interpreter the environment is for
    python_version: str
    site: tuple[str, ...]  # put first on sys.path, in order
    folder: Path | None  # the private venv's folder (None: ?python= alone, someone else's environment)
    installed: tuple[str, ...] = ()  # name==version of what the private venv holds itself

    def describe(self) -> dict[str, Any]:
        """The identity's ``environment``."""
        return {"requirements": list(self.requirements), "python": self.python, "python_version": self.python_version,
                "key": self.key[:16], "installed": list(self.installed)}

    def activate(self) -> None:
        """Its packages first on this process's import path (a worker's, before the engine loads)."""
        import importlib

        for path in reversed(self.site):
            if path in sys.path:
                sys.path.remove(path)
            sys.path.insert(0, path)
        importlib.invalidate_caches()


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the adapter's options, the environment's options) of a spec."""
    return ({k: v for k, v in options.items() if k not in ENVIRONMENT_OPTIONS},
            {k: v for k, v in options.items() if k in ENVIRONMENT_OPTIONS})


def requirements_of(value: Any) -> tuple[str, ...]:
    reqs = tuple(r.strip() for r in str(value).split(",") if r.strip())
    if not reqs:
        raise ConfigError("?pip= names no requirement (pip=NAME==VERSION, several separated by commas)")
    for req in reqs:
        if req.startswith("-"):
            raise ConfigError(f"?pip={req}: a requirement, not a pip option")
    return reqs


def cache_root() -> Path:
    from verify.config import cache_folder

    return cache_folder("envs", CACHE_ENV)


@lru_cache(maxsize=16)
def interpreter(python: str) -> dict[str, Any]:
    """What an interpreter is: its real path, its version, its site-packages (asked once)."""
    path = Path(python).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise ConfigError(f"?python={python}: no such interpreter (give the path of a python executable, "
                          "e.g. /path/to/venv/bin/python)")
    probe = ("import json, site, sys, sysconfig; print(json.dumps({'version': '%d.%d' % sys.version_info[:2], "
             "'prefix': sys.prefix, 'site': [p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]"
             " or [sysconfig.get_paths()['purelib']]}))")
    try:
        proc = subprocess.run([str(path), "-c", probe], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"?python={python}: cannot run it ({exc})") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"?python={python}: it does not run ({last})")
    info = json.loads(proc.stdout)
    ours = "%d.%d" % sys.version_info[:2]
    if info["version"] != ours:
        raise ConfigError(f"?python={python} is Python {info['version']}; verify runs on Python {ours} and its "
                          f"worker imports verify beside the engine: give a Python {ours} environment")
    return {"path": str(path), "version": info["version"], "site": list(info["site"])}


def our_site() -> list[str]:
    """This interpreter's own package folders, as the private venv's .pth names them."""
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]


def _requirement_digest(req: str) -> str:
    """A local wheel or sdist counts by its contents (rebuilt: another environment)."""
    path = Path(req).expanduser()
    if path.is_file():
        h = hashlib.sha256(path.read_bytes()).hexdigest()
        return f"{path.name}@{h}"
    return req


def environment_key(requirements: tuple[str, ...], python: dict[str, Any] | None) -> str:
    doc = {"schema": ENV_SCHEMA, "requirements": sorted(_requirement_digest(r) for r in requirements),
           "python": python["path"] if python else os.path.realpath(sys.executable),
           "version": python["version"] if python else "%d.%d" % sys.version_info[:2]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def environment_for(options: dict[str, Any]) -> Environment | None:
    """The environment a spec's options ask for (built now, or found in the cache); None when
    they ask for none."""
    _, env = split_options(options)
    if not env:
        return None
    python = interpreter(str(env["python"])) if env.get("python") is not None else None
    if env.get("pip") is None:  # ?python= alone: that environment's packages, as they are
        assert python is not None
        key = environment_key((), python)
        return Environment(key, (), python["path"], python["version"], tuple(python["site"]), None)
    requirements = requirements_of(env["pip"])
    return ensure_environment(requirements, python)


def ensure_environment(requirements: tuple[str, ...], python: dict[str, Any] | None) -> Environment:
    key = environment_key(requirements, python)
    folder = cache_root() / key[:32]
    record = folder / "env.json"
    if not record.is_file():
        with file_lock(folder.with_name(folder.name + ".lock")):  # one process builds, the others wait
            if not record.is_file():
                _build(folder, requirements, python, key)
    doc = json.loads(record.read_text(encoding="utf-8"))
    return Environment(key, tuple(doc["requirements"]), doc["python"], doc["python_version"], tuple(doc["site"]),
                       folder, tuple(doc.get("installed", [])))


def _build(folder: Path, requirements: tuple[str, ...], python: dict[str, Any] | None, key: str) -> None:
    import shutil

    started = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)  # what an interrupted or failed build left: try again
    folder.mkdir(parents=True)
    base = python["path"] if python else sys.executable
    venv = folder / "venv"
    log = folder / "pip.log"
    _run([base, "-m", "venv", "--without-pip", str(venv)], log, f"cannot make a venv with {base}")
    env_python = venv / "bin" / "python"
    site = interpreter.__wrapped__(str(env_python))["site"][:1]  # the venv's own site-packages
    if not site:
        raise ConfigError(f"the private environment {venv} has no site-packages")
    parent_site = python["site"] if python else our_site()
    Path(site[0], "_verify_parent.pth").write_text("".join(f"{p}\n" for p in parent_site), encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", str(env_python), "install", "--disable-pip-version-check",
          "--no-input", "--no-warn-script-location", *requirements], log,
         f"pip could not install {', '.join(requirements)}")
    installed = sorted(_installed(Path(site[0])))
    write_json(folder / "env.json", {"schema": ENV_SCHEMA, "key": key, "requirements": list(requirements),
                                     "python": str(python["path"] if python else sys.executable),
                                     "python_version": python["version"] if python else
                                     "%d.%d" % sys.version_info[:2], "site": site, "installed": installed,
                                     "seconds": round(time.perf_counter() - started, 2),
                                     "built_at": time.strftime("%Y-%m-%dT%H:%M:%S")})


def _installed(site: Path) -> list[str]:
    """name==version of every distribution the private site-packages holds itself."""
    from importlib import metadata

    return [f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions(path=[str(site)])]


def _run(cmd: list[str], log: Path, what: str) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        try:
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, timeout=PIP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"{what}: {exc}; log: {log}") from None
    if proc.returncode != 0:
        raise ConfigError(f"{what}: {_error_line(log)}; log: {log}")


def _error_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.upper().startswith("ERROR")]
    return (errors[0] if errors else lines[-1] if lines else "no output")[:300]


def environment_summary(env: Environment) -> str:
    """`verify engines --pip REQ`'s head: what the environment is and what it holds."""
    where = f"{env.folder}" if env.folder else "(someone else's environment, as it is)"
    held = ", ".join(env.installed) or "nothing of its own"
    return (f"environment {env.key[:16]}: Python {env.python_version} ({env.python}); "
            f"requirements: {', '.join(env.requirements) or '-'}; installs: {held}; in {where}")


def check_loaded_from(env: Environment, module: str | None, spec: str) -> None:
    """Refuse (one line) an engine whose module this process had already loaded from elsewhere
    before its environment came first (``--in-process``, or two builds in one worker): it
    would run the other build under this one's name."""
    if not module or env.folder is None:
        return
    top = module.partition(".")[0]
    loaded = sys.modules.get(top)
    file = getattr(loaded, "__file__", None) or ""
    own = [Path(s) for s in env.site]
    if file and any((Path(s) / top).exists() or any(Path(s).glob(f"{top}.*")) for s in own) \
            and not any(Path(file).resolve().is_relative_to(s.resolve()) for s in own):
        raise ConfigError(f"{spec}: this process had already loaded {top} from {Path(file).parent}, so it cannot "
                          f"load the build of its private environment; engines with ?pip= run in their own worker "
                          "(drop --in-process)")
