"""A tokenizer built from its source: ``maturin:PATH[@REV][?OPTIONS]`` (docs/maturin.md).

``PATH`` is a crate with PyO3 bindings (a folder with ``Cargo.toml``, or a ``pyproject.toml``
project whose build backend is maturin); ``PATH@REV`` is that crate at a git revision (a tag,
a branch, a commit), built from ``git archive REV``, so a gate can put the deployed tag next to
the candidate branch: ``--reference maturin:.@v1.4.0 --candidate maturin:.``.

Options (anything else is refused in one line):

``features=a,b``    cargo features of the build
``profile=release`` the cargo profile (``release``, the default, or ``dev``)
``module=NAME``     the Python module to import (default: ``[tool.maturin] module-name``, else the
                    ``[lib]`` name, else the package name with ``-`` as ``_``)
``attr=FACTORY``    the module's factory (default ``engine``): ``FACTORY(VOCAB)`` with
                    ``target=VOCAB``, else ``FACTORY()``; it returns a ``python:`` plugin object
                    (``encode_batch``, optionally ``encode``, ``entry_points``, sessions,
                    ``supports_special`` + ``encode_segments``, and ``token_bytes(ids)``)
``target=VOCAB``    passed to the factory (a vocabulary file, a model name)
``coverage=1``      a SanitizerCoverage build whose counters ``verify fuzz --atheris`` feeds to
                    libFuzzer with the Python coverage (``verify.engines.maturin_coverage``)
``entry=NAME``      the entry point to drive, as for ``python:``

The build (``verify.engines.maturin_build``) is cached by a digest of the sources and
everything else it depends on; the wheel is installed into a private folder of the cache,
never into the environment, and that folder is put on ``sys.path`` here, in the process that
loads the engine (an isolated worker finds it the same way). The engine's identity carries the
source digest, the git revision and dirty flag, the toolchain and the build key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import re
import sys
import types
from pathlib import Path
from typing import Any

from verify.engines.base import Adapter, EngineIdentity, as_token_array
from verify.engines.maturin_build import Build, BuildRequest, ensure_built, find_tool
from verify.engine_spec import EngineSpec
from verify.engines.maturin_coverage import preload_libfuzzer, wants_coverage
from verify.engines.registry import wrapped_spec
from verify.engines.maturin_source import CrateSource, locate
from verify.engines.python_plugin import PythonPluginEngine, plugin_capabilities
from verify.errors import ConfigError
from verify.toml_config import read_toml

OPTIONS = ("features", "profile", "module", "attr", "target", "coverage", "entry")
DEFAULT_FACTORY = "engine"
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-/]*$")

_loaded: dict[str, types.ModuleType] = {}  # build key -> its module, loaded once a process


@dataclasses.dataclass(frozen=True)
class MaturinIdentity(EngineIdentity):
    """An engine identity with what was built: source digest, git state, toolchain, build key."""

    build: dict[str, Any] = dataclasses.field(default_factory=dict)


def build_request(spec: str, options: dict[str, Any]) -> BuildRequest:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"{spec}: unknown option(s) {', '.join(unknown)} (maturin options: {', '.join(OPTIONS)})")
    features = tuple(f.strip() for f in str(options.get("features", "")).split(",") if f.strip())
    profile = str(options.get("profile", "release"))
    for name in (*features, profile):
        if not NAME.match(name):
            raise ConfigError(f"{spec}: {name!r} is not a cargo feature or profile name")
    return BuildRequest(tuple(sorted(set(features))), profile, wants_coverage(options))


def module_name(crate: Path) -> str:
    """The import name maturin gives the extension."""
    pyproject = read_toml(crate / "pyproject.toml", "pyproject.toml", missing_ok=True)
    name = pyproject.get("tool", {}).get("maturin", {}).get("module-name")
    if name:
        return str(name)
    cargo = read_toml(crate / "Cargo.toml", "Cargo.toml", missing_ok=True)
    name = cargo.get("lib", {}).get("name") or cargo.get("package", {}).get("name") or pyproject.get(
        "project", {}).get("name")
    if not name:
        raise ConfigError(f"{crate}: cannot tell the module name (no [lib] name, [package] name or "
                          "[tool.maturin] module-name); pass ?module=NAME")
    return str(name).replace("-", "_")


def import_build(build: Build, module: str) -> types.ModuleType:
    """The module of ``build``, imported from its private folder. Under its own name when no
    other build of that name is loaded in this process (the private folder goes first on
    ``sys.path``); else under a package of its own (``_verify_maturin_KEY.NAME``), so that two
    revisions of one crate -- reference and candidate in one process -- are two modules."""
    if build.key in _loaded:
        return _loaded[build.key]
    site = str(build.site)
    top = module.partition(".")[0]
    held = sys.modules.get(top)
    try:
        if held is None or str(getattr(held, "__file__", "") or "").startswith(site):
            if site not in sys.path:
                sys.path.insert(0, site)
            importlib.invalidate_caches()
            loaded = importlib.import_module(module)
        else:
            parent = f"_verify_maturin_{build.key[:16]}"
            package = types.ModuleType(parent)
            package.__path__ = [site]  # type: ignore[attr-defined]
            sys.modules.setdefault(parent, package)
            loaded = importlib.import_module(f"{parent}.{module}")
    except ImportError as exc:
        hint = " (a coverage build needs libFuzzer's callbacks: is atheris installed?)" if "sanitizer_cov" in str(
            exc) else ""
        raise ConfigError(f"cannot import {module} from the build in {site}: {exc}{hint}") from None
    _loaded[build.key] = loaded
    return loaded


class MaturinEngine(PythonPluginEngine):
    adapter_name = "maturin"
    package = None

    def __init__(self, target, options=None, spec=None):
        Adapter.__init__(self, target, options, spec)  # not the python: init: the factory comes from a build
        self.source, self.build, factory_name, factory = _prepare(target, self.options, self.spec)
        vocab = self.options.get("target")
        self.engine = factory(str(vocab)) if vocab is not None else factory()
        self._adopt(self.engine, f"{self.spec}: {factory_name}()")
        if vocab is not None:
            self.vocab_name = str(vocab)
            path = Path(str(vocab))
            if path.is_file():
                self.vocab_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()

    @classmethod
    def declared_entry_points(cls, target, options):
        """The plugin object's own declaration (the crate is built, or found in the cache, to read it)."""
        try:
            _, _, _, factory = _prepare(target, dict(options), f"maturin:{target}")
            vocab = options.get("target")
            capabilities = plugin_capabilities(factory(str(vocab)) if vocab is not None else factory(), target)
        except Exception:
            return cls.capabilities, None  # it fails, in one line, when its engine starts
        entry = options.get("entry")
        declared = capabilities.entry_points
        return capabilities, str(entry) if entry is not None else (declared[0] if declared else None)

    def token_bytes(self, ids) -> list[bytes]:
        return [bytes(b) for b in self.engine.token_bytes([int(i) for i in as_token_array(ids)])]

    def identity(self) -> MaturinIdentity:
        record = self.build.record
        package, version = _package_of(built_crate(self.build))
        return MaturinIdentity(
            spec=self.spec, adapter=self.adapter_name, package=package, package_version=version,
            vocab=self.vocab_name, vocab_sha256=self.vocab_sha256, options=self.options,
            fingerprint=self.fingerprint(), name=self.declared_name, version=self.declared_version,
            build={**{k: record.get(k) for k in ("source_digest", "key", "features", "profile", "coverage",
                                                 "rustflags", "toolchain", "python", "wheel")},
                   # where these sources are: this spec's, not whichever tree first built the same content
                   "crate": str(self.source.crate), "member": self.source.member, "git": self.source.git_dict()})

    def run_notes(self) -> dict[str, Any]:
        """Added up over workers: how many built the crate and how many found it in the cache."""
        return {"maturin": {"builds": 0 if self.build.cached else 1, "cache_hits": 1 if self.build.cached else 0,
                            "build_seconds": round(self.build.seconds, 3), "build_folder": str(self.build.folder)}}


