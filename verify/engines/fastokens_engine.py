"""Adapter for ``fastokens`` (a tokenizer.json engine with tiktoken loading).

Specs:
  fastokens:cl100k_base | o200k_base | p50k_base   ``Tokenizer.from_tiktoken`` on our ranks file
  fastokens:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  fastokens:org/model                               the hub (needs a network)

``allow_special=False`` uses ``split_special_tokens`` (special added tokens
become ordinary text; non-special added tokens still match, as in HF).

Entry points: ``batch`` (the default: ``encode_batch_flat``; without ``?entry=`` each
one-segment sample is its own call and a sample of several segments goes to
``encode_segments``, as always), ``single`` (``Tokenizer.encode``) and ``segments``
(``Tokenizer.encode_segments``, native typed segments).
"""

from __future__ import annotations

from verify.engines.base import Capabilities, as_token_array
from verify.engines.common import TOKENIZER_JSON_KINDS, added_token_bytes, split_flat_buffers, tokenizer_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "deepseek-v3")  # p50k_base: its ranks are not dense


class FastokensEngine(VocabAdapter):
    adapter_name = "fastokens"
    package = "fastokens"
    capabilities = Capabilities(special_tokens=True, segments=True, decode=True,
                                entry_points=("batch", "single", "segments"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("encoding",))

    def load(self, vocab):
        from fastokens import Tokenizer

        if vocab is None:
            self.tokenizer = Tokenizer.from_model(self.target)  # the hub; needs a network
        elif vocab.kind == "tiktoken":
            _, family = self.tiktoken_family(vocab)
            self.tokenizer = Tokenizer.from_tiktoken(
                str(vocab.path), pattern=family["pat_str"], special_tokens=family["special_tokens"]
            )
        else:
            self.tokenizer = Tokenizer.from_file(str(vocab.path))
        self._added = added_token_bytes(self.tokenizer.added_tokens())

    def encode_many(self, texts, allow_special):
        ids, offsets = self.tokenizer.encode_batch_flat(
            list(texts), add_special_tokens=False, split_special_tokens=not allow_special
        )
        return split_flat_buffers(ids, offsets, len(texts))

    def encode_one(self, text, allow_special):
        return as_token_array(self.tokenizer.encode(text, add_special_tokens=False,
                                                    split_special_tokens=not allow_special).ids)

    def encode_segments(self, segments):
        return as_token_array(self.tokenizer.encode_segments([(s.text, bool(s.allow_special)) for s in segments]).ids)

    def token_bytes(self, ids):
        return tokenizer_token_bytes(self.tokenizer, ids, added=self._added)
