"""Adapter for ``morpheme`` (Rust, Hugging Face-compatible tokenizer.json).

Specs:
  morpheme:cl100k_base | o200k_base | p50k_base   our ranks converted to an equivalent
                                                   tokenizer.json (as ``hf:`` does)
  morpheme:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  morpheme:org/model                               the hub (needs a network)

morpheme has no ``split_special_tokens`` / ``encode_special_tokens`` switch: added
tokens always match, so ``capabilities.special_tokens`` is False and
``allow_special`` is not honoured.
"""

from __future__ import annotations

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.common import is_hub_id, tokenizer_json_path, vocab_token_bytes
from verify.errors import ConfigError
from verify.vocab.resolver import resolve_vocab

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3")


class MorphemeEngine(Adapter):
    adapter_name = "morpheme"
    package = "morpheme"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        import morpheme

        if is_hub_id(target):
            self.tokenizer = morpheme.Tokenizer.from_pretrained(target)  # needs a network
            self.vocab_name = target
        else:
            vocab = resolve_vocab(target)
            self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
            path = tokenizer_json_path(vocab, self.options, "morpheme")
            try:
                self.tokenizer = morpheme.Tokenizer.from_file(str(path))
            except morpheme.MorphemeError as exc:
                raise ConfigError(f"morpheme refuses {vocab.name}: {exc}") from exc

    def encode_texts(self, texts, allow_special):
        # allow_special is not honoured (capabilities.special_tokens=False).
        if not texts:
            return []
        return [as_token_array(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def token_bytes(self, ids):
        return vocab_token_bytes(
            ids, self.tokenizer.id_to_token, lambda i: self.tokenizer.decode([i], skip_special_tokens=False)
        )
