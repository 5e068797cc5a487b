"""Adapter for ``riptoken`` (a Rust ``CoreBPE`` with tiktoken's constructor).

Specs: ``riptoken:cl100k_base | o200k_base | p50k_base`` or
``riptoken:/path/ranks.tiktoken?encoding=cl100k_base``: the ranks come from our
resolver, the split pattern and special tokens from tiktoken's definitions.
"""

from __future__ import annotations

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.common import cannot_load, tiktoken_encoding_name
from verify.vocab.resolver import resolve_vocab
from verify.vocab.tiktoken_family import family_definition, load_ranks

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base")


class RiptokenEngine(Adapter):
    adapter_name = "riptoken"
    package = "riptoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        import riptoken

        vocab = resolve_vocab(target)
        if vocab.kind != "tiktoken":
            raise cannot_load("riptoken", vocab)
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        family = family_definition(tiktoken_encoding_name(vocab, self.options))
        self._specials = set(family["special_tokens"])
        self.bpe = riptoken.CoreBPE(load_ranks(vocab), family["special_tokens"], family["pat_str"])

    def encode_texts(self, texts, allow_special):
        if allow_special:
            return [as_token_array(self.bpe.encode(t, self._specials)) for t in texts]
        return [as_token_array(ids) for ids in self.bpe.encode_ordinary_batch(list(texts))]

    def token_bytes(self, ids):
        return [bytes(self.bpe.decode_single_token_bytes(int(i))) for i in ids]
