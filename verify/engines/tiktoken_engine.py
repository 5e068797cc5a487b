"""Adapter for OpenAI's ``tiktoken`` (a reference engine).

Spec: ``tiktoken:cl100k_base`` or ``tiktoken:/path/ranks.tiktoken?encoding=cl100k_base``.
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
                                unicode_version=MEASURED_UNICODE.get(package_version("tiktoken") or ""))
    loads = Loads(kinds=("tiktoken",), options=("encoding",))

    def load(self, vocab):
        self.encoding = build_encoding(vocab, self.options.get("encoding"))

    def encode_texts(self, texts, allow_special):
        # One call per text: tiktoken's *_batch helpers go through a thread pool even
        # with one thread, which costs more than they save here.
        if allow_special:
            return [np.asarray(self.encoding.encode(t, allowed_special="all"), dtype=TOKEN_DTYPE) for t in texts]
        return [np.asarray(self.encoding.encode_ordinary(t), dtype=TOKEN_DTYPE) for t in texts]

    def token_bytes(self, ids):
        return [self.encoding.decode_single_token_bytes(int(i)) for i in ids]
