"""The engine protocol and the base class that adapters subclass.

An adapter declares what it can do as class data in ``capabilities``, among it the
production *entry points* of its library it can drive (``entry_points``; docs/entry-points.md),
and implements the method of each (``ENTRY_POINTS``) plus ``token_bytes`` when it can decode.
The base routes every encode through the entry point in effect (the first declared, or
``?entry=NAME``) and counts each one's library calls (``entry_notes``: the run's manifest
says which ran). An adapter with one fixed call may override ``encode_texts`` instead (and
declare no entry point). The core reads those declarations; it never probes an engine
with try/except to discover what it supports.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from importlib import metadata
from typing import Any, ClassVar, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np

from verify.errors import ConfigError
from verify.sample import Sample, Segment

TOKEN_DTYPE = np.uint32

# The production entry points an adapter may declare, and the adapter method that drives each.
ENTRY_POINTS: dict[str, str] = {
    "single": "encode_one",  # the library's one-text call, once per text
    "batch": "encode_many",  # the library's own batch call, once per batch of texts
    "segments": "encode_segments",  # the library's typed-segments call ((text, allow_special) pairs), once per sample
    "file": "encode_files",  # the library's file API: the batch's texts written to files, one call for them
}
ENTRY_OPTION = "entry"  # ?entry=NAME: the entry point a spec drives (every adapter that declares some takes it)


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
    entry_points: the production entry points of its library it can drive (names of
        ``ENTRY_POINTS``), the default first: what a spec without ``?entry=`` drives.
    """

    special_tokens: bool = True
    segments: bool = False
    decode: bool = False
    offsets: bool = False
    sessions: bool = False
    device: str = "cpu"
    unicode_version: str | None = None
    entry_points: tuple[str, ...] = ()

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
    fingerprint: str | None = None  # what it does: the ids of fixed probes (equal for engines that agree)
    # which build it is (``verify.engines.provenance``): the name and version the engine declares
    # itself (a plugin's ``name``/``version``), the digest of its module's code files and native
    # extension, and the private environment it runs in (``?pip=``/``?python=``)
    name: str | None = None
    version: str | None = None
    files_digest: str | None = None
    environment: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def build_label(self) -> str:
        """``fastokens-b10 0.2.17 (3f2a9c01)``: the distribution, its version, the code digest."""
        label = " ".join(x for x in (self.package, self.package_version) if x) or self.adapter
        if self.name and self.name != self.package:
            label = f"{self.name} {self.version or ''}".strip() + f" ({label})"
        return label + (f" [{self.files_digest[:8]}]" if self.files_digest else "")


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
    """Normalise an engine's output for one input (list, tuple, array) to a 1-D uint32 array.

    Raises ValueError for negative or out-of-range ids rather than wrapping them, and for
    anything but one flat sequence: a nested list (``[[ids]]``) is an engine's mistake to
    report, never flattened into ids that might happen to compare equal."""
    if type(ids) is np.ndarray and ids.dtype == TOKEN_DTYPE and ids.ndim == 1:
        return ids  # already what it should be: most adapters' outputs, checked again on every layer
    arr = np.asarray(ids)
    if arr.ndim != 1:
        what = "a single value" if arr.ndim == 0 else f"a nested sequence ({arr.ndim} levels, shape {arr.shape})"
        raise ValueError(f"engine returned {what} for one input, not a flat sequence of token ids")
    if arr.dtype == TOKEN_DTYPE:
        return arr
    if arr.size and arr.dtype.kind in "iu":
        if arr.min() < 0 or arr.max() > np.iinfo(TOKEN_DTYPE).max:
            raise ValueError(f"token id out of uint32 range: min={arr.min()} max={arr.max()}")
    elif arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"engine returned non-integer token ids (dtype {arr.dtype})")
    return arr.astype(TOKEN_DTYPE, copy=False)


