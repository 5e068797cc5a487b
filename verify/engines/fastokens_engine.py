"""Adapter for ``fastokens`` (a tokenizer.json engine with tiktoken loading).

Specs:
  fastokens:cl100k_base | o200k_base | p50k_base   ``Tokenizer.from_tiktoken`` on our ranks file
  fastokens:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  fastokens:org/model                               the hub (needs a network)

``allow_special=False`` uses ``split_special_tokens`` (special added tokens
become ordinary text; non-special added tokens still match, as in HF).
Native ``encode_segments``.
"""

from __future__ import annotations

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.common import (
    added_token_bytes, cannot_load, is_hub_id, split_flat_buffers, tiktoken_encoding_name, vocab_token_bytes,
)
from verify.vocab.resolver import resolve_vocab
from verify.vocab.tiktoken_family import family_definition

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3")


class FastokensEngine(Adapter):
    adapter_name = "fastokens"
    package = "fastokens"
    capabilities = Capabilities(special_tokens=True, segments=True, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        from fastokens import Tokenizer

        if is_hub_id(target):
            self.tokenizer = Tokenizer.from_model(target)  # needs a network
            self.vocab_name = target
        else:
            vocab = resolve_vocab(target)
            self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
            if vocab.kind == "tiktoken":
                family = family_definition(tiktoken_encoding_name(vocab, self.options))
                self.tokenizer = Tokenizer.from_tiktoken(
                    str(vocab.path), pattern=family["pat_str"], special_tokens=family["special_tokens"]
                )
            elif vocab.kind == "hf-json":
                self.tokenizer = Tokenizer.from_file(str(vocab.path))
            else:
                raise cannot_load("fastokens", vocab)
        self._added = added_token_bytes(self.tokenizer.added_tokens())

    def encode_texts(self, texts, allow_special):
        if not texts:
            return []
        ids, offsets = self.tokenizer.encode_batch_flat(
            list(texts), add_special_tokens=False, split_special_tokens=not allow_special
        )
        return split_flat_buffers(ids, offsets, len(texts))

    def encode_segments(self, segments):
        return as_token_array(self.tokenizer.encode_segments([(s.text, bool(s.allow_special)) for s in segments]).ids)

    def token_bytes(self, ids):
        return vocab_token_bytes(
            ids, self.tokenizer.id_to_token, lambda i: self.tokenizer.decode([i], skip_special_tokens=False),
            added=self._added,
        )
