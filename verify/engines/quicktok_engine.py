"""Adapter for ``quicktok-v1`` (imported as ``quicktok``; a C++ exact BPE).

Specs: ``quicktok:cl100k_base | o200k_base``: the package's bundled data files
(``quicktok/data/*.vocab``), not our resolver's. ``vocab_sha256`` is the SHA-256
of the engine's own table written out as a ``.tiktoken`` file (rank order), so
it equals tiktoken's published file hash exactly when the bundled table is the
same. ``?data_dir=PATH`` loads an encoding imported with
``quicktok.import_tokenizer`` instead (then the hash is of that table).

``allow_special=False`` uses ``with_special=False`` (tiktoken's
``encode_ordinary``); ``True`` turns every bundled special into its id.

Entry points: ``batch`` (the default: ``encode_batch``) and ``single``
(``encode_ordinary`` / ``encode_with_special``).
"""

from __future__ import annotations

import numpy as np

from verify.engines.base import Capabilities
from verify.engines.common import split_by_offsets, table_sha256
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base")


class QuicktokEngine(VocabAdapter):
    adapter_name = "quicktok"
    package = "quicktok-v1"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(bundled=OFFLINE_VOCABS, options=("data_dir", "threads"),
                  hint="give ?data_dir= for an imported encoding")

    def locate(self, target):
        if str(self.options.get("data_dir", "")):  # an encoding imported there: any name it has
            return self.by_name(target)
        return super().locate(target)

    def load(self, vocab):
        import quicktok

        with self.refusing(RuntimeError):
            self.tokenizer = quicktok.Tokenizer(self.target, str(self.options.get("data_dir", "")))
        self.vocab_sha256 = table_sha256(self._ranked())
        self._threads = self.int_option("threads", 1)

    def _ranked(self):
        # token_byte_values() is sorted by bytes (as tiktoken's is), not by rank.
        tok = self.tokenizer
        for i in range(tok.n_vocab):
            if tok.is_special_token(i):
                continue
            try:
                yield i, tok.decode_single_token_bytes(i)
            except KeyError:
                continue

    def encode_many(self, texts, allow_special):
        ids, offsets = self.tokenizer.encode_batch(list(texts), self._threads, bool(allow_special))
        return split_by_offsets(np.asarray(ids), np.asarray(offsets), len(texts))

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode_with_special(text) if allow_special else self.tokenizer.encode_ordinary(text)

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode_single_token_bytes(int(i))) for i in ids]
