"""Adapter for Baseten's ``basetenkenizer`` (Rust BPE for inference).

Specs:
  basetenkenizer:cl100k_base | o200k_base | p50k_base   tiktoken vocabulary, converted by
                                                         basetenkenizer's own tiktoken module
  basetenkenizer:deepseek-v3                             a known tokenizer.json vocabulary
  basetenkenizer:path/to/tokenizer.json                  a local file
  basetenkenizer:org/model                               the hub (``Tokenizer.from_model``; needs a network)

Entry points: ``segments`` (the default: every encode, single-segment samples too, goes
through ``Tokenizer.encode_segments``), ``single`` (``Tokenizer.encode``) and ``batch``
(``Tokenizer.encode_batch``, the library's parallel batch call); the last two with
``split_special_tokens`` for ``allow_special=False``.

Option ``tiktoken_safe=true|false`` (default true, the library's default) selects
between legacy-tiktoken chunking and whole-segment BPE in ``encode_segments``, so
it applies to the ``segments`` entry point (``encode`` and ``encode_batch`` take no
such switch). The value in effect is recorded in the options.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from verify.engines.base import Capabilities, as_token_array
from verify.engines.common import TOKENIZER_JSON_KINDS, added_token_bytes, has_byte_level_decoder, tokenizer_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError
from verify.vocab.tiktoken_family import build_encoding

# Known vocabularies this adapter loads from local files here. ``anthropic``
# is refused by the engine (its NFKC normalizer is unsupported).
OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "deepseek-v3")  # p50k_base: its ranks are not dense


class BasetenkenizerEngine(VocabAdapter):
    adapter_name = "basetenkenizer"
    package = "basetenkenizer"
    capabilities = Capabilities(special_tokens=True, segments=True, decode=True,
                                entry_points=("segments", "single", "batch"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("tiktoken_safe", "encoding"))

    def configure(self):
        safe = self.options.get("tiktoken_safe", True)
        if not isinstance(safe, bool):
            raise ConfigError(f"basetenkenizer option tiktoken_safe must be true or false, not {safe!r}")
        self.tiktoken_safe = safe
        self.options["tiktoken_safe"] = safe  # the value in effect, recorded in the identity

    def load(self, vocab):
        from basetenkenizer import Tokenizer

        doc: str | None = None
        if vocab is None:
            self.tokenizer = Tokenizer.from_model(self.target)  # the hub; needs a network
        elif vocab.kind == "tiktoken":
            from basetenkenizer.tiktoken import tiktoken_to_tokenizer_json

            doc = tiktoken_to_tokenizer_json(build_encoding(vocab, self.options.get("encoding")))
            self.tokenizer = Tokenizer.from_json_str(doc)
        else:
            doc = Path(vocab.path).read_text(encoding="utf-8")
            self.tokenizer = Tokenizer.from_file(str(vocab.path))
        parsed = json.loads(doc) if doc is not None else {}
        self._added = added_token_bytes(parsed.get("added_tokens", []))
        self._byte_level = has_byte_level_decoder(parsed) if doc is not None else None

    def _encode(self, segments) -> np.ndarray:
        encoding = self.tokenizer.encode_segments(
            segments, add_special_tokens=False, tiktoken_safe=self.tiktoken_safe
        )
        return as_token_array(encoding.into_numpy(ids=True)["ids"])

    def encode_segments(self, segments):
        return self._encode([(seg.text, bool(seg.allow_special)) for seg in segments])

    def encode_one(self, text, allow_special):
        encoding = self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=not allow_special)
        return as_token_array(encoding.ids)

    def encode_many(self, texts, allow_special):
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False, split_special_tokens=not allow_special)
        return [as_token_array(e.ids) for e in encodings]

    def token_bytes(self, ids):
        return tokenizer_token_bytes(self.tokenizer, ids, added=self._added, byte_level=bool(self._byte_level))
