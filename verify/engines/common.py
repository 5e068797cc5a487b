"""Small pieces shared by the engine adapters (``*_engine.py``).

Only logic that several adapters repeat word for word lives here: locating a
tokenizer.json for a target, naming a tiktoken encoding, hashing a bundled ranks
table, spelling tokens as bytes from a byte-level vocabulary, and turning engine
output into token arrays. (Resolving, checking and loading an adapter's
vocabulary is ``verify.engines.vocab_loading``.)
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from verify.engines.base import as_token_array
from verify.errors import ConfigError
from verify.vocab import convert
from verify.vocab.known import KNOWN_VOCABS
from verify.vocab.resolver import ResolvedVocab, cache_dir
from verify.vocab.tiktoken_family import build_encoding, encoding_name, family_name
from verify import atomic

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")

# The vocabulary kinds ``tokenizer_json_path`` gives a tokenizer.json for.
TOKENIZER_JSON_KINDS: tuple[str, ...] = ("tiktoken", "hf-json")


# --- locating vocabularies ------------------------------------------------------

def is_local_target(target: str) -> bool:
    """True when ``target`` names a known vocabulary or an existing path."""
    return target in KNOWN_VOCABS or Path(target).exists()


def is_hub_id(target: str) -> bool:
    """True when ``target`` is neither local nor known but looks like ``org/model`` on the hub."""
    return not is_local_target(target) and bool(HUB_ID.fullmatch(target))


def cannot_load(adapter: str, vocab: ResolvedVocab, loads: str = "") -> ConfigError:
    """The error an adapter raises for a vocabulary kind it does not load; ``loads`` says
    what it does load (``vocab_loading.Loads.describe``)."""
    return ConfigError(f"{adapter} cannot load a '{vocab.kind}' vocabulary ({vocab.name})"
                       + (f"; it loads {loads}" if loads else ""))


def converted_tokenizer_json(encoding, vocab_sha256: str) -> Path:
    """The cached tokenizer.json equivalent to a tiktoken encoding (built once)."""
    out = convert.converted_tokenizer_path(cache_dir(), vocab_sha256, encoding.name)
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(out, convert.tokenizer_json(encoding._pat_str, encoding._mergeable_ranks,
                                                      encoding._special_tokens))
    return out


def tokenizer_json_path(vocab: ResolvedVocab, options: dict, adapter: str) -> Path:
    """A local tokenizer.json for ``vocab``: the file itself for an hf-json vocabulary,
    the converted equivalent for a tiktoken one (``?encoding=`` honoured)."""
    if vocab.kind == "tiktoken":
        cached = convert.converted_tokenizer_path(cache_dir(), vocab.sha256,
                                                  encoding_name(vocab, options.get("encoding")))
        if cached.is_file():  # converted before: no need to load the ranks again
            return cached
        return converted_tokenizer_json(build_encoding(vocab, options.get("encoding")), vocab.sha256)
    if vocab.kind == "hf-json":
        return Path(vocab.path)
    raise cannot_load(adapter, vocab, f"{' or '.join(TOKENIZER_JSON_KINDS)} vocabularies")


def tiktoken_encoding_name(vocab: ResolvedVocab, options: dict) -> str:
    """The tiktoken encoding (split pattern and specials) for a ranks file:
    ``?encoding=`` or the known vocabulary's own; a bare ranks file needs the option."""
    return family_name(vocab, options.get("encoding"))


def table_sha256(ranked) -> str:
    """SHA-256 of ``(rank, token bytes)`` pairs, in rank order, written in tiktoken's file format."""
    h = hashlib.sha256()
    for rank, tok in ranked:
        h.update(base64.b64encode(bytes(tok)) + b" " + str(rank).encode() + b"\n")
    return h.hexdigest()


# --- token bytes from a tokenizer.json vocabulary ----------------------------------

def has_byte_level_decoder(doc: dict) -> bool:
    """Whether a parsed tokenizer.json decodes with ``ByteLevel`` (alone or in a sequence)."""
    decoder = doc.get("decoder") or {}
    kinds = {decoder.get("type")} | {d.get("type") for d in decoder.get("decoders", [])}
    return "ByteLevel" in kinds


def added_token_bytes(added_tokens: Iterable[dict]) -> dict[int, bytes]:
    """``{id: UTF-8 content}`` for tokenizer.json ``added_tokens`` entries."""
    return {int(t["id"]): str(t["content"]).encode() for t in added_tokens}


def vocab_token_bytes(
    ids,
    id_to_token: Callable[[int], str | None],
    decode: Callable[[int], str],
    added: dict[int, bytes] | None = None,
    byte_level: bool | None = None,
) -> list[bytes]:
    """The bytes of each token of a tokenizer.json-style vocabulary.

    Added tokens are their UTF-8 content; an unknown id is ``b""``. Other tokens
    are spelled through the byte-level alphabet or decoded one by one:
    ``byte_level=True`` maps every alphabet character of every token (others are
    dropped), ``False`` always decodes, ``None`` maps a token whose characters
    are all in the alphabet and decodes the rest.
    """
    to_bytes = convert.unicode_to_bytes()
    added = added or {}
    out = []
    for i in ids:
        i = int(i)
        if i in added:
            out.append(added[i])
            continue
        token = id_to_token(i)
        if token is None:
            out.append(b"")
        elif byte_level:
            out.append(bytes(to_bytes[c] for c in token if c in to_bytes))
        elif byte_level is None and all(c in to_bytes for c in token):
            out.append(bytes(to_bytes[c] for c in token))
        else:
            out.append(decode(i).encode())
    return out


def tokenizer_token_bytes(tokenizer, ids, added: dict[int, bytes] | None = None,
                          byte_level: bool | None = None) -> list[bytes]:
    """``vocab_token_bytes`` through an HF-style tokenizer object (``id_to_token`` and
    ``decode(ids, skip_special_tokens=False)``)."""
    return vocab_token_bytes(ids, tokenizer.id_to_token, lambda i: tokenizer.decode([i], skip_special_tokens=False),
                             added=added, byte_level=byte_level)


# --- engine output to token arrays ---------------------------------------------

def split_by_offsets(ids: np.ndarray, offsets: np.ndarray, count: int) -> list[np.ndarray]:
    """Cut a flat id array into ``count`` arrays at ``offsets`` (``count + 1`` bounds)."""
    return [as_token_array(ids[offsets[i]:offsets[i + 1]].copy()) for i in range(count)]


def split_flat_buffers(ids: bytes, offsets: bytes, count: int) -> list[np.ndarray]:
    """``split_by_offsets`` for raw buffers of little-endian u32 ids and u64 offsets."""
    return split_by_offsets(np.frombuffer(ids, dtype="<u4"), np.frombuffer(offsets, dtype="<u8"), count)


def encode_with_tiktoken_api(encoding, texts, allow_special: bool) -> list[np.ndarray]:
    """Encode through a tiktoken-style object: ``encode(allowed_special="all")`` or ``encode_ordinary``."""
    if allow_special:
        return [as_token_array(encoding.encode(t, allowed_special="all")) for t in texts]
    return [as_token_array(encoding.encode_ordinary(t)) for t in texts]

