"""The engine protocol and the base class that adapters subclass.

An adapter implements ``encode_texts`` (and, when its engine has them natively,
``encode_segments`` / ``token_bytes``) and declares what it can do as class data
in ``capabilities``. The core reads those declarations; it never probes an engine
with try/except to discover what it supports.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any, ClassVar, Protocol, Sequence, runtime_checkable

import numpy as np

from verify.sample import Sample, Segment

TOKEN_DTYPE = np.uint32


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, declared as data.

    special_tokens: honours ``allow_special`` (can emit special tokens, and can
        encode their literal text as ordinary text when not allowed).
    segments: has a native call for a list of ``(text, allow_special)`` segments.
    decode: can return the bytes of each token (used for offsets and pieces).
    offsets: can return character offsets per token.
    sessions: supports stateful incremental sessions.
    device: "cpu" or "gpu".
    unicode_version: the Unicode version of its character tables, when known.
    """

    special_tokens: bool = True
    segments: bool = False
    decode: bool = False
    offsets: bool = False
    sessions: bool = False
    device: str = "cpu"
    unicode_version: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EngineIdentity:
    """Everything needed to tell two runs of 'the same engine' apart."""

    spec: str
    adapter: str
    package: str | None
    package_version: str | None
    vocab: str | None
    vocab_sha256: str | None
    options: dict[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Engine(Protocol):
    """What the core needs from an engine."""

    spec: str
    capabilities: Capabilities

    def encode_batch(self, samples: Sequence[Sample]) -> list[np.ndarray]: ...

    def token_bytes(self, ids: np.ndarray) -> list[bytes]: ...

    def identity(self) -> EngineIdentity: ...

    def run_notes(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


# Fixed probe texts: the fingerprint is the hash of their encodings, so two runs
# whose engines load different tables or options get different fingerprints.
FINGERPRINT_PROBES: tuple[str, ...] = (
    "Hello, world! It's 2026-11-29: 1234567 tokens.",
    "  \t\n\r\n  déjà vu — naïve café Ünïcödé ß ﬁ",
    "日本語のテキスト 한국어 텍스트 中文文本 русский текст عربى",
    "def f(x):\n    return x**2  # 🙂👨‍👩‍👧 \u200b\ufeff\u00a0\u3000",
    "<|endoftext|> <|fim_prefix|> <s> </s> [INST]",
)


def package_version(distribution: str | None) -> str | None:
    if not distribution:
        return None
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def as_token_array(ids: Any) -> np.ndarray:
    """Normalise an engine's output (list, tuple, array) to a 1-D uint32 array.

    Raises ValueError for negative or out-of-range ids rather than wrapping them."""
    arr = np.asarray(ids)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype == TOKEN_DTYPE:
        return arr
    if arr.size and arr.dtype.kind in "iu":
        if arr.min() < 0 or arr.max() > np.iinfo(TOKEN_DTYPE).max:
            raise ValueError(f"token id out of uint32 range: min={arr.min()} max={arr.max()}")
    elif arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"engine returned non-integer token ids (dtype {arr.dtype})")
    return arr.astype(TOKEN_DTYPE, copy=False)


class Adapter:
    """Base class for adapters. Subclasses set the class data and implement
    ``encode_texts``; the base composes segments and computes identity."""

    adapter_name: ClassVar[str] = ""
    package: ClassVar[str | None] = None  # PyPI distribution, for the version
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self, target: str, options: dict[str, Any] | None = None, spec: str | None = None):
        self.target = target
        self.options = dict(options or {})
        self.spec = spec or f"{self.adapter_name}:{target}"
        self.vocab_name: str | None = None
        self.vocab_sha256: str | None = None
        self._fingerprint: str | None = None

    # --- to implement -----------------------------------------------------
    def encode_texts(self, texts: list[str], allow_special: bool) -> list[np.ndarray]:
        raise NotImplementedError

    def encode_segments(self, segments: Sequence[Segment]) -> np.ndarray:
        """Native segmented encode; only called when ``capabilities.segments``."""
        raise NotImplementedError

    def token_bytes(self, ids: np.ndarray) -> list[bytes]:
        """The bytes of each token; only called when ``capabilities.decode``."""
        raise NotImplementedError

    def open_session(self, state: bytes | None = None):
        """A stateful session (``verify.engines.sessions``); only when ``capabilities.sessions``."""
        raise NotImplementedError(f"{self.spec} has no sessions")

    # --- provided ---------------------------------------------------------
    def encode_batch(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        if self.capabilities.segments:
            return [self._encode_native(s) for s in samples]
        return self._encode_per_segment(samples)

    def _encode_native(self, sample: Sample) -> np.ndarray:
        if len(sample.segments) == 1:
            seg = sample.segments[0]
            return self.encode_texts([seg.text], seg.allow_special)[0]
        return as_token_array(self.encode_segments(sample.segments))

    def _encode_per_segment(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        # One engine call per allow_special value for the whole batch, then
        # reassemble each sample as the concatenation of its segments' ids.
        if all(len(s.segments) == 1 for s in samples):  # the common case: one call, no bookkeeping
            for flag in (False, True):
                if all(bool(s.segments[0].allow_special) == flag for s in samples):
                    encoded = self.encode_texts([s.segments[0].text for s in samples], flag)
                    if len(encoded) != len(samples):
                        raise ValueError(f"engine returned {len(encoded)} results for {len(samples)} texts")
                    return [as_token_array(ids) for ids in encoded]
        positions: dict[bool, list[tuple[int, int]]] = {False: [], True: []}
        texts: dict[bool, list[str]] = {False: [], True: []}
        for i, sample in enumerate(samples):
            for j, seg in enumerate(sample.segments):
                positions[seg.allow_special].append((i, j))
                texts[seg.allow_special].append(seg.text)
        pieces: list[list[np.ndarray | None]] = [[None] * len(s.segments) for s in samples]
        for flag in (False, True):
            if not texts[flag]:
                continue
            encoded = self.encode_texts(texts[flag], flag)
            if len(encoded) != len(texts[flag]):
                raise ValueError(f"engine returned {len(encoded)} results for {len(texts[flag])} texts")
            for (i, j), ids in zip(positions[flag], encoded):
                pieces[i][j] = as_token_array(ids)
        return [p[0] if len(p) == 1 else np.concatenate(p) for p in pieces]  # type: ignore[arg-type]

    def fingerprint(self) -> str:
        """Hash of the ids of fixed probe texts. An engine that fails on a probe
        still loads (its failures are the run's findings); the fingerprint then
        names the failure instead."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            try:
                probes = [Sample.plain(f"probe{i}", t) for i, t in enumerate(FINGERPRINT_PROBES)]
                for ids in self.encode_batch(probes):
                    h.update(np.ascontiguousarray(as_token_array(ids), dtype="<u4").tobytes())
                    h.update(b"\xff\xff\xff\xff")
                self._fingerprint = h.hexdigest()[:16]
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                self._fingerprint = f"unavailable:{type(exc).__name__}"
        return self._fingerprint

    def identity(self) -> EngineIdentity:
        return EngineIdentity(
            spec=self.spec,
            adapter=self.adapter_name,
            package=self.package,
            package_version=package_version(self.package),
            vocab=self.vocab_name,
            vocab_sha256=self.vocab_sha256,
            options=self.options,
            fingerprint=self.fingerprint(),
        )

    def run_notes(self) -> dict[str, Any]:
        """What the engine reports about how it ran (e.g. which internal route it
        took), recorded in the manifest at the end of a run. A ``warnings`` list
        of strings is shown in the summary: use it when the run did not exercise
        what the user probably meant to test."""
        return {}

    def close(self) -> None:
        """Release processes, sockets or device memory the engine holds."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"
