"""Adapter for ``riptoken`` (a Rust ``CoreBPE`` with tiktoken's constructor).

Specs: ``riptoken:cl100k_base | o200k_base | p50k_base`` or
``riptoken:/path/ranks.tiktoken?encoding=cl100k_base``: the ranks come from our
resolver, the split pattern and special tokens from tiktoken's definitions.

Entry points: ``batch`` (the default: ``encode_ordinary_batch``, and for
``allow_special`` ``encode_batch`` with every special allowed) and ``single``
(``encode_ordinary`` / ``encode``).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.vocab.tiktoken_family import load_ranks

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base")


class RiptokenEngine(VocabAdapter):
    adapter_name = "riptoken"
    package = "riptoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(kinds=("tiktoken",), options=("encoding",))

    def load(self, vocab):
        import riptoken

        _, family = self.tiktoken_family(vocab)
        self._specials = set(family["special_tokens"])
        self.bpe = riptoken.CoreBPE(load_ranks(vocab), family["special_tokens"], family["pat_str"])

    def encode_many(self, texts, allow_special):
        if allow_special:
            return self.bpe.encode_batch(list(texts), self._specials)
        return self.bpe.encode_ordinary_batch(list(texts))

    def encode_one(self, text, allow_special):
        return self.bpe.encode(text, self._specials) if allow_special else self.bpe.encode_ordinary(text)

    def token_bytes(self, ids):
        return [bytes(self.bpe.decode_single_token_bytes(int(i))) for i in ids]
