"""Adapter for ``toktok-rs`` (imported as ``toktok``; a Rust fork of quicktok).

Specs: ``toktok:cl100k_base | o200k_base``. The vocabularies are compiled into
the extension module, so nothing is loaded from our resolver. ``vocab_sha256``
is the SHA-256 of the engine's own table written out as a ``.tiktoken`` file
(base64 token, space, rank, newline, by rank): when the bundled table equals
tiktoken's published file this is that file's hash, otherwise it differs and
says so. Special tokens come from the engine (tiktoken's set for both).

The engine's public API is ``batch_count`` / ``truncate``; ids come from
``toktok._encoding(name)``, which its README documents as the full
encode/decode surface. ``allow_special=False`` uses ``with_special=False``
(special-token literals are ordinary text).

Entry points: ``batch`` (the default: ``encode_batch_to_numpy``) and ``single``
(``encode_ordinary`` / ``encode_with_special``).
"""

from __future__ import annotations

import numpy as np

from verify.engines.base import Capabilities
from verify.engines.common import split_by_offsets, table_sha256
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base")


class ToktokEngine(VocabAdapter):
    adapter_name = "toktok"
    package = "toktok-rs"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(bundled=OFFLINE_VOCABS, options=("threads",))

    def load(self, vocab):
        import toktok

        self.tokenizer = toktok._encoding(self.target)
        self.vocab_sha256 = table_sha256(enumerate(self.tokenizer.token_byte_values()))  # indexed by id
        self._threads = self.int_option("threads", 1)

    def encode_many(self, texts, allow_special):
        ids, offsets = self.tokenizer.encode_batch_to_numpy(list(texts), self._threads, bool(allow_special))
        return split_by_offsets(np.asarray(ids), np.asarray(offsets), len(texts))

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode_with_special(text) if allow_special else self.tokenizer.encode_ordinary(text)

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode_single_token_bytes(int(i))) for i in ids]
