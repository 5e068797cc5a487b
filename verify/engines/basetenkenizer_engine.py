"""Adapter for Baseten's ``basetenkenizer`` (Rust BPE for inference).

Specs:
  basetenkenizer:cl100k_base | o200k_base | p50k_base   tiktoken vocabulary, converted by
                                                         basetenkenizer's own tiktoken module
  basetenkenizer:deepseek-v3                             a known tokenizer.json vocabulary
  basetenkenizer:path/to/tokenizer.json                  a local file
  basetenkenizer:org/model                               the hub (``Tokenizer.from_model``; needs a network)

Option ``tiktoken_safe=true|false`` (default true, the library's default) selects
between legacy-tiktoken chunking and whole-segment BPE in ``encode_segments``;
every encode goes through ``encode_segments`` so the option applies to
single-segment samples too. The value in effect is recorded in the options.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.common import added_token_bytes, cannot_load, has_byte_level_decoder, is_hub_id, vocab_token_bytes
from verify.errors import ConfigError
from verify.vocab.resolver import resolve_vocab
from verify.vocab.tiktoken_family import build_encoding

# Known vocabularies this adapter loads from local files here. ``anthropic``
# is refused by the engine (its NFKC normalizer is unsupported).
OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3")


class BasetenkenizerEngine(Adapter):
    adapter_name = "basetenkenizer"
    package = "basetenkenizer"
    capabilities = Capabilities(special_tokens=True, segments=True, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        from basetenkenizer import Tokenizer

        safe = self.options.get("tiktoken_safe", True)
        if not isinstance(safe, bool):
            raise ConfigError(f"basetenkenizer option tiktoken_safe must be true or false, not {safe!r}")
        self.tiktoken_safe = safe
        self.options["tiktoken_safe"] = safe

        doc: str | None = None
        if is_hub_id(target):
            self.tokenizer = Tokenizer.from_model(target)  # needs a network
            self.vocab_name = target
        else:
            vocab = resolve_vocab(target)
            self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
            if vocab.kind == "tiktoken":
                from basetenkenizer.tiktoken import tiktoken_to_tokenizer_json

                doc = tiktoken_to_tokenizer_json(build_encoding(vocab, self.options.get("encoding")))
                self.tokenizer = Tokenizer.from_json_str(doc)
            elif vocab.kind == "hf-json":
                doc = Path(vocab.path).read_text(encoding="utf-8")
                self.tokenizer = Tokenizer.from_file(str(vocab.path))
            else:
                raise cannot_load("basetenkenizer", vocab)
        parsed = json.loads(doc) if doc is not None else {}
        self._added = added_token_bytes(parsed.get("added_tokens", []))
        self._byte_level = has_byte_level_decoder(parsed) if doc is not None else None

    def _encode(self, segments) -> np.ndarray:
        encoding = self.tokenizer.encode_segments(
            segments, add_special_tokens=False, tiktoken_safe=self.tiktoken_safe
        )
        return as_token_array(encoding.into_numpy(ids=True)["ids"])

    def encode_texts(self, texts, allow_special):
        return [self._encode([(text, bool(allow_special))]) for text in texts]

    def encode_segments(self, segments):
        return self._encode([(seg.text, bool(seg.allow_special)) for seg in segments])

    def token_bytes(self, ids):
        return vocab_token_bytes(
            ids, self.tokenizer.id_to_token, lambda i: self.tokenizer.decode([i], skip_special_tokens=False),
            added=self._added, byte_level=bool(self._byte_level),
        )
