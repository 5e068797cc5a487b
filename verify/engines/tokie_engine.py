"""Adapter for ``tokie`` (BPE / WordPiece / Unigram from tokenizer.json).

Specs:
  tokie:cl100k_base | o200k_base | p50k_base   our tiktoken vocabulary converted to tokenizer.json
  tokie:deepseek-v3 | anthropic | path.json    a tokenizer.json
  tokie:org/model                              ``Tokenizer.from_pretrained`` (needs a network)

tokie has no switch for special-token literals (added tokens always match), so
``capabilities.special_tokens`` is False.

Entry points: ``batch`` (the default: ``encode_batch``), ``single`` (``encode``) and
``file`` (``encode_files`` with an empty separator: one document per file; its default
separator would cut a document at ``<|endoftext|>``). None adds special tokens.
"""

from __future__ import annotations

import numpy as np

from verify.engines.base import Capabilities, as_token_array
from verify.engines.common import split_by_offsets
from verify.engines.common import TOKENIZER_JSON_KINDS
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic")


class TokieEngine(VocabAdapter):
    adapter_name = "tokie"
    package = "tokie"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True,
                                entry_points=("batch", "single", "file"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("encoding",))

    def load(self, vocab):
        import tokie

        if vocab is None:
            self.tokenizer = tokie.Tokenizer.from_pretrained(self.target)  # the hub; needs a network
        else:
            self.tokenizer = tokie.Tokenizer.from_json(str(self.tokenizer_json(vocab)))

    # allow_special is not honoured (capabilities.special_tokens=False).
    def encode_many(self, texts, allow_special):
        return [as_token_array(e.ids) for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def encode_one(self, text, allow_special):
        return as_token_array(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def encode_files(self, paths, allow_special):
        ids, offsets = self.tokenizer.encode_files(list(paths), separator=b"", add_special_tokens=False)
        return split_by_offsets(np.asarray(ids), np.asarray(offsets), len(offsets) - 1)

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode_bytes([int(i)])) for i in ids]
