"""Adapter for ``snaptokens`` (a Rust fork of fastokens for local tokenizer.json).

Specs:
  snaptokens:deepseek-v3 | path/tokenizer.json   a local tokenizer.json
  snaptokens:cl100k_base | o200k_base | p50k_base  our ranks converted to a tokenizer.json
                                                  (as ``hf:`` does); refused by snaptokens
                                                  0.2.6: cl100k/o200k for their non-contiguous
                                                  special ids, p50k for its split pattern

The engine never downloads. It has no switch to treat added tokens as text:
``encode`` always matches them, so ``capabilities.special_tokens`` is False and
``allow_special`` is not honoured.
"""

from __future__ import annotations

import numpy as np

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.hf_engine import _converted
from verify.errors import ConfigError
from verify.vocab import convert
from verify.vocab.resolver import resolve_vocab
from verify.vocab.tiktoken_family import build_encoding

OFFLINE_VOCABS: tuple[str, ...] = ("deepseek-v3",)


class SnaptokensEngine(Adapter):
    adapter_name = "snaptokens"
    package = "snaptokens"
    capabilities = Capabilities(special_tokens=False, segments=False, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        from snaptokens import Tokenizer

        vocab = resolve_vocab(target)
        self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
        if vocab.kind == "tiktoken":
            path = _converted(build_encoding(vocab, self.options.get("encoding")), vocab.sha256)
        elif vocab.kind == "hf-json":
            path = vocab.path
        else:
            raise ConfigError(f"snaptokens cannot load a '{vocab.kind}' vocabulary ({vocab.name})")
        try:
            self.tokenizer = Tokenizer.from_file(str(path))
        except ValueError as exc:
            raise ConfigError(f"snaptokens refuses {vocab.name}: {exc}") from exc

    def encode_texts(self, texts, allow_special):
        # allow_special is not honoured (capabilities.special_tokens=False).
        if not texts:
            return []
        ids, offsets = self.tokenizer.encode_batch_flat(list(texts), add_special_tokens=False)
        flat = np.frombuffer(ids, dtype="<u4")
        bounds = np.frombuffer(offsets, dtype="<u8")
        return [as_token_array(flat[bounds[i]:bounds[i + 1]].copy()) for i in range(len(texts))]

    def token_bytes(self, ids):
        to_bytes = convert.unicode_to_bytes()
        out = []
        for i in ids:
            token = self.tokenizer.id_to_token(int(i))
            if token is None:
                out.append(b"")
            elif all(c in to_bytes for c in token):
                out.append(bytes(to_bytes[c] for c in token))
            else:
                out.append(self.tokenizer.decode([int(i)], skip_special_tokens=False).encode())
        return out
