"""The base of adapters that wrap another engine: ``ADAPTER:INNER_SPEC[?opt=value]``.

The target after the first colon is a whole engine spec (``tiktoken:cl100k_base``,
``hf:path/tokenizer.json``, a named spec such as ``tiktoken-cl100k``); the query
string belongs to the wrapper. A wrapper takes only the options it declares in
``option_names`` and refuses any other with one line: to give the inner engine
options, name it in ``engines/*.toml`` and wrap that name.

Stateless calls (``encode_batch``, ``token_bytes``) are the inner engine's, so a
wrapper's stateless encode equals its inner engine's; what a wrapper adds is a
session (``capabilities.sessions``). Its identity carries the inner engine's
identity, and its run notes the inner engine's (its ``warnings`` merged into ours).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np

from verify.engines.base import Adapter, Capabilities, EngineIdentity
from verify.errors import ConfigError
from verify.sample import Sample, Segment


class WrappedEngine(Adapter):
    option_names: ClassVar[tuple[str, ...]] = ()
    package = None
    capabilities = Capabilities(sessions=True)  # for listings; an instance declares its inner engine's too

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        unknown = sorted(set(self.options) - set(self.option_names))
        if unknown:
            known = ", ".join(self.option_names) or "none"
            raise ConfigError(
                f"{self.spec}: unknown option {', '.join(repr(u) for u in unknown)} for {self.adapter_name} "
                f"(its options: {known}); to give the inner engine options, name it in engines/*.toml")
        from verify.engines.registry import build_engine

        self.inner = build_engine(target)
        inner = self.inner.capabilities
        # Declared per instance: what the inner engine can do, plus sessions.
        # sessions of our own; the inner engine's entry points are not this wrapper's (it refuses ?entry=)
        self.capabilities = Capabilities(**{**inner.as_dict(), "sessions": True, "entry_points": ()})
        self._inner_identity: EngineIdentity | None = None

    def inner_identity(self) -> EngineIdentity:
        if self._inner_identity is None:
            self._inner_identity = self.inner.identity()
        return self._inner_identity

    def check_segments(self, segments: Sequence[Segment]) -> None:
        """A session over an engine without special-token support takes plain text only."""
        if not self.inner.capabilities.special_tokens and any(s.allow_special for s in segments):
            raise ValueError(f"{self.spec}: the inner engine {self.target} has no special-token support, so its "
                             "sessions take plain text only (allow_special=False segments)")

    # --- stateless: the inner engine's ------------------------------------------
    def encode_batch(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        return self.inner.encode_batch(samples)

    def token_bytes(self, ids):
        return self.inner.token_bytes(ids)

    def identity(self) -> EngineIdentity:
        inner = self.inner_identity()
        return EngineIdentity(
            spec=self.spec, adapter=self.adapter_name, package=inner.package,
            package_version=inner.package_version, vocab=inner.vocab, vocab_sha256=inner.vocab_sha256,
            options={**self.options, "inner": inner.as_dict()}, fingerprint=inner.fingerprint,
            name=inner.name, version=inner.version, files_digest=inner.files_digest,
            environment=self.environment or inner.environment,
        )

    def session_notes(self) -> dict[str, Any]:
        """What the wrapper's sessions report (counts add up across workers)."""
        return {}

    def run_notes(self) -> dict[str, Any]:
        inner = dict(self.inner.run_notes() or {})
        notes = {**self.session_notes(), **({"inner": inner} if inner else {})}
        warnings = [*notes.pop("warnings", []), *inner.get("warnings", [])]
        if warnings:
            notes["warnings"] = warnings
        return notes

    def close(self) -> None:
        self.inner.close()
