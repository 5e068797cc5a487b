"""Adapter for ``snaptokens`` (a Rust fork of fastokens for local tokenizer.json).

Specs:
  snaptokens:deepseek-v3 | path/tokenizer.json   a local tokenizer.json
  snaptokens:cl100k_base | o200k_base | p50k_base  our ranks converted to a tokenizer.json
                                                  (as ``hf:`` does); refused by snaptokens
                                                  0.2.6: cl100k/o200k for their non-contiguous
                                                  special ids, p50k for its split pattern

The engine never downloads. It has no switch to treat added tokens as text:
``encode`` always matches them, so ``capabilities.special_tokens`` is False and
``allow_special`` is not honoured. Entry points: ``batch`` (the default:
``encode_batch_flat``) and ``single`` (``encode``).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.common import TOKENIZER_JSON_KINDS, split_flat_buffers, tokenizer_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("deepseek-v3",)


class SnaptokensEngine(VocabAdapter):
    adapter_name = "snaptokens"
    package = "snaptokens"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, options=("encoding",))

    def load(self, vocab):
        from snaptokens import Tokenizer

        path = self.tokenizer_json(vocab)
        with self.refusing(ValueError):
            self.tokenizer = Tokenizer.from_file(str(path))

    # allow_special is not honoured (capabilities.special_tokens=False).
    def encode_many(self, texts, allow_special):
        ids, offsets = self.tokenizer.encode_batch_flat(list(texts), add_special_tokens=False)
        return split_flat_buffers(ids, offsets, len(texts))

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def token_bytes(self, ids):
        return tokenizer_token_bytes(self.tokenizer, ids)
