"""Adapter for HuggingFace ``tokenizers``.

Specs:
  hf:cl100k_base | hf:o200k_base | hf:p50k_base   tiktoken vocabulary converted to an
                                                   equivalent byte-level BPE tokenizer
  hf:deepseek-v3 | hf:anthropic                    known tokenizer.json vocabularies
  hf:path/to/tokenizer.json                        a local file
  hf:org/model                                     the hub (needs a network)

``allow_special=False`` segments are encoded with ``encode_special_tokens`` on,
so special tokens' literal text becomes ordinary text. Added tokens that are not
marked special still match: that is the engine's notion, and the harness reports
where it differs from the reference rather than hiding it.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import numpy as np

from verify.engines.base import TOKEN_DTYPE, Adapter, Capabilities, package_version
from verify.errors import ConfigError
from verify.vocab import convert
from verify.vocab.known import KNOWN_VOCABS
from verify.vocab.resolver import cache_dir, resolve_vocab
from verify.vocab.tiktoken_family import build_encoding

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def load_tokenizer_for(target: str, options: dict):
    """Return ``(tokenizers.Tokenizer, vocab_name, vocab_sha256)`` for an hf spec target."""
    from tokenizers import Tokenizer

    if target not in KNOWN_VOCABS and not Path(target).exists() and HUB_ID.fullmatch(target):
        return Tokenizer.from_pretrained(target), target, None  # needs a network
    vocab = resolve_vocab(target)
    if vocab.kind == "tiktoken":
        encoding = build_encoding(vocab, options.get("encoding"))
        return Tokenizer.from_file(str(_converted(encoding, vocab.sha256))), vocab.name, vocab.sha256
    if vocab.kind != "hf-json":
        raise ConfigError(f"hf cannot load a '{vocab.kind}' vocabulary ({vocab.name})")
    return Tokenizer.from_file(str(vocab.path)), vocab.name, vocab.sha256


def _converted(encoding, vocab_sha256: str) -> Path:
    """The cached tokenizer.json equivalent to a tiktoken encoding (built once)."""
    out = convert.converted_tokenizer_path(cache_dir(), vocab_sha256, encoding.name)
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(
            convert.tokenizer_json(encoding._pat_str, encoding._mergeable_ranks, encoding._special_tokens),
            encoding="utf-8",
        )
        os.replace(tmp, out)
    return out


# Unicode version of Oniguruma's tables per tokenizers release, measured with `verify unicode`.
MEASURED_UNICODE = {"0.23.3": "16.0.0"}


class HFEngine(Adapter):
    adapter_name = "hf"
    package = "tokenizers"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, offsets=True,
                                unicode_version=MEASURED_UNICODE.get(package_version("tokenizers") or ""))

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        self.tokenizer, self.vocab_name, self.vocab_sha256 = load_tokenizer_for(target, self.options)
        self._byte_level = _is_byte_level(self.tokenizer)
        self._mode_lock = threading.Lock()
        self._added = {i: t.content for i, t in self.tokenizer.get_added_tokens_decoder().items()}

    def encode_texts(self, texts, allow_special):
        # encode_special_tokens is tokenizer-wide state: set and encode under one lock.
        with self._mode_lock:
            self.tokenizer.encode_special_tokens = not allow_special
            encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        return [np.asarray(e.ids, dtype=TOKEN_DTYPE) for e in encodings]

    def token_bytes(self, ids):
        out = []
        to_bytes = convert.unicode_to_bytes()
        for i in ids:
            i = int(i)
            if i in self._added:
                out.append(self._added[i].encode())
                continue
            token = self.tokenizer.id_to_token(i)
            if token is None:
                out.append(b"")
            elif self._byte_level:
                out.append(bytes(to_bytes[c] for c in token if c in to_bytes))
            else:
                out.append(self.tokenizer.decode([i], skip_special_tokens=False).encode())
        return out


def _is_byte_level(tokenizer) -> bool:
    decoder = json.loads(tokenizer.to_str()).get("decoder") or {}
    kinds = {decoder.get("type")} | {d.get("type") for d in decoder.get("decoders", [])}
    return "ByteLevel" in kinds
