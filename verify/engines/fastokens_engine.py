"""Adapter for ``fastokens`` (a tokenizer.json engine with tiktoken loading).

Specs:
  fastokens:cl100k_base | o200k_base | p50k_base   ``Tokenizer.from_tiktoken`` on our ranks file
  fastokens:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  fastokens:org/model                               the hub (needs a network)

``allow_special=False`` uses ``split_special_tokens`` (special added tokens
become ordinary text; non-special added tokens still match, as in HF).
Native ``encode_segments``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.hf_engine import HUB_ID
from verify.errors import ConfigError
from verify.vocab import convert
from verify.vocab.known import KNOWN_VOCABS
from verify.vocab.resolver import resolve_vocab
from verify.vocab.tiktoken_family import family_definition

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3")


class FastokensEngine(Adapter):
    adapter_name = "fastokens"
    package = "fastokens"
    capabilities = Capabilities(special_tokens=True, segments=True, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        from fastokens import Tokenizer

        if target not in KNOWN_VOCABS and not Path(target).exists() and HUB_ID.fullmatch(target):
            self.tokenizer = Tokenizer.from_model(target)  # needs a network
            self.vocab_name = target
        else:
            vocab = resolve_vocab(target)
            self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
            if vocab.kind == "tiktoken":
                name = self.options.get("encoding") or (vocab.spec.tiktoken_encoding if vocab.spec else None)
                if not name:
                    raise ConfigError(f"{vocab.path} is a bare ranks file: give ?encoding=NAME")
                family = family_definition(name)
                self.tokenizer = Tokenizer.from_tiktoken(
                    str(vocab.path), pattern=family["pat_str"], special_tokens=family["special_tokens"]
                )
            elif vocab.kind == "hf-json":
                self.tokenizer = Tokenizer.from_file(str(vocab.path))
            else:
                raise ConfigError(f"fastokens cannot load a '{vocab.kind}' vocabulary ({vocab.name})")
        self._added = {int(t["id"]): str(t["content"]).encode() for t in self.tokenizer.added_tokens()}

    def encode_texts(self, texts, allow_special):
        if not texts:
            return []
        ids, offsets = self.tokenizer.encode_batch_flat(
            list(texts), add_special_tokens=False, split_special_tokens=not allow_special
        )
        flat = np.frombuffer(ids, dtype="<u4")
        bounds = np.frombuffer(offsets, dtype="<u8")
        return [as_token_array(flat[bounds[i]:bounds[i + 1]].copy()) for i in range(len(texts))]

    def encode_segments(self, segments):
        return as_token_array(self.tokenizer.encode_segments([(s.text, bool(s.allow_special)) for s in segments]).ids)

    def token_bytes(self, ids):
        to_bytes = convert.unicode_to_bytes()
        out = []
        for i in ids:
            i = int(i)
            if i in self._added:
                out.append(self._added[i])
                continue
            token = self.tokenizer.id_to_token(i)
            if token is None:
                out.append(b"")
            elif all(c in to_bytes for c in token):
                out.append(bytes(to_bytes[c] for c in token))
            else:
                out.append(self.tokenizer.decode([i], skip_special_tokens=False).encode())
        return out
