"""Adapter for ``kitoken`` (one engine for tiktoken, tokenizers, SentencePiece and Tekken files).

Specs:
  kitoken:cl100k_base | o200k_base | p50k_base   ``Kitoken.from_tiktoken_file`` (kitoken infers
                                                  the split pattern and special tokens itself)
  kitoken:deepseek-v3 | anthropic | path.json     ``Kitoken.from_tokenizers_file``
  kitoken:mistral-spm-v1 | mistral-spm-v3         ``Kitoken.from_sentencepiece_file``
  kitoken:tekken | tekken_240718                  ``Kitoken.from_tekken``

``allow_special`` maps to ``encode_specials``. Entry points: ``batch`` (the default:
``encode_all``) and ``single`` (``encode``).
"""

from __future__ import annotations

from pathlib import Path

from verify.engines.base import Capabilities
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = (
    "cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic",
    "tekken", "tekken_240718", "mistral-spm-v1", "mistral-spm-v3",
)


class KitokenEngine(VocabAdapter):
    adapter_name = "kitoken"
    package = "kitoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(kinds=("tiktoken", "hf-json", "sentencepiece", "tekken-json"))

    def load(self, vocab):
        from kitoken import Kitoken

        path = str(vocab.path)
        if vocab.kind == "tiktoken":
            self.tokenizer = Kitoken.from_tiktoken_file(path)
        elif vocab.kind == "hf-json":
            self.tokenizer = Kitoken.from_tokenizers_file(path)
        elif vocab.kind == "sentencepiece":
            self.tokenizer = Kitoken.from_sentencepiece_file(path)
        else:
            self.tokenizer = Kitoken.from_tekken(Path(path).read_bytes())

    def encode_many(self, texts, allow_special):
        return self.tokenizer.encode_all(list(texts), bool(allow_special))

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode(text, bool(allow_special))

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode([int(i)], True)) for i in ids]
