"""Adapter for ``bpe-openai`` (GitHub's ``bpe`` crate behind a tiktoken-like API).

Specs: ``bpe-openai:cl100k_base | o200k_base``.

The package bundles its own copies of the ranks (``bpe_openai/data``) and
builds the encodings by name; it cannot load our resolver's files. Inputs of
1,000,000 characters or more are refused by the package.

Entry points: ``single`` (the default: ``encode(allowed_special="all")`` /
``encode_ordinary``) and ``batch`` (``encode_batch`` / ``encode_ordinary_batch``).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.common import encode_with_tiktoken_api
from verify.engines.vocab_loading import Loads, VocabAdapter

# Loaded from the package's bundled data, not from our resolver's files.
OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base")


class BpeOpenAIEngine(VocabAdapter):
    adapter_name = "bpe-openai"
    package = "bpe-openai"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("single", "batch"))
    loads = Loads(bundled=OFFLINE_VOCABS)  # the package's own copy: no hash of ours applies

    def load(self, vocab):
        import bpe_openai

        self.encoding = bpe_openai.build_encoding_from_name(self.target)

    def encode_one(self, text, allow_special):
        return encode_with_tiktoken_api(self.encoding, [text], allow_special)[0]

    def encode_many(self, texts, allow_special):
        if allow_special:
            return self.encoding.encode_batch(texts, allowed_special="all")
        return self.encoding.encode_ordinary_batch(texts)

    def token_bytes(self, ids):
        return [self.encoding.decode_single_token_bytes(int(i)) for i in ids]
