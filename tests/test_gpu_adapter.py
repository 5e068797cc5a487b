"""GPU engines without a GPU: toktier's CUDA route refuses cleanly where CUDA is missing, declares
``device=cuda`` and reports its route (checked with a stand-in for toktier's GPU backend), device
engines get their own worker, bigger batches and no thread pinning, and the prepared device check
(ci/device/check.sh) only calls commands and options that exist."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import types

import pytest

from conftest import REPO, run_cli
from verify.engines.registry import parse_spec

CHECK = REPO / "ci" / "device" / "check.sh"


def _cuda_usable() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.version.cuda) and torch.cuda.is_available()


# --- the adapter -------------------------------------------------------------------------------

def test_the_gpu_route_without_cuda_is_one_clear_line_and_exit_2(tmp_path, tiny_spec):
    pytest.importorskip("toktier")
    if _cuda_usable():
        pytest.skip("this machine has a usable CUDA device")
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", "toktier:deepseek-v3?device=cuda",
                   "--corpus", "smoke", "--out", str(out), "--no-progress")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith("verify: error: toktier:deepseek-v3?device=cuda: toktier's GPU route needs")
    assert re.search(r"torch|CUDA|driver|device", lines[0])
    assert not (out / "manifest.json").exists()


class _Torch(types.ModuleType):
    def __init__(self, cuda_version, available=True):
        super().__init__("torch")
        self.__version__ = "2.11.0"
        self.version = types.SimpleNamespace(cuda=cuda_version)
        self.cuda = types.SimpleNamespace(is_available=lambda: available, device_count=lambda: int(available))


@pytest.mark.parametrize("torch_cuda, driver, cuda_level, expected", [
    (None, True, (13, 0), "CPU-only build"),
    ("13.0", False, (13, 0), "libcuda cannot be loaded"),
    ("13.0", True, "no-device", "found no CUDA device"),
    ("13.0", True, (12, 4), "supports CUDA 12.4, the prebuilt kernels need CUDA 13"),
    ("13.0", True, (13, 0), None),
])
def test_preflight_names_what_is_missing(monkeypatch, torch_cuda, driver, cuda_level, expected):
    pytest.importorskip("toktier")
    from toktier.engine.gpu.prebuilt import driver as cuda_driver

    from verify.engines import toktier_gpu
    from verify.errors import EngineUnavailableError

    class Driver:
        def driver_cuda_version(self):
            return cuda_level

    def get():
        if cuda_level == "no-device":
            raise cuda_driver.CudaDriverError("cuInit", 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device")
        return Driver()

    monkeypatch.setitem(sys.modules, "torch", _Torch(torch_cuda))
    monkeypatch.setattr(cuda_driver, "driver_available", lambda: driver)
    monkeypatch.setattr(cuda_driver.CudaDriver, "get", staticmethod(get))
    monkeypatch.setattr(toktier_gpu, "driver_release", lambda: "550.54")
    if expected is None:
        toktier_gpu.preflight("prebuilt")
        return
    with pytest.raises(EngineUnavailableError, match=re.escape(expected)):
        toktier_gpu.preflight("prebuilt")


@pytest.fixture
def stand_in_gpu(monkeypatch, tmp_path):
    """toktier believes a GPU is present; its GPU backend is a stand-in that returns the HF
    reference's ids (``fail`` makes it fail to load, as a fatbin the driver refuses would)."""
    pytest.importorskip("toktier")
    import toktier.engine.gpu.host_probe as host_probe
    import toktier.facade.api as api
    from toktier.routing.probe import DeviceInfo
    from tokenizers import Tokenizer

    from verify.engines import toktier_gpu

    probe = importlib.import_module("toktier.routing.probe")
    real = probe.importable_backends
    state = {"fail": None}

    class Backend:
        backend_id = "gpu"

        def __init__(self, path):
            self.tok = Tokenizer.from_file(str(path))

        def encode(self, text, *, add_special_tokens=True):
            return list(self.tok.encode(text, add_special_tokens=False).ids)

        def encode_batch(self, texts, *, add_special_tokens=True):
            return [self.encode(t) for t in texts]

        def close(self):
            pass

    def open_backend(tokenizer):
        if state["fail"]:
            raise RuntimeError(state["fail"])
        return Backend(tokenizer._artifact_handle.path("tokenizer.json"))

    monkeypatch.setenv("TOKTIER_HOME", str(tmp_path / "toktier"))
    monkeypatch.setattr(probe, "importable_backends", lambda *a, **k: frozenset(real(*a, **k)) | {"gpu"})
    monkeypatch.setattr(host_probe.CudaHostProbe, "devices",
                        lambda self: (DeviceInfo(index=0, name="stand-in", architecture="sm_90"),))
    monkeypatch.setattr(host_probe.CudaHostProbe, "driver_version", lambda self: "580.65.06")
    monkeypatch.setattr(toktier_gpu, "preflight", lambda delivery: None)
    monkeypatch.setattr(api.Tokenizer, "_open_gpu_backend", open_backend)
    return state


