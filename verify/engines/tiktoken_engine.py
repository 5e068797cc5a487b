"""Adapter for OpenAI's ``tiktoken`` (a reference engine).

Spec: ``tiktoken:cl100k_base`` or ``tiktoken:/path/ranks.tiktoken?encoding=cl100k_base``.

Entry points: ``single`` (the default: ``encode(allowed_special="all")`` /
``encode_ordinary`` per text) and ``batch`` (``encode_batch`` /
``encode_ordinary_batch``, tiktoken's thread-pool batch call; ``?entry=batch``).
"""

from __future__ import annotations

import numpy as np

from verify.engines.base import TOKEN_DTYPE, Capabilities, package_version
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.vocab.tiktoken_family import build_encoding


# Unicode version of the character tables per tiktoken release, measured with
# `verify unicode` (its letter and number classes against each version's tables).
MEASURED_UNICODE = {"0.14.0": "16.0.0"}


class TiktokenEngine(VocabAdapter):
    adapter_name = "tiktoken"
    package = "tiktoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True,
                                unicode_version=MEASURED_UNICODE.get(package_version("tiktoken") or ""),
                                entry_points=("single", "batch"))
    loads = Loads(kinds=("tiktoken",), options=("encoding",))

    def load(self, vocab):
        self.encoding = build_encoding(vocab, self.options.get("encoding"))
        self._to_numpy = getattr(self.encoding, "encode_to_numpy", None)  # tiktoken 0.9 and later

    # The default is one call per text: tiktoken's *_batch helpers go through a thread pool
    # even with one thread, which costs more than they save here. Each call's ids come as one
    # uint32 buffer (``encode_to_numpy``: no Python list, 15 % less CPU on a long text); with no
    # special token allowed it encodes what ``encode_ordinary`` encodes. It lacks the surrogate
    # repair the list calls make (a lone surrogate replaced before encoding), so a text that
    # holds one goes through the list call, whose ids are what tiktoken's users get.
    def encode_one(self, text, allow_special):
        to_numpy = self._to_numpy
        if to_numpy is not None:
            try:
                if allow_special:
                    return to_numpy(text, allowed_special="all")
                return to_numpy(text, allowed_special=set(), disallowed_special=())
            except UnicodeEncodeError:
                pass
        if allow_special:
            return np.asarray(self.encoding.encode(text, allowed_special="all"), dtype=TOKEN_DTYPE)
        return np.asarray(self.encoding.encode_ordinary(text), dtype=TOKEN_DTYPE)

    def encode_many(self, texts, allow_special):
        if allow_special:
            return self.encoding.encode_batch(texts, allowed_special="all")
        return self.encoding.encode_ordinary_batch(texts)

    def token_bytes(self, ids):
        return [self.encoding.decode_single_token_bytes(int(i)) for i in ids]
