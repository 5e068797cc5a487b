"""Adapter for Mistral's Tekken tokenizer (``mistral-common``).

Specs: ``tekken:tekken | tekken_240718 | path/to/tekken.json``.

``Tekkenizer.encode`` never turns text into control tokens (specials only come
from the request builders), so ``capabilities.special_tokens`` is False.
No BOS/EOS are added. ``Tekkenizer`` has no batch call: its one entry point is ``single``.
"""

from __future__ import annotations

from verify.engines.base import Capabilities, package_version
from verify.engines.tiktoken_engine import MEASURED_UNICODE
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("tekken", "tekken_240718")


class TekkenEngine(VocabAdapter):
    adapter_name = "tekken"
    package = "mistral-common"
    # Tekkenizer splits with tiktoken's regex engine: the same character tables.
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True,
                                unicode_version=MEASURED_UNICODE.get(package_version("tiktoken") or ""),
                                entry_points=("single",))
    # A tekken.json given as a path reads as "hf-json" (the resolver goes by its suffix).
    loads = Loads(kinds=("tekken-json", "hf-json"))

    def load(self, vocab):
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        with self.refusing(KeyError, ValueError):  # a tokenizer.json that is no Tekken file
            self.tokenizer = Tekkenizer.from_file(str(vocab.path))
        self._keep = SpecialTokenPolicy.KEEP

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode(text, bos=False, eos=False)

    def token_bytes(self, ids):
        return [self.tokenizer.id_to_byte_piece(int(i), self._keep) for i in ids]
