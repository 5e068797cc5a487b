"""The keys, defined once and versioned (``KEYS_VERSION``; documented in docs/keys.md).

    input_key(segments)        what was encoded: the segments only (text and allow_special),
                               never the sample id, so one input under two ids has one key
    ids_digest(ids)            a fast 128-bit hash over the token ids as little-endian uint32
    engine_key(identity)       which engine: adapter, package and version, vocabulary SHA-256,
                               output-changing options, behavioural fingerprint, and the build
                               (declared name and version, code digest, environment; not the spec's spelling)
    finding_key(...)           one finding: kind, engines, input key, sample id and detail

All are xxh3-128 digests written as 32 lowercase hex characters. The byte layouts
below are the contract: changing any of them means bumping ``KEYS_VERSION``, which
starts new ledgers and a new record schema. ``ids_sha256`` is the long-lived digest
that committed regression cases (``verify.regression/1``) store.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Mapping

import numpy as np
import xxhash

KEYS_VERSION = 1

_FLAG = (b"\x00", b"\x01")
_LE_U32 = np.dtype("<u4")


def input_key(segments: Iterable[Any]) -> str:
    """Key of an input: per segment one flag byte (1 = allow_special), the UTF-8 length as
    8 little-endian bytes, then the UTF-8 bytes. Accepts ``Segment`` objects or
    ``(text, allow_special)`` pairs."""
    return input_digest(segments).hex()


def input_digest(segments: Iterable[Any]) -> bytes:
    """``input_key`` as its 16 bytes (what the ledger stores), without going through hex."""
    if type(segments) is tuple and len(segments) == 1:  # a corpus record: one segment, hashed in one call
        (seg,) = segments
        text, allow = (seg.text, seg.allow_special) if hasattr(seg, "text") else (seg[0], seg[1])
        data = text.encode("utf-8")
        return xxhash.xxh3_128_digest(b"".join((_FLAG[bool(allow)], len(data).to_bytes(8, "little"), data)))
    h = xxhash.xxh3_128()
    for seg in segments:
        text, allow = (seg.text, seg.allow_special) if hasattr(seg, "text") else (seg[0], seg[1])
        data = text.encode("utf-8")
        h.update(_FLAG[bool(allow)])
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


def ids_bytes(ids: np.ndarray) -> bytes:
    """The canonical byte form of token ids: little-endian uint32."""
    arr = np.asarray(ids)
    if arr.dtype != np.dtype("<u4"):
        arr = arr.astype("<u4")
    return np.ascontiguousarray(arr).tobytes()


def ids_digest(ids: np.ndarray) -> str:
    """xxh3-128 over ``ids_bytes(ids)``; equal digests mean equal id arrays (lengths included).
    A contiguous little-endian uint32 array is hashed in place (no copy of its bytes)."""
    arr = np.asarray(ids)
    if arr.dtype != _LE_U32 or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=_LE_U32)
    return xxhash.xxh3_128_hexdigest(arr.data)


def ids_digests(flat: np.ndarray, spans: Iterable[tuple[int, int]]) -> list[str]:
    """``ids_digest`` of each piece ``flat[start:stop]`` of one batch's buffer of ids, hashed
    where they lie (one slice of the buffer's bytes per piece, no array per piece)."""
    arr = np.asarray(flat)
    if arr.dtype != _LE_U32 or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=_LE_U32)
    data, hexdigest = memoryview(arr).cast("B"), xxhash.xxh3_128_hexdigest
    return [hexdigest(data[4 * a:4 * b]) for a, b in spans]


def ids_sha256(ids: Iterable[int] | np.ndarray) -> str:
    """SHA-256 over ``ids_bytes``: the digest regression cases store for long results."""
    return hashlib.sha256(ids_bytes(np.asarray(ids, dtype=np.int64))).hexdigest()


ENGINE_KEY_FIELDS = ("adapter", "package", "package_version", "vocab_sha256", "options", "fingerprint")
# which build: in the key only when known, so an identity without them keeps the key it always had
ENGINE_BUILD_FIELDS = ("name", "version", "files_digest", "environment")


def engine_key(identity: Mapping[str, Any]) -> str:
    """Key of an engine identity (``EngineIdentity.as_dict()``): canonical JSON of
    ``ENGINE_KEY_FIELDS``, and of those ``ENGINE_BUILD_FIELDS`` that are set, with sorted keys.
    The spec's spelling and the vocabulary's display name are left out: two spellings of one
    engine share a key; two builds of one package (another digest, another environment) do not."""
    fields = {k: identity.get(k) for k in ENGINE_KEY_FIELDS}
    fields.update({k: identity[k] for k in ENGINE_BUILD_FIELDS if identity.get(k) is not None})
    return xxhash.xxh3_128_hexdigest(json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str).encode())


def finding_key(kind: str, engine: str | None, reference: str | None, input_key_: str, sample_id: str,
                detail: str = "") -> str:
    """Key of one finding: canonical JSON of its parts. ``detail`` tells apart findings on one
    input that are different checks (a metamorphic property, a session turn)."""
    parts = [kind, engine, reference, input_key_, sample_id, detail]
    return xxhash.xxh3_128_hexdigest(json.dumps(parts, ensure_ascii=False).encode("utf-8", "surrogatepass"))
