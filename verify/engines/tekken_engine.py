"""Adapter for Mistral's Tekken tokenizer (``mistral-common``).

Specs: ``tekken:tekken | tekken_240718 | path/to/tekken.json``.

``Tekkenizer.encode`` never turns text into control tokens (specials only come
from the request builders), so ``capabilities.special_tokens`` is False.
No BOS/EOS are added.
"""

from __future__ import annotations

from verify.engines.base import Adapter, Capabilities, as_token_array, package_version
from verify.engines.common import cannot_load
from verify.engines.tiktoken_engine import MEASURED_UNICODE
from verify.vocab.resolver import resolve_vocab

OFFLINE_VOCABS: tuple[str, ...] = ("tekken", "tekken_240718")


class TekkenEngine(Adapter):
    adapter_name = "tekken"
    package = "mistral-common"
    # Tekkenizer splits with tiktoken's regex engine: the same character tables.
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True,
                                unicode_version=MEASURED_UNICODE.get(package_version("tiktoken") or ""))

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        vocab = resolve_vocab(target)
        if vocab.kind not in ("tekken-json", "hf-json"):
            raise cannot_load("tekken", vocab)
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        self.tokenizer = Tekkenizer.from_file(str(vocab.path))
        self._keep = SpecialTokenPolicy.KEEP

    def encode_texts(self, texts, allow_special):
        return [as_token_array(self.tokenizer.encode(t, bos=False, eos=False)) for t in texts]

    def token_bytes(self, ids):
        return [self.tokenizer.id_to_byte_piece(int(i), self._keep) for i in ids]
