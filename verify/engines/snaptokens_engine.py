"""Adapter for ``snaptokens`` (a Rust fork of fastokens for local tokenizer.json).

Specs:
  snaptokens:deepseek-v3 | path/tokenizer.json   a local tokenizer.json
  snaptokens:cl100k_base | o200k_base | p50k_base  our ranks converted to a tokenizer.json
                                                  (as ``hf:`` does); refused by snaptokens
                                                  0.2.6: cl100k/o200k for their non-contiguous
                                                  special ids, p50k for its split pattern

The engine never downloads. It has no switch to treat added tokens as text:
``encode`` always matches them, so ``capabilities.special_tokens`` is False and
``allow_special`` is not honoured.
"""

from __future__ import annotations

from verify.engines.base import Adapter, Capabilities
from verify.engines.common import split_flat_buffers, tokenizer_json_path, vocab_token_bytes
from verify.errors import ConfigError
from verify.vocab.resolver import resolve_vocab

OFFLINE_VOCABS: tuple[str, ...] = ("deepseek-v3",)


class SnaptokensEngine(Adapter):
    adapter_name = "snaptokens"
    package = "snaptokens"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        from snaptokens import Tokenizer

        vocab = resolve_vocab(target)
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        path = tokenizer_json_path(vocab, self.options, "snaptokens")
        try:
            self.tokenizer = Tokenizer.from_file(str(path))
        except ValueError as exc:
            raise ConfigError(f"snaptokens refuses {vocab.name}: {exc}") from exc

    def encode_texts(self, texts, allow_special):
        # allow_special is not honoured (capabilities.special_tokens=False).
        if not texts:
            return []
        ids, offsets = self.tokenizer.encode_batch_flat(list(texts), add_special_tokens=False)
        return split_flat_buffers(ids, offsets, len(texts))

    def token_bytes(self, ids):
        return vocab_token_bytes(
            ids, self.tokenizer.id_to_token, lambda i: self.tokenizer.decode([i], skip_special_tokens=False)
        )
