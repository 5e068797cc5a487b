"""toktier's CUDA route (``toktier:VOCAB?device=cuda``): what it needs, which kernel runs a vocabulary, what it reports.

toktier runs GPU kernels for the *kernel families* of its routing data
(``toktier/kernels/tables/kernel_families.v1.json``): a family names a band
(the pre-tokenizer's split rules, compiled into the kernel), a digit-run bound,
a character-class table and whether contractions split. The BPE tables are
exported from whatever tokenizer.json the family is loaded with. Our
vocabularies are not toktier's pinned artifacts byte for byte, so toktier has
no certification record for them: its default policy refuses the GPU route
(``R_UNCERTIFIED_ARTIFACT``), and ``policy=experimental`` -- toktier's own way
to measure what no campaign judged -- admits it and records the waived premise
(``experimental_waivers``, in the manifest). The adapter loads a known
vocabulary under the kernel family whose split rules are the vocabulary's own
(``KERNEL_FAMILIES``); ``?family=NAME`` names another.

Loading fails with one line naming what is missing, checked in the order a
reader can act on: torch, the NVIDIA driver and its CUDA level, a visible
device, toktier's plan, and finally whether the kernel actually ran on a
warm-up input (a fatbin the driver refuses surfaces only there).
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from verify.errors import ConfigError, EngineUnavailableError

# Our vocabulary name -> the toktier kernel family whose compiled split rules are its own.
KERNEL_FAMILIES: dict[str, str] = {
    # deepseek band (three-splitter ruleset, digits {1,3} from the class-table metadata). Not
    # deepseek_v3 itself: that family shares its BPE tables with deepseek_v4_flash's artifact.
    "deepseek-v3": "deepseek_v4_flash",
    # o200k band, digits {1,3}, contractions: o200k_base's pattern (GPT-OSS's o200k_harmony
    # is o200k_base with more special tokens).
    "o200k_base": "gpt_oss_120b",
    # cl100k band, digits {1,3}, contractions: cl100k_base's pattern, which Llama 3 uses verbatim.
    "cl100k_base": "llama_3_1_8b",
}

# toktier 0.3.0's prebuilt fatbin is a CUDA 13.x build: it needs a CUDA 13 (r580, 580.65.06+) driver.
CUDA_DRIVER_FLOOR = (13, 0)
TORCH_HINT = "pip install 'toktier[gpu]' (torch ~2.11 with CUDA 13)"
WARMUP_TEXT = "verify warm-up: the GPU route runs 12345 tokens."
GPU_ROUTE = "gpu"


# --- before toktier is asked ------------------------------------------------------------

def preflight(delivery: str) -> None:
    """Raise ``EngineUnavailableError`` naming the first missing piece: torch, the
    driver (and its CUDA level, for the prebuilt fatbin), a visible CUDA device."""
    try:
        import torch
    except ImportError as exc:
        raise EngineUnavailableError(f"toktier's GPU route needs torch, which is not installed ({exc}): "
                                     f"{TORCH_HINT}") from None
    if getattr(torch.version, "cuda", None) is None:
        raise EngineUnavailableError(f"toktier's GPU route needs a CUDA build of torch; torch "
                                     f"{torch.__version__} is a CPU-only build: {TORCH_HINT}")
    from toktier.engine.gpu.prebuilt.driver import CudaDriver, CudaDriverError, driver_available

    if not driver_available():
        raise EngineUnavailableError("toktier's GPU route needs the NVIDIA driver: libcuda cannot be loaded "
                                     "(no driver installed, or not visible in this container)")
    try:
        major, minor = CudaDriver.get().driver_cuda_version()
    except CudaDriverError as exc:
        if exc.status == 100:  # CUDA_ERROR_NO_DEVICE
            raise EngineUnavailableError(f"toktier's GPU route found no CUDA device (driver loaded, none visible; "
                                         f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})"
                                         ) from None
        raise EngineUnavailableError(f"toktier's GPU route: the CUDA driver refused to start: {exc}") from None
    if delivery != "jit" and (major, minor) < CUDA_DRIVER_FLOOR:
        raise EngineUnavailableError(
            f"toktier's GPU route needs a newer CUDA driver: this one ({driver_release() or 'version unknown'}) "
            f"supports CUDA {major}.{minor}, the prebuilt kernels need CUDA {CUDA_DRIVER_FLOOR[0]} "
            "(an r580 driver, 580.65.06 or newer)")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        raise EngineUnavailableError(f"toktier's GPU route found no usable CUDA device: torch {torch.__version__} "
                                     f"(CUDA {torch.version.cuda}) sees none under a driver for CUDA {major}.{minor}")


def driver_release() -> str | None:
    """The NVIDIA driver release (``580.65.06``), read the way toktier's probe reads it."""
    try:
        from toktier.engine.gpu.host_probe import _system_driver_version
    except ImportError:
        return None
    return _system_driver_version()


