"""An in-memory engine for tests and for third-party conformance suites.

``FakeEngine(encode)`` wraps any ``encode(text, allow_special) -> list[int]``.
The default is a byte-level identity tokenizer: one token per UTF-8 byte,
except that special-token literals in allowed segments become ids >= 256.
Planted-bug engines in the tests subclass or wrap it.
"""

from __future__ import annotations

from typing import Callable

from verify.engines.base import Adapter, Capabilities, as_token_array

FAKE_SPECIALS = {"<|endoftext|>": 256, "<|sep|>": 257}


def byte_encode(text: str, allow_special: bool) -> list[int]:
    out: list[int] = []
    i = 0
    while i < len(text):
        if allow_special:
            hit = next((s for s in FAKE_SPECIALS if text.startswith(s, i)), None)
            if hit:
                out.append(FAKE_SPECIALS[hit])
                i += len(hit)
                continue
        out.extend(text[i].encode("utf-8"))
        i += 1
    return out


class FakeEngine(Adapter):
    adapter_name = "fake"
    package = None
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True)

    def __init__(self, target: str = "bytes", options=None, spec=None,
                 encode: Callable[[str, bool], list[int]] | None = None):
        super().__init__(target, options, spec or f"fake:{target}")
        self._encode = encode or byte_encode
        self.vocab_name = "fake-bytes"

    def encode_texts(self, texts, allow_special):
        return [as_token_array(self._encode(t, allow_special)) for t in texts]

    def token_bytes(self, ids):
        specials = {v: k.encode() for k, v in FAKE_SPECIALS.items()}
        return [specials.get(int(i), bytes([int(i)]) if int(i) < 256 else b"") for i in ids]