def checked_flat(ids: Any, offsets: Any, count: int) -> tuple[np.ndarray, list[int]]:
    """A library's flat batch result -- one buffer of every text's ids and ``count + 1``
    offsets into it -- checked: the buffer as uint32 and the offsets as ints. Raises
    ValueError for offsets that do not cut the buffer into exactly ``count`` pieces."""
    flat = as_token_array(ids)
    cuts = np.asarray(offsets)
    if cuts.ndim != 1 or cuts.size != count + 1 or (cuts.size and cuts.dtype.kind not in "iu"):
        raise ValueError(f"engine returned {cuts.size} offsets for {count} texts (a flat batch needs {count + 1})")
    if cuts[0] != 0 or cuts[-1] != flat.size or bool(np.any(cuts[1:] < cuts[:-1])):
        raise ValueError(f"engine's flat batch offsets do not cut its {flat.size} ids in order "
                         f"(first {int(cuts[0])}, last {int(cuts[-1])})")
    return flat, cuts.tolist()


def split_flat(ids: Any, offsets: Any, count: int) -> list[np.ndarray]:
    """``checked_flat``'s buffer as one uint32 *view* per text: no per-text list, no copy."""
    flat, bounds = checked_flat(ids, offsets, count)
    return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]  # slicing: np.split costs 2 µs per piece