def kernel_family(vocab_name: str | None, requested: str | None) -> str:
    """The toktier kernel family a vocabulary loads under (``?family=`` wins)."""
    from toktier.engine.gpu.families import KernelFamilyTable

    table = KernelFamilyTable.load()
    family = requested or KERNEL_FAMILIES.get(vocab_name or "")
    if family is None:
        raise ConfigError(f"toktier's GPU kernels have no family with the split rules of '{vocab_name}': "
                          f"name one with ?family= ({', '.join(table.names())})")
    entry = table.find(family)
    if entry is None:
        raise ConfigError(f"toktier has no GPU kernel family '{family}' ({', '.join(table.names())})")
    if not table.supports_e2e(family):
        raise ConfigError(f"toktier's kernel family '{family}' has no end-to-end GPU encoder")
    if entry.shares_model_with:
        raise ConfigError(f"toktier's kernel family '{family}' reads its BPE tables from "
                          f"'{entry.shares_model_with}''s artifact; use ?family={entry.shares_model_with}")
    return family


# --- what toktier said ---------------------------------------------------------------------

def refusal(exc: Exception, policy: str | None) -> EngineUnavailableError:
    """One line for an error toktier raised while loading with ``device="cuda"``."""
    details: Mapping[str, Any] = getattr(exc, "details", None) or {}
    code = details.get("reason_code")
    reason = details.get("reason") or {}
    if code == "R_BACKEND_UNAVAILABLE":
        line = f"toktier's GPU backend is not importable here (missing: {reason.get('missing')}): {TORCH_HINT}"
    elif code == "R_NO_GPU_DETECTED":
        line = "toktier's device probe found no usable CUDA device"
    elif code == "R_DRIVER_TOO_OLD":
        line = (f"toktier's GPU route needs a newer CUDA driver (installed {reason.get('installed')}, "
                f"required {reason.get('required')})")
    elif code == "R_GPU_DISABLED":
        line = "toktier's configuration disables the GPU (TOKTIER_DISABLE_GPU)"
    elif code == "R_UNCERTIFIED_ARTIFACT":
        line = (f"toktier refuses its GPU route for this vocabulary under policy={policy or 'supported'} "
                f"(R_UNCERTIFIED_ARTIFACT: {reason.get('cause')}); ?policy=experimental runs it")
    elif code:
        line = f"toktier refused its GPU route ({code}: {dict(reason)})"
    else:
        line = f"toktier could not load with device=cuda: {type(exc).__name__}: {exc}"
    return EngineUnavailableError(line)


def require_gpu_ran(tokenizer) -> None:
    """After the warm-up request: raise unless it executed on toktier's GPU backend."""
    report = tokenizer.explain()
    last = (report.get("runtime_policy") or {}).get("last_execution") or {}
    backend = report.get("gpu_backend") or {}
    if last.get("executed_backend") == GPU_ROUTE:
        return
    why = backend.get("load_error") or f"the warm-up request ran on {last.get('executed_backend') or 'nothing'}"
    raise EngineUnavailableError(f"toktier's GPU kernels did not run here: {why}")


def gpu_report(tokenizer) -> dict[str, Any]:
    """The GPU facts of the route taken: delivery (prebuilt fatbin or JIT), kernel image and
    class-table digests, device architecture, driver, toolchain, and toktier's certification view."""
    full = tokenizer.explain()
    key = tokenizer.verification_key("gpu")
    deliveries = full.get("kernel_deliveries") or {}
    probe = full.get("probe") or {}
    return {
        "kernel_delivery": full.get("kernel_delivery"),  # what this process loaded: prebuilt | jit | None
        "kernel_family": full.get("family"),
        "gpu_backend": full.get("gpu_backend"),  # planned, device, loaded, load_error
        "route_key": {name: getattr(key, name) for name in (
            "delivery", "architecture", "image_digest", "class_table_digest", "build_flags", "toolchain",
            "driver_version", "host_source_digest", "engine_source_digest")} if key is not None else None,
        "devices": probe.get("devices"),
        "driver_version": probe.get("driver_version"),
        "prebuilt": deliveries.get("prebuilt"),
        "jit": deliveries.get("jit"),
        "experimental_waivers": full.get("experimental_waivers"),
        "supported_untested": full.get("supported_untested"),
        "gpu_min_bytes": (full.get("runtime_policy") or {}).get("gpu_min_bytes"),
    }


def subtract(counts: Mapping[str, int] | None, baseline: Mapping[str, int]) -> dict[str, int]:
    """Counts since the baseline (the load-time warm-up and fingerprint probes), zeros dropped."""
    out = {k: int(v) - int(baseline.get(k, 0)) for k, v in (counts or {}).items()}
    return {k: v for k, v in sorted(out.items()) if v}


def gpu_warnings(executions: Mapping[str, int], fallbacks: Mapping[str, int]) -> list[str]:
    """Say so when the run's requests did not all execute on the GPU."""
    total = sum(executions.values())
    elsewhere = {k: v for k, v in executions.items() if k != GPU_ROUTE}
    reasons = ", ".join(f"{k} x{v}" for k, v in fallbacks.items()) or "no reason recorded"
    where = ", ".join(f"{k} x{v}" for k, v in elsewhere.items())
    if not executions.get(GPU_ROUTE):
        ran = f"its {total} requests ran on {where}" if total else "it was given no input"
        return [f"toktier's GPU route never ran in this run ({ran}; {reasons}): nothing here verifies its GPU kernels"]
    if elsewhere:
        return [f"{sum(elsewhere.values())} of {total} toktier requests did not run on the GPU ({where}; {reasons}): "
                "those samples verify toktier's CPU fallback, not its GPU kernels"]
    return []
