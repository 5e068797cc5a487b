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
``device`` (cpu, auto, cuda; default cpu).

Every encode is stateless (``lookup="off"``). toktier has no switch that makes
special-token literals ordinary text, so ``capabilities.special_tokens`` is
False: text is encoded as the engine does by default (special literals match).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.common import HUB_ID, is_local_target, tokenizer_json_path
from verify.vocab.resolver import resolve_vocab

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic")

_FAMILY_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


# toktier's own fallback: the HF tokenizers path it certifies its fast paths against.
REFERENCE_ROUTES = {"hf"}


class ToktierEngine(Adapter):
    adapter_name = "toktier"
    package = "toktier"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=False, sessions=False)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        import toktier

        policy = self.options.get("policy")
        device = self.options.get("device", "cpu")
        self.options["device"] = device
        kwargs = {"device": device}
        if policy is not None:
            kwargs["policy"] = toktier.RoutingPolicy(str(policy).lower())

        local = is_local_target(target)
        if not local and HUB_ID.fullmatch(target):
            self.tokenizer = toktier.from_pretrained(target, **kwargs)  # needs a network
            self.vocab_name = target
        elif not local and _FAMILY_ID.fullmatch(target):
            self.tokenizer = toktier.load(target, **kwargs)  # toktier's own artifact cache / network
            self.vocab_name = target
        else:
            path = self._local_tokenizer_json(target)
            self.tokenizer = _load_local(path, self.vocab_name or path.name, kwargs)

    def _local_tokenizer_json(self, target: str) -> Path:
        vocab = resolve_vocab(target)
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        return tokenizer_json_path(vocab, self.options, "toktier")

    def encode_texts(self, texts, allow_special):
        # allow_special is not honoured: toktier always matches added tokens
        # (capabilities.special_tokens=False declares it).
        return [as_token_array(self.tokenizer.encode(text, lookup="off").ids) for text in texts]

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
        }
        return json.loads(json.dumps(report, default=str))

    def run_notes(self) -> dict:
        report = self.route_report()
        routes = sorted((report.get("execution_counts") or {}).keys())
        report["routes_exercised"] = routes
        if routes and set(routes) <= REFERENCE_ROUTES:
            reasons = sorted({r.get("code", "?") for r in report.get("plan_reasons") or []})
            report["warnings"] = [
                f"toktier ran only its reference route ({', '.join(routes)}): its fast paths were not "
                f"exercised ({', '.join(reasons) or 'no reason given'}), so this run verifies the reference "
                "route only"
            ]
        return report


def _load_local(path: Path, name: str, kwargs: dict):
    """``toktier.load`` a local tokenizer.json through a one-entry artifact manifest."""
    import os

    import toktier
    from toktier.artifacts import ArtifactManifest, sha256_file
    from toktier.config import Config
    from toktier.paths import artifact_cache_dir

    sha, size = sha256_file(path)
    family = "verify-" + re.sub(r"[^a-z0-9._-]", "-", name.lower()).lstrip("._-")
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
