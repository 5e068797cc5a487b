"""Adapter for ``toktier`` (certified routing over HF tokenizers / corrected Gigatoken / GPU).

Specs:
  toktier:cl100k_base | o200k_base | p50k_base   our tiktoken vocabulary converted to tokenizer.json
  toktier:deepseek-v3 | anthropic                 a known tokenizer.json vocabulary
  toktier:path/to/tokenizer.json                  a local file
  toktier:qwen3_8b                                a toktier family id (fetched by toktier; network)
  toktier:org/model                               ``toktier.from_pretrained`` (network)

Local files are loaded offline through ``toktier.load(family, manifest=...)``
with a one-entry artifact manifest pinning the file's SHA-256; the file is
copied into toktier's artifact cache first. Such an artifact has no
certification record, so toktier runs it as ``uncertified`` (on its reference
route); ``route_report()`` says what it actually did.

Options: ``policy`` (a ``toktier.RoutingPolicy`` value: supported, certified,
reference, require_accelerated, experimental; default toktier's own),
``device`` (toktier's own switch: cpu, auto, cuda; default cpu), ``batch``
(true: one ``encode_batch`` call per batch; default true with device=cuda).
Entry points: ``single`` (``encode(text, lookup="off")``) and ``batch``
(``encode_batch``); ``?entry=batch`` is ``?batch=true``, ``?entry=single`` is
``?batch=false`` (both given, they must agree).
Sessions (``capabilities.sessions``, ``verify.engines.toktier_sessions``): ``patch=true``
appends with ``append_patch`` instead of ``append``; ``store=DIR`` is toktier's
persistent session store.

``device=cuda`` is the GPU route (``verify.engines.toktier_gpu``):
``capabilities.device`` is "cuda", every input goes to the GPU
(``gpu_min_bytes``, toktier's crossover, defaults to 0 here; 65536 is
toktier's own), ``gpu_delivery`` (auto, prebuilt, jit) is passed through, a
known vocabulary loads under the toktier kernel family with its split rules
(``family=`` names another) with ``policy=experimental`` unless a policy is
given, and loading fails with one line when torch, the driver or a device is
missing or the kernel did not run on a warm-up input. The manifest records
the route's delivery, kernel digests, device and driver (``gpu``), and a
warning when requests of the run did not execute on the GPU.

Every encode is stateless (``lookup="off"``). toktier has no switch that makes
special-token literals ordinary text, so ``capabilities.special_tokens`` is
False: text is encoded as the engine does by default (special literals match).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

from verify.engines import toktier_gpu as gpu
from verify.engines.base import Capabilities, as_token_array
from verify.engines.common import HUB_ID, TOKENIZER_JSON_KINDS, is_local_target
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError, EngineUnavailableError, VerifyError

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic")

_FAMILY_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
DEVICES = ("cpu", "auto", "cuda")


# toktier's own fallback: the HF tokenizers path it certifies its fast paths against.
REFERENCE_ROUTES = {"hf"}


class ToktierEngine(VocabAdapter):
    adapter_name = "toktier"
    package = "toktier"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False, sessions=True,
                                entry_points=("single", "batch"))
    gpu_capabilities = dataclasses.replace(capabilities, device="cuda")  # device=cuda: the GPU route
    entry_replaces = ("batch",)
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True,
                  options=("policy", "device", "batch", "family", "gpu_delivery", "gpu_min_bytes", "patch", "store",
                           "encoding"))

    def open(self, target: str) -> None:
        try:
            super().open(target)
        except VerifyError as exc:  # say which engine: a run loads several
            raise type(exc)(f"{self.spec}: {exc}") from None

    def configure(self) -> None:
        import toktier

        device = str(self.options.get("device", "cpu")).lower()
        if device not in DEVICES:
            raise ConfigError(f"device must be one of {', '.join(DEVICES)}, not '{device}'")
        self.options["device"] = device
        self.on_gpu = device == "cuda"
        self.batch = self._batch(self.options)
        if self.on_gpu:
            self.options["batch"] = self.batch
        if "family" in self.options and not self.on_gpu:
            raise ConfigError("family= names the GPU kernel family; it needs device=cuda")
        kwargs: dict = {"device": device}
        if self.on_gpu:
            self.capabilities = self.gpu_capabilities  # an instance attribute shadows the class default
            kwargs.update(self._gpu_kwargs(is_local_target(self.target)))
        else:
            kwargs.update({k: self.options[k] for k in ("gpu_delivery", "gpu_min_bytes") if k in self.options})
        if self.options.get("store"):  # toktier's persistent session store (bound at load)
            kwargs["store"] = str(Path(str(self.options["store"])).expanduser())
        policy = self.options.get("policy")
        if policy is not None:
            policies = [p.value for p in toktier.RoutingPolicy]
            if str(policy).lower() not in policies:
                raise ConfigError(f"policy must be one of {', '.join(policies)}, not '{policy}'")
            kwargs["policy"] = toktier.RoutingPolicy(str(policy).lower())
        self._kwargs = kwargs

    @staticmethod
    def _batch(options) -> bool:
        """Whether encodes go through ``encode_batch``: ``?entry=``, else ``?batch=``, else the GPU route."""
        entry, batch = options.get("entry"), options.get("batch")
        if entry is not None and batch is not None and bool(batch) != (entry == "batch"):
            raise ConfigError(f"entry={entry} and batch={str(batch).lower()} disagree")
        if entry is not None:
            return entry == "batch"
        return bool(batch) if batch is not None else str(options.get("device", "cpu")).lower() == "cuda"

    @property
    def default_entry(self) -> str:
        return "batch" if self.batch else "single"

    @classmethod
    def declared_entry_points(cls, target, options):
        try:
            batch = cls._batch(options)
        except ConfigError:  # refused when the engine loads, in one line
            batch = False
        return cls.capabilities, "batch" if batch else "single"

    def locate(self, target: str):
        if not is_local_target(target) and _FAMILY_ID.fullmatch(target):  # a toktier family id, by name
            return self.by_name(target)
        return super().locate(target)

    def load(self, vocab) -> None:
        import toktier
        from toktier.errors import ToktierError

        try:
            if vocab is None and HUB_ID.fullmatch(self.target):
                self.tokenizer = toktier.from_pretrained(self.target, **self._kwargs)  # needs a network
            elif vocab is None:
                self.tokenizer = toktier.load(self.target, **self._kwargs)  # toktier's own artifact cache / network
            else:
                path = self.tokenizer_json(vocab)
                family = self.options["family"] if self.on_gpu else "verify-" + (self.vocab_name or path.name)
                self.tokenizer = _load_local(path, family, self._kwargs)
            self._baseline: dict[str, dict[str, int]] = {}
            if self.on_gpu:
                self._warm_up()
        except ToktierError as exc:
            if not self.on_gpu:
                raise
            raise gpu.refusal(exc, self.options.get("policy")) from None

    def _gpu_kwargs(self, local: bool) -> dict:
        """toktier's GPU-route keywords, recorded in the options (and so the manifest)."""
        delivery = str(self.options.setdefault("gpu_delivery", "auto"))
        min_bytes = self.options.setdefault("gpu_min_bytes", 0)
        if not isinstance(min_bytes, int) or min_bytes < 0:
            raise ConfigError("gpu_min_bytes must be a non-negative integer")
        if local:
            self.options["family"] = gpu.kernel_family(self.target, self.options.get("family"))
            self.options.setdefault("policy", "experimental")  # no certification record for our files
        gpu.preflight(delivery)
        return {"gpu_delivery": delivery, "gpu_min_bytes": min_bytes}

    def _warm_up(self) -> None:
        """One request that must execute on the GPU, then the fingerprint probes; what
        the run itself does is counted from here (``run_notes``)."""
        try:
            self.encode_texts([gpu.WARMUP_TEXT], False)
        except Exception as exc:  # torch / CUDA errors are not ToktierErrors
            raise EngineUnavailableError(f"toktier's GPU route failed on a warm-up input: "
                                         f"{type(exc).__name__}: {exc}") from None
        gpu.require_gpu_ran(self.tokenizer)
        self.fingerprint()
        full = self.tokenizer.explain()
        self._baseline = {"executions": dict((full.get("runtime_policy") or {}).get("execution_counts") or {}),
                          "fallbacks": dict(full.get("fallback_counts") or {})}

    # allow_special is not honoured: toktier always matches added tokens
    # (capabilities.special_tokens=False declares it).
    def encode_many(self, texts, allow_special):
        # row i equals encode(texts[i]), by toktier's contract (checked here like any other)
        return [as_token_array(e.ids) for e in self.tokenizer.encode_batch(list(texts))]

    def encode_one(self, text, allow_special):
        return as_token_array(self.tokenizer.encode(text, lookup="off").ids)

    def open_session(self, state: bytes | None = None):
        """A toktier session (``verify.engines.toktier_sessions``); ``?patch=true`` uses
        ``append_patch``."""
        from verify.engines.toktier_sessions import ToktierSession

        return ToktierSession(self.tokenizer, patch=self.flag_option("patch"), state=state)

    def route_report(self) -> dict:
        """What toktier's ``explain()`` says about the route the last request took."""
        full = self.tokenizer.explain()
        runtime = full.get("runtime_policy") or {}
        certification = full.get("certification") or {}
        report = {
            "summary": self.tokenizer.explain(summary=True),
            "routing_policy": full.get("routing_policy"),
            "planned_backend": full.get("planned_backend"),
            "fallback_chain": full.get("fallback_chain"),
            "plan_reasons": full.get("plan_reasons"),
            "supported_untested": full.get("supported_untested"),
            "experimental_waivers": full.get("experimental_waivers"),
            "fallback_counts": full.get("fallback_counts"),
            "certification_state": certification.get("state"),
            "effective_verdict": certification.get("effective_verdict"),
            "execution_counts": runtime.get("execution_counts"),
            "last_execution": runtime.get("last_execution"),
            # sessions: how appends were served (repair window hits, full re-encodes, fallbacks)
            "session_repair": full.get("session_repair"),
            "session_store": full.get("store"),
            "store_directory": full.get("store_directory"),
        }
        return json.loads(json.dumps(report, default=str))

    def run_notes(self) -> dict:
        report = self.route_report()
        if self.on_gpu:
            return self._gpu_notes(report)
        routes = sorted((report.get("execution_counts") or {}).keys())
        report["routes_exercised"] = routes
        if routes and set(routes) <= REFERENCE_ROUTES:
            reasons = sorted({r.get("code", "?") for r in report.get("plan_reasons") or []})
            report["warnings"] = [
                f"toktier ran only its reference route ({', '.join(routes)}): its fast paths were not "
                f"exercised ({', '.join(reasons) or 'no reason given'}), so this run verifies the reference "
                "route only"
            ]
        appends = (report.get("session_store") or {}).get("session_appends") or 0
        repair = report.get("session_repair") or {}
        if appends and repair.get("status") == "reference_only":
            report.setdefault("warnings", []).append(
                f"toktier served its {appends} session appends on its reference route "
                f"({repair.get('backend', '?')}, full re-encode): its incremental repair was not exercised")
        return report

    def _gpu_notes(self, report: dict) -> dict:
        executions = gpu.subtract(report.get("execution_counts"), self._baseline.get("executions", {}))
        fallbacks = gpu.subtract(report.get("fallback_counts"), self._baseline.get("fallbacks", {}))
        report.update(gpu=json.loads(json.dumps(gpu.gpu_report(self.tokenizer), default=str)),
                      run_execution_counts=executions, run_fallback_counts=fallbacks,
                      routes_exercised=sorted(executions), counts_include="the load-time warm-up and probes")
        warnings = gpu.gpu_warnings(executions, fallbacks)
        if warnings:
            report["warnings"] = warnings
        return report


def _load_local(path: Path, name: str, kwargs: dict):
    """``toktier.load`` a local tokenizer.json through a one-entry artifact manifest, as family
    ``name`` (``verify-VOCAB``, or the GPU kernel family it runs under)."""
    import os

    import toktier
    from toktier.artifacts import ArtifactManifest, sha256_file
    from toktier.config import Config
    from toktier.paths import artifact_cache_dir

    sha, size = sha256_file(path)
    family = re.sub(r"[^a-z0-9._-]", "-", name.lower()).lstrip("._-")
    manifest = ArtifactManifest.from_mapping(
        {family: {"repo_id": f"verify/{family}", "revision": sha,
                  "files": {"tokenizer.json": {"sha256": sha, "size": size}}}},
        source="verify",
    )
    config = Config.resolve(offline=True)
    directory = artifact_cache_dir(config) / manifest.get(family).directory_name
    target = directory / "tokenizer.json"
    if not target.is_file() or target.stat().st_size != size:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / f".tokenizer.json.tmp{os.getpid()}"
        shutil.copyfile(path, tmp)
        tmp.replace(target)
    return toktier.load(family, manifest=manifest, config=config, **kwargs)
