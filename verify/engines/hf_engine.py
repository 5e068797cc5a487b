"""Adapter for HuggingFace ``tokenizers``.

Specs:
  hf:cl100k_base | hf:o200k_base | hf:p50k_base   tiktoken vocabulary converted to an
                                                   equivalent byte-level BPE tokenizer
  hf:deepseek-v3 | hf:anthropic                    known tokenizer.json vocabularies
  hf:path/to/tokenizer.json                        a local file
  hf:org/model                                     the hub (needs a network)

Entry points: ``batch`` (the default: ``encode_batch_fast``) and ``single``
(``encode``), both without added special tokens.

``allow_special=False`` segments are encoded with ``encode_special_tokens`` on,
so special tokens' literal text becomes ordinary text. Added tokens that are not
marked special still match: that is the engine's notion, and the harness reports
where it differs from the reference rather than hiding it.
"""

from __future__ import annotations

import json
import threading

import numpy as np

from verify.engines.base import TOKEN_DTYPE, Capabilities, package_version
from verify.engines.common import TOKENIZER_JSON_KINDS, has_byte_level_decoder, tokenizer_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter

# Unicode version of Oniguruma's tables per tokenizers release, measured with `verify unicode`.
MEASURED_UNICODE = {"0.23.3": "16.0.0"}


class HFEngine(VocabAdapter):
    adapter_name = "hf"
    package = "tokenizers"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, offsets=True,
                                unicode_version=MEASURED_UNICODE.get(package_version("tokenizers") or ""),
                                entry_points=("batch", "single"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("encoding",))

    def load(self, vocab):
        from tokenizers import Tokenizer

        if vocab is None:
            self.tokenizer = Tokenizer.from_pretrained(self.target)  # the hub; needs a network
        else:
            self.tokenizer = Tokenizer.from_file(str(self.tokenizer_json(vocab)))
        decoder = self.tokenizer.decoder  # its own JSON only, not the whole tokenizer's
        self._byte_level = has_byte_level_decoder({"decoder": json.loads(decoder.__getstate__()) if decoder else None})
        self._mode_lock = threading.Lock()
        self._added = {i: t.content.encode() for i, t in self.tokenizer.get_added_tokens_decoder().items()}

    # encode_special_tokens is tokenizer-wide state: set and encode under one lock.
    def encode_many(self, texts, allow_special):
        with self._mode_lock:
            self.tokenizer.encode_special_tokens = not allow_special
            encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        return [np.asarray(e.ids, dtype=TOKEN_DTYPE) for e in encodings]

    def encode_one(self, text, allow_special):
        with self._mode_lock:
            self.tokenizer.encode_special_tokens = not allow_special
            return np.asarray(self.tokenizer.encode(text, add_special_tokens=False).ids, dtype=TOKEN_DTYPE)

    def token_bytes(self, ids):
        return tokenizer_token_bytes(self.tokenizer, ids, added=self._added, byte_level=self._byte_level)
