"""Adapter for ``splintr-rs`` (imported as ``splintr``; Rust BPE/SentencePiece).

Specs:
  splintr:cl100k_base | o200k_base   ``splintr.Tokenizer`` on our ranks file with the
                                     package's own split pattern constant
                                     (``CL100K_BASE_PATTERN`` / ``O200K_BASE_PATTERN``)
                                     and tiktoken's special tokens. splintr's regex
                                     engine refuses tiktoken's possessive quantifiers,
                                     so tiktoken's ``pat_str`` cannot be passed as is.
  ...?pretrained=true                ``Tokenizer.from_pretrained(name)``: the bundled
                                     vocabulary, which adds 54 "agent" special tokens
                                     (``<|think|>`` ...) from id 100277 / 200019; then
                                     ``vocab_sha256`` is None (compiled in, no file)
  ...?pcre2=true                     switch the split regex to its PCRE2 backend
  splintr:deepseek-v3 | path/tokenizer.json   ``splintr.from_json``

``allow_special=False`` is ``encode_ordinary``: every special-token literal is
ordinary text. For a tokenizer.json that includes added tokens *not* marked
special (deepseek-v3 has 53, e.g. ``<｜User｜>``), which HF's
``split_special_tokens`` would still match: splintr has no call for that
(``encode_allowed_special`` raises on any other special in the text), so the
harness reports those texts against an ``hf:`` reference. ``True`` matches
every special (``encode_with_special``).

Entry points: ``single`` (the default: ``encode_ordinary`` / ``encode_with_special``)
and ``batch`` (``encode_batch_with_special`` for ``allow_special=True``; splintr's
other batch calls match special literals, so ``allow_special=False`` texts still go
one by one through ``encode_ordinary``).
"""

from __future__ import annotations

from verify.engines.base import Capabilities
from verify.engines.common import TOKENIZER_JSON_KINDS
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError
from verify.vocab.tiktoken_family import family_definition

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "deepseek-v3", "anthropic")


class SplintrEngine(VocabAdapter):
    adapter_name = "splintr"
    package = "splintr-rs"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("single", "batch"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, options=("pretrained", "pcre2", "encoding"))

    def locate(self, target):
        if self.flag_option("pretrained"):  # its compiled-in vocabulary: no file of ours, no hash
            return self.by_name(target)
        return super().locate(target)

    def load(self, vocab):
        import splintr

        patterns = {"cl100k_base": splintr.CL100K_BASE_PATTERN, "o200k_base": splintr.O200K_BASE_PATTERN}
        if vocab is None:
            self.tokenizer = splintr.Tokenizer.from_pretrained(self.target)
        elif vocab.kind == "tiktoken":
            name = self.tiktoken_encoding(vocab)
            if name not in patterns:
                raise ConfigError(f"splintr has no split pattern for encoding '{name}' (have: cl100k_base, "
                                  "o200k_base)")
            specials = family_definition(name)["special_tokens"]
            self.tokenizer = splintr.Tokenizer(str(vocab.path), patterns[name], specials)
        else:
            self.tokenizer = splintr.from_json(str(vocab.path))
        if self.flag_option("pcre2"):
            self.tokenizer = self.tokenizer.pcre2(True)

    def encode_one(self, text, allow_special):
        if allow_special:
            return self.tokenizer.encode_with_special(text)
        return self.tokenizer.encode_ordinary(text)

    def encode_many(self, texts, allow_special):
        if allow_special:
            return self.tokenizer.encode_batch_with_special(list(texts))
        return [self.tokenizer.encode_ordinary(t) for t in texts]  # no batch call keeps specials as text

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode_token_bytes(int(i))) for i in ids]
