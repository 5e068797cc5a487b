"""Native coverage for ``maturin:PATH?coverage=1`` engines (docs/maturin.md, "Native coverage").

A coverage build is compiled with LLVM's SanitizerCoverage (``COVERAGE_RUSTFLAGS``: inline 8-bit
counters, the PC table, comparison tracing), every crate of the build instrumented, for an
explicit ``--target`` so that build scripts and proc macros (host code) are not. Such a library
*calls* libFuzzer's callbacks: its module constructor hands its counters to
``__sanitizer_cov_8bit_counters_init`` and ``__sanitizer_cov_pcs_init`` when it is loaded, and
every comparison calls ``__sanitizer_cov_trace_cmp*``. It does not define them: they must already
be in the process's global symbol scope when the extension is loaded, or the import fails with
"undefined symbol: __sanitizer_cov_8bit_counters_init".

atheris ships libFuzzer inside ``atheris/core_with_libfuzzer*.so``, but Python loads extension
modules ``RTLD_LOCAL`` and atheris loads that one only when ``atheris.Fuzz()`` starts. So
``preload_libfuzzer()`` loads it with ``RTLD_GLOBAL`` *before* the extension: the extension's
counters then register with the very libFuzzer that atheris drives (``dlopen`` of the same file
is the same library), next to atheris's Python counters. The fuzz target then tells atheris to
use that built-in libFuzzer (``atheris.Setup(..., internal_libfuzzer=True)``): without it atheris
would see libFuzzer already loaded and switch to its core without libFuzzer.

Outside a fuzzer (a replay, a ``verify run`` on a coverage build) the callbacks only fill
libFuzzer's tables; atheris must still be installed for the extension to load.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from pathlib import Path

from verify.engine_spec import EngineSpec
from verify.engines.registry import wrapped_spec
from verify.errors import ConfigError

COVERAGE_RUSTFLAGS = (
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=3",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
)
INSTALL_HINT = "pip install atheris (a coverage build loads libFuzzer's callbacks from it)"

_preloaded: Path | None = None


def libfuzzer_library() -> Path:
    """atheris's own copy of libFuzzer (the file ``atheris.Fuzz()`` loads)."""
    spec = importlib.util.find_spec("atheris")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"a coverage build (?coverage=1) needs atheris: {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("core_with_libfuzzer*.so"))
        if found:
            return found[0]
    raise ConfigError(f"this atheris has no built-in libFuzzer (core_with_libfuzzer*.so); {INSTALL_HINT} "
                      "from a wheel, or LD_PRELOAD a libFuzzer of your own")


def preload_libfuzzer() -> Path:
    """Put libFuzzer's sanitizer-coverage callbacks in the global symbol scope (once a process)."""
    global _preloaded
    if _preloaded is None:
        path = libfuzzer_library()
        import atheris  # noqa: F401  (atheris first, as its docs ask, then its libFuzzer)

        try:
            ctypes.CDLL(str(path), mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        except OSError as exc:
            raise ConfigError(f"cannot load libFuzzer from {path}: {exc}") from None
        _preloaded = path
    return _preloaded


def libfuzzer_preloaded() -> bool:
    return _preloaded is not None


def wants_coverage(options: dict) -> bool:
    value = options.get("coverage", False)
    if isinstance(value, str):
        if value.lower() in ("", "0", "no", "off"):
            return False
        if value.lower() in ("1", "yes", "on"):
            return True
        raise ConfigError(f"coverage={value!r}: use coverage=1 (or 0)")
    return bool(value)


def wants_native_coverage(spec: EngineSpec) -> bool:
    """Whether ``spec`` (or the engine a wrapper spec wraps) is a ``maturin:`` coverage build."""
    if spec.adapter == "maturin":
        try:
            return wants_coverage(spec.options)
        except ConfigError:
            return False
    try:
        inner = wrapped_spec(spec)
    except ConfigError:  # a wrapper of an engine unknown here: it fails to start later, with its reason
        return False
    return inner is not None and wants_native_coverage(inner)


__all__ = ["COVERAGE_RUSTFLAGS", "libfuzzer_library", "libfuzzer_preloaded", "preload_libfuzzer",
           "wants_coverage", "wants_native_coverage"]