def test_the_gpu_route_declares_cuda_and_reports_the_route_it_took(stand_in_gpu, tiny_tokenizer_json):
    from tokenizers import Tokenizer

    from verify.engines import build_engine
    from verify.sample import Sample

    engine = build_engine(f"toktier:{tiny_tokenizer_json}?device=cuda&family=deepseek_v4_flash&gpu_delivery=jit")
    assert engine.capabilities.device == "cuda"
    options = engine.identity().options
    assert options | {"policy": options["policy"]} == {
        "device": "cuda", "batch": True, "gpu_delivery": "jit", "gpu_min_bytes": 0,
        "family": "deepseek_v4_flash", "policy": "experimental"}
    notes = engine.run_notes()  # nothing encoded yet besides the load-time warm-up and probes
    assert notes["warnings"] and "never ran" in notes["warnings"][0]
    assert notes["gpu"]["gpu_backend"]["loaded"] is True
    assert notes["gpu"]["route_key"]["delivery"] == "jit" and notes["gpu"]["route_key"]["image_digest"]
    assert notes["gpu"]["experimental_waivers"]

    reference = Tokenizer.from_file(str(tiny_tokenizer_json))
    texts = ["the quick tokenizer splits words", "numbers 12345 and symbols!"]
    out = engine.encode_batch([Sample.plain(str(i), t) for i, t in enumerate(texts)])
    assert [list(ids) for ids in out] == [reference.encode(t, add_special_tokens=False).ids for t in texts]
    notes = engine.run_notes()
    assert notes["run_execution_counts"] == {"gpu": 2} and "warnings" not in notes  # counted per document

    engine.encode_batch([Sample.plain("literal", "text <|endoftext|> typed by a user")])
    notes = engine.run_notes()
    assert notes["run_execution_counts"] == {"gpu": 2, "hf": 1}
    assert "1 of 3 toktier requests did not run on the GPU" in notes["warnings"][0]
    assert "R_INPUT_ADDED_TOKEN" in notes["warnings"][0]


def test_a_gpu_kernel_that_does_not_load_fails_the_load_with_one_line(stand_in_gpu, tiny_tokenizer_json):
    from verify.engines import build_engine
    from verify.errors import EngineUnavailableError

    stand_in_gpu["fail"] = "cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209)"
    with pytest.raises(EngineUnavailableError, match=r"GPU kernels did not run here: .*NO_BINARY_FOR_GPU"):
        build_engine(f"toktier:{tiny_tokenizer_json}?device=cuda&family=deepseek_v4_flash&gpu_delivery=jit")


def test_gpu_options_are_checked_before_anything_loads():
    pytest.importorskip("toktier")
    from verify.engines import build_engine
    from verify.errors import ConfigError

    for spec, message in [("toktier:p50k_base?device=cuda", "no family with the split rules of 'p50k_base'"),
                          ("toktier:deepseek-v3?device=cuda&family=deepseek_v3", "use ?family=deepseek_v4_flash"),
                          ("toktier:deepseek-v3?family=llama_3_1_8b", "it needs device=cuda"),
                          ("toktier:deepseek-v3?device=gpu", "device must be one of cpu, auto, cuda")]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            build_engine(spec)


# --- device-aware execution ---------------------------------------------------------------------------

FAKE_ENGINES = '''
import json, os
from verify.engines.base import Capabilities
from verify.engines.fake import FakeEngine

def log(engine, texts):
    with open(os.environ["DEVICE_TEST_LOG"], "a") as fh:
        fh.write(json.dumps({"engine": engine, "pid": os.getpid(), "batch": len(texts),
                             "pinned": os.environ.get("RAYON_NUM_THREADS")}) + "\\n")

class FakeGpuEngine(FakeEngine):
    adapter_name = "fakegpu"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, device="cuda")
    def encode_texts(self, texts, allow_special):
        log("gpu", texts)
        return super().encode_texts(texts, allow_special)

class FakeCpuEngine(FakeEngine):
    adapter_name = "fakecpu"
    def encode_texts(self, texts, allow_special):
        log("cpu", texts)
        return super().encode_texts(texts, allow_special)
'''