class Adapter:
    """Base class for adapters. Subclasses set the class data and implement the methods of
    the entry points they declare (or ``encode_texts``); the base routes, composes segments,
    counts the calls and computes identity."""

    adapter_name: ClassVar[str] = ""
    package: ClassVar[str | None] = None  # PyPI distribution, for the version (when its module is not found)
    library_module: str | None = None  # the module it drives (the registry's ``requires``): who provides it
    environment: dict[str, Any] | None = None  # the private environment it runs in (``?pip=``, ``?python=``)
    capabilities: ClassVar[Capabilities] = Capabilities()
    entry_replaces: ClassVar[tuple[str, ...]] = ()  # older options that ?entry= supersedes (dropped by with_entry)
    # ``batch`` goes through ``encode_many_flat`` (the library's flat-array batch call) instead of
    # ``encode_many``: the ids of a batch arrive as one buffer and each text's are a view of it
    flat_batch: ClassVar[bool] = False

    def __init__(self, target: str, options: dict[str, Any] | None = None, spec: str | None = None):
        self.target = target
        self.options = dict(options or {})
        self.spec = spec or f"{self.adapter_name}:{target}"
        self.vocab_name: str | None = None
        self.vocab_sha256: str | None = None
        self._fingerprint: str | None = None
        self._entry_calls: dict[str, dict[str, int]] = {}  # entry point -> {"calls", "texts"}
        self._entry_lock = threading.Lock()  # the threads check encodes from several threads at once

    # --- to implement: one method per declared entry point ---------------------
    def encode_one(self, text: str, allow_special: bool) -> Any:
        """``single``: the library's one-text call."""
        raise NotImplementedError

    def encode_many(self, texts: list[str], allow_special: bool) -> list[Any]:
        """``batch``: the library's own batch call, once for all of ``texts`` (never empty)."""
        raise NotImplementedError

    def encode_many_flat(self, texts: list[str], allow_special: bool) -> tuple[Any, Any]:
        """``batch``, flat (when ``flat_batch``): the same library batch call as ``encode_many``
        returning ``(ids, offsets)``, every text's ids in one buffer and ``len(texts) + 1``
        offsets into it (``split_flat``)."""
        raise NotImplementedError

    def encode_segments(self, segments: Sequence[Segment]) -> np.ndarray:
        """``segments``: the library's typed-segments call, once per sample; also the native
        encode of a sample of several segments when ``capabilities.segments``."""
        raise NotImplementedError

    def encode_files(self, paths: list[str], allow_special: bool) -> list[Any]:
        """``file``: the library's file API on one file per text (never empty texts: a file
        API may drop empty documents), once for all of ``paths``."""
        raise NotImplementedError

    def token_bytes(self, ids: np.ndarray) -> list[bytes]:
        """The bytes of each token; only called when ``capabilities.decode``."""
        raise NotImplementedError

    def open_session(self, state: bytes | None = None):
        """A stateful session (``verify.engines.sessions``); only when ``capabilities.sessions``."""
        raise NotImplementedError(f"{self.spec} has no sessions")

    # --- entry points: which one is in effect, the routing, the calls counted ----------
    @property
    def entry(self) -> str | None:
        """The entry point a spec names (``?entry=NAME``), or None."""
        value = self.options.get(ENTRY_OPTION)
        return None if value is None else str(value)

    @property
    def default_entry(self) -> str | None:
        """The entry point a spec without ``?entry=`` drives (an adapter may decide it from its options)."""
        declared = self.capabilities.entry_points
        return declared[0] if declared else None

    @property
    def route(self) -> str | None:
        """The entry point ``encode_texts`` goes through: the one named, else the default."""
        return self.entry or self.default_entry

    @classmethod
    def declared_entry_points(cls, target: str, options: dict[str, Any]) -> tuple[Capabilities, str | None]:
        """Without loading anything: the capabilities (its entry points) and the entry point in
        effect of a spec ``cls:target?options`` (the api check plans its engines from this). An
        adapter whose declaration depends on the instance overrides it."""
        entry = options.get(ENTRY_OPTION)
        declared = cls.capabilities.entry_points
        return cls.capabilities, str(entry) if entry is not None else (declared[0] if declared else None)

    def check_entry(self) -> None:
        """Refuse ``?entry=`` naming an entry point the adapter does not declare (one line)."""
        entry = self.entry
        if entry is None or entry in self.capabilities.entry_points:
            return
        declared = ", ".join(self.capabilities.entry_points) or "none"
        raise ConfigError(f"{self.spec}: {self.adapter_name} has no entry point '{entry}' (its entry points: "
                          f"{declared})")

    @contextlib.contextmanager
    def entry_point(self, name: str) -> Iterator[None]:
        """Drive ``name`` for the duration, as ``?entry=NAME`` would (the conformance suite)."""
        before = self.options.get(ENTRY_OPTION)
        self.options[ENTRY_OPTION] = name
        try:
            self.check_entry()
            yield
        finally:
            if before is None:
                self.options.pop(ENTRY_OPTION, None)
            else:
                self.options[ENTRY_OPTION] = before

    def ran(self, entry: str, calls: int, texts: int) -> None:
        """Count ``calls`` library calls of ``entry`` on ``texts`` texts (an adapter that routes
        some calls itself reports them here)."""
        with self._entry_lock:
            counts = self._entry_calls.setdefault(entry, {"calls": 0, "texts": 0})
            counts["calls"] += calls
            counts["texts"] += texts

    def entry_notes(self) -> dict[str, Any]:
        """For the run notes: the entry point in effect and the calls each entry point made
        (``{"batch": {"calls": 3, "texts": 96}}``; counts add up across workers). An adapter
        that wraps another (``inner``) and made no call itself reports the inner one's."""
        inner = getattr(self, "inner", None)
        if not self._entry_calls and isinstance(inner, Adapter):
            return inner.entry_notes()
        if self.route is None and not self._entry_calls:
            return {}
        return {"entry_point": self.route, "entry_points_ran": copy.deepcopy(self._entry_calls)}

    def encode_texts(self, texts: list[str], allow_special: bool) -> list[np.ndarray]:
        """Every text through the entry point in effect (``route``)."""
        route, texts = self.route, list(texts)
        if route is None:
            raise NotImplementedError(f"{type(self).__name__} declares no entry point and implements no encode_texts")
        if not texts:
            return []
        if route == "single":
            out = [self.encode_one(t, allow_special) for t in texts]
        elif route == "batch" and self.flat_batch:
            ids, offsets = self.encode_many_flat(texts, allow_special)
            self.ran(route, 1, len(texts))
            return split_flat(ids, offsets, len(texts))  # uint32 views, checked as one buffer
        elif route == "batch":
            out = list(self.encode_many(texts, allow_special))
        elif route == "segments":
            out = [self.encode_segments([Segment(t, bool(allow_special))]) for t in texts]
        elif route == "file":
            out = self._through_files(texts, allow_special)
        else:
            raise ConfigError(f"{self.spec}: unknown entry point '{route}' (known: {', '.join(ENTRY_POINTS)})")
        self.ran(route, 1 if route in ("batch", "file") else len(texts), len(texts))
        return [as_token_array(ids) for ids in out]

    def _through_files(self, texts: list[str], allow_special: bool) -> list[Any]:
        """``file``: each non-empty text in a file of its own (UTF-8, no newline translation),
        the files encoded in one call; an empty text is no tokens without asking."""
        out: list[Any] = [np.zeros(0, dtype=TOKEN_DTYPE)] * len(texts)
        todo = [i for i, t in enumerate(texts) if t]
        if not todo:
            return out
        with tempfile.TemporaryDirectory(prefix="verify-entry-") as folder:
            paths = []
            for i in todo:
                path = os.path.join(folder, f"{i}.txt")
                with open(path, "w", encoding="utf-8", newline="") as f:
                    f.write(texts[i])
                paths.append(path)
            encoded = list(self.encode_files(paths, allow_special))
        if len(encoded) != len(todo):
            raise ValueError(f"the file API returned {len(encoded)} results for {len(todo)} files")
        for i, ids in zip(todo, encoded):
            out[i] = ids
        return out

    # --- provided ---------------------------------------------------------
    def encode_batch_flat(self, samples: Sequence[Sample]) -> tuple[np.ndarray, list[int]] | None:
        """The batch as the library's one buffer of ids and its ``len(samples) + 1`` offsets
        (``checked_flat``), where ``encode_batch`` would make exactly that call: the flat batch
        entry point in effect and every sample one segment with one ``allow_special``. None
        otherwise (the caller then calls ``encode_batch``). The ledger's check of a candidate's
        ids against the recorded digests reads the buffer where it lies."""
        cls = type(self)
        routed_here = cls.encode_batch is Adapter.encode_batch and cls.encode_texts is Adapter.encode_texts
        if not (routed_here and self.flat_batch and self.route == "batch") or not samples \
                or self.entry == "segments" or (self.entry is None and self.capabilities.segments):
            return None  # (an adapter that routes its own calls is asked through them)
        first = samples[0].segments
        flag = bool(first[0].allow_special) if len(first) == 1 else None
        if flag is None or not all(len(s.segments) == 1 and bool(s.segments[0].allow_special) == flag
                                   for s in samples):
            return None
        texts = [s.segments[0].text for s in samples]
        ids, offsets = self.encode_many_flat(texts, flag)
        self.ran("batch", 1, len(texts))
        return checked_flat(ids, offsets, len(texts))

    def encode_batch(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        # Without ?entry=, as adapters always did: an engine with native segments gets each
        # sample alone (several segments through encode_segments). ?entry=NAME drives NAME alone.
        entry = self.entry
        if entry == "segments" or (entry is None and self.capabilities.segments):
            return [self._encode_native(s) for s in samples]
        return self._encode_per_segment(samples)

    def _encode_native(self, sample: Sample) -> np.ndarray:
        if len(sample.segments) == 1:
            seg = sample.segments[0]
            return self.encode_texts([seg.text], seg.allow_special)[0]
        ids = as_token_array(self.encode_segments(sample.segments))
        if self.route is not None:
            self.ran("segments", 1, len(sample.segments))
        return ids

    def _encode_per_segment(self, samples: Sequence[Sample]) -> list[np.ndarray]:
        # One engine call per allow_special value for the whole batch, then
        # reassemble each sample as the concatenation of its segments' ids.
        if all(len(s.segments) == 1 for s in samples):  # the common case: one call, no bookkeeping
            for flag in (False, True):
                if all(bool(s.segments[0].allow_special) == flag for s in samples):
                    encoded = self.encode_texts([s.segments[0].text for s in samples], flag)
                    if len(encoded) != len(samples):
                        raise ValueError(f"engine returned {len(encoded)} results for {len(samples)} texts")
                    return [as_token_array(ids) for ids in encoded]  # an override may give lists
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
            calls = copy.deepcopy(self._entry_calls)  # the probes are not the run's calls
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
            finally:
                self._entry_calls = calls
        return self._fingerprint

    def provenance(self):
        """The distribution providing ``library_module`` as installed here, its version and code
        digest (``verify.engines.provenance``); looked up once."""
        if getattr(self, "_provenance", None) is None:
            from verify.engines.provenance import Provider, provider

            self._provenance = provider(self.library_module) if self.library_module else Provider(None, None, None,
                                                                                                None)
        return self._provenance

    def identity(self) -> EngineIdentity:
        found = self.provenance()
        return EngineIdentity(
            spec=self.spec,
            adapter=self.adapter_name,
            package=found.distribution or self.package,
            package_version=found.version if found.distribution else package_version(self.package),
            vocab=self.vocab_name,
            vocab_sha256=self.vocab_sha256,
            options=self.options,
            fingerprint=self.fingerprint(),
            files_digest=found.digest,
            environment=self.environment,
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