def prebuild_spec(spec: EngineSpec) -> Build | None:
    """Build the crate of a ``maturin:`` spec (or of the one a wrapper spec wraps), or find it in
    the cache, without loading it; None for any other spec."""
    if spec.adapter != "maturin":
        inner = wrapped_spec(spec)
        return None if inner is None else prebuild_spec(inner)
    return ensure_built(locate(spec.target, find_tool("cargo")), build_request(spec.text, spec.options))


def _prepare(target: str, options: dict[str, Any], spec: str) -> tuple[CrateSource, Build, str, Any]:
    """Locate, build (or find in the cache), import; the factory."""
    request = build_request(spec, options)
    source = locate(target, find_tool("cargo"))
    build = ensure_built(source, request)
    if request.coverage:
        preload_libfuzzer()  # before the extension is loaded: its counters register with libFuzzer
    module = import_build(build, str(options.get("module") or module_name(built_crate(build))))
    factory_name = str(options.get("attr", DEFAULT_FACTORY))
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ConfigError(f"{spec}: {module.__name__} has no callable {factory_name!r} (pass ?attr=FACTORY)")
    return source, build, factory_name, factory


def built_crate(build: Build) -> Path:
    """The crate's folder in the snapshot that was built (for PATH@REV: as it was at REV)."""
    return Path(build.record["snapshot"]) / build.record.get("member", ".")


def _package_of(crate: Path) -> tuple[str | None, str | None]:
    try:
        package = read_toml(crate / "Cargo.toml", "Cargo.toml", missing_ok=True).get("package", {})
    except ConfigError:
        return None, None
    version = package.get("version")
    return package.get("name"), version if isinstance(version, str) else None


__all__ = ["MaturinEngine", "MaturinIdentity", "build_request", "built_crate", "import_build", "module_name",
           "prebuild_spec"]