def test_a_device_engine_gets_its_own_worker_bigger_batches_and_no_pinning(plugin_dir, tmp_path, write_jsonl):
    """Registered as a third party would (an entry point), a fake engine declaring device="cuda"."""
    (plugin_dir / "device_test_engines.py").write_text(FAKE_ENGINES)
    dist = plugin_dir / "device_test_engines-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: device-test-engines\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[verify.engines]\nfakegpu = device_test_engines:FakeGpuEngine\n"
                                           "fakecpu = device_test_engines:FakeCpuEngine\n")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for part in ("a", "b"):
        (corpus / f"{part}.jsonl").write_text("".join(json.dumps({"text": f"{part} sample {i} with text"}) + "\n"
                                                      for i in range(300)))
    log, out = tmp_path / "calls.jsonl", tmp_path / "out"
    proc = run_cli("run", "--reference", "fakecpu:bytes", "--candidate", "fakegpu:bytes", "--corpus", str(corpus),
                   "--workers", "2", "--batch-size", "64", "--out", str(out), "--no-progress",
                   "--minimize-budget", "0", env={"DEVICE_TEST_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    gpu = [c for c in calls if c["engine"] == "gpu"]
    cpu = [c for c in calls if c["engine"] == "cpu"]
    assert len({c["pid"] for c in gpu}) == 1  # one engine process for the device, whatever --workers says
    assert len({c["pid"] for c in cpu}) == 2 and not {c["pid"] for c in gpu} & {c["pid"] for c in cpu}
    # shard batches grow to DEVICE_BATCH_SIZE past --batch-size; the device worker merges the shard
    # workers' requests on top, so the device engine never sees smaller batches than a CPU engine
    assert max(c["batch"] for c in gpu) > 64 and max(c["batch"] for c in gpu) >= max(c["batch"] for c in cpu)
    assert None not in {c["pinned"] for c in cpu} and {c["pinned"] for c in gpu} == {None}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["samples"] == 600
    assert manifest["engine_notes"]["fakegpu:bytes"]["device_worker"] == "cuda"


def test_where_an_engine_runs_is_known_before_it_loads():
    from verify.executors.devices import declared_device
    from verify.executors.pool import EngineOptions

    assert declared_device(parse_spec("toktier:deepseek-v3?device=cuda")) == "cuda"
    assert declared_device(parse_spec("toktier:deepseek-v3?device=auto")) == "cpu"
    assert declared_device(parse_spec("tiktoken:cl100k_base")) == "cpu"
    assert declared_device(parse_spec("nosuchadapter:x")) == "cpu"  # it says why when it is started
    pinned = EngineOptions(threads=1)
    assert pinned.for_device("cpu").threads == 1 and pinned.for_device("cuda").threads is None


# --- the prepared device check ------------------------------------------------------------------------

def _check_commands() -> list[list[str]]:
    """The verify and device_bench invocations of check.sh, with its variables filled in."""
    text = CHECK.read_text().replace("\\\n", " ")
    values = dict(re.findall(r'^(GPU_\w+)="\$\{\1:-([^}]*)\}"', text, re.M))
    values |= dict(re.findall(r"^(CPU_\w+)=(\S+)$", text, re.M))
    values |= {"OUT_DIR": "/tmp/device-out", "VPY": "python"}
    commands = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("step ") or ('"${VERIFY[@]}"' not in line and "verify.device_bench" not in line):
            continue
        line = line.replace('"${VERIFY[@]}"', "VERIFY").replace('"${COMMON[@]}"', "--no-progress")
        line = re.sub(r'"?\$(\w+)"?', lambda m: values[m.group(1)], line)
        words = line.split()
        start = words.index("VERIFY") + 1 if "VERIFY" in words else words.index("verify.device_bench") - 1
        commands.append(words[start:])
    return commands


def test_the_device_check_script_is_valid_and_calls_only_what_exists():
    assert subprocess.run(["bash", "-n", str(CHECK)], capture_output=True).returncode == 0
    from verify.cli import build_parser
    from verify.device_bench import parse_args
    from verify.engines.registry import adapters, parse_spec

    commands = _check_commands()
    kinds = [c[0] for c in commands]
    assert kinds.count("run") == 3 and {"unicode", "vocab", "fuzz", "-m"} <= set(kinds)
    for argv in commands:
        if argv[0] == "-m":  # python -m verify.device_bench ...
            args = parse_args(argv[2:])
            specs = [args.reference, *args.engine]
        else:
            args = build_parser().parse_args(argv)  # raises UsageError on an option that does not exist
            specs = [s for s in (args.reference, *(args.candidate or [])) if s]
        assert all(parse_spec(s).adapter in adapters() for s in specs), argv
    gpu_specs = set(re.findall(r'"\$\{GPU_\w+:-([^}]*)\}"', CHECK.read_text()))
    assert gpu_specs == {f"toktier:{v}?device=cuda" for v in ("deepseek-v3", "o200k_base", "cl100k_base")}


def test_the_carried_wheels_are_pinned_and_ignored_by_git():
    pins = [line for line in (REPO / "ci/device/wheels.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[a-z0-9][a-z0-9.-]*==[0-9][\w.]*", p) for p in pins)
    assert "toktier==0.3.0" in pins and any(p.startswith("numpy==") for p in pins)
    ignored = subprocess.run(["git", "check-ignore", "ci/device/wheels/x.whl", "ci/device/cache/vocab/x",
                              "ci/device/wheels-numpy/x.whl", "device-out/summary.md"],
                             cwd=REPO, capture_output=True, text=True).stdout.split()
    assert len(ignored) == 4
