"""Adapter for ``tokie`` (BPE / WordPiece / Unigram from tokenizer.json).

Specs:
  tokie:cl100k_base | o200k_base | p50k_base   our tiktoken vocabulary converted to tokenizer.json
  tokie:deepseek-v3 | anthropic | path.json    a tokenizer.json
  tokie:org/model                              ``Tokenizer.from_pretrained`` (needs a network)

tokie has no switch for special-token literals (added tokens always match), so
``capabilities.special_tokens`` is False.
"""

from __future__ import annotations

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.common import is_hub_id, tokenizer_json_path
from verify.vocab.resolver import resolve_vocab

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic")


class TokieEngine(Adapter):
    adapter_name = "tokie"
    package = "tokie"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        import tokie

        if is_hub_id(target):
            self.tokenizer = tokie.Tokenizer.from_pretrained(target)  # needs a network
            self.vocab_name = target
            return
        vocab = resolve_vocab(target)
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        self.tokenizer = tokie.Tokenizer.from_json(str(tokenizer_json_path(vocab, self.options, "tokie")))

    def encode_texts(self, texts, allow_special):
        # allow_special is not honoured (capabilities.special_tokens=False).
        if not texts:
            return []
        return [as_token_array(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode_bytes([int(i)])) for i in ids]
