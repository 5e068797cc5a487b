"""Adapter for ``morpheme`` (Rust, Hugging Face-compatible tokenizer.json).

Specs:
  morpheme:cl100k_base | o200k_base | p50k_base   our ranks converted to an equivalent
                                                   tokenizer.json (as ``hf:`` does)
  morpheme:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  morpheme:org/model                               the hub (needs a network)

morpheme has no ``split_special_tokens`` / ``encode_special_tokens`` switch: added
tokens always match, so ``capabilities.special_tokens`` is False and
``allow_special`` is not honoured. Entry points: ``batch`` (the default:
``encode_batch``, which releases the GIL) and ``single`` (``encode``).
"""

from __future__ import annotations

from verify.engines.base import Capabilities, as_token_array
from verify.engines.common import TOKENIZER_JSON_KINDS, tokenizer_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic")


class MorphemeEngine(VocabAdapter):
    adapter_name = "morpheme"
    package = "morpheme"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("encoding",))

    def load(self, vocab):
        import morpheme

        if vocab is None:
            self.tokenizer = morpheme.Tokenizer.from_pretrained(self.target)  # the hub; needs a network
            return
        path = self.tokenizer_json(vocab)
        with self.refusing(morpheme.MorphemeError):
            self.tokenizer = morpheme.Tokenizer.from_file(str(path))

    # allow_special is not honoured (capabilities.special_tokens=False).
    def encode_many(self, texts, allow_special):
        return [as_token_array(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def encode_one(self, text, allow_special):
        return as_token_array(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def token_bytes(self, ids):
        return tokenizer_token_bytes(self.tokenizer, ids)
