"""Adapter for ``tuetoken`` (a Rust tokenizer.json engine with an O(n) merger).

Specs:
  tuetoken:cl100k_base | o200k_base | p50k_base   our ranks file converted to an
                                                   equivalent tokenizer.json (as ``hf:`` does)
  tuetoken:deepseek-v3 | path/tokenizer.json       a tokenizer.json
  tuetoken:org/model                               the hub (needs a network)

(``tuetoken.Tokenizer.from_tiktoken`` downloads the ranks from OpenAI's CDN, so
it is not used.) ``allow_special=True`` is ``AutoTokenizer.encode(...,
add_special_tokens=False)``, which splits on every added token. ``False`` keeps
HF's ``split_special_tokens`` notion: special added tokens become ordinary
text (``encode_ordinary``); added tokens not marked special still match, by
registering only those with the engine's ``set_special_tokens``.
"""

from __future__ import annotations

import json
from pathlib import Path

from verify.engines.base import Adapter, Capabilities, as_token_array
from verify.engines.hf_engine import HUB_ID, _converted
from verify.errors import ConfigError
from verify.vocab import convert
from verify.vocab.known import KNOWN_VOCABS
from verify.vocab.resolver import resolve_vocab
from verify.vocab.tiktoken_family import build_encoding

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3")

_SCHEMES = {"none": 0, "always": 1, "first": 2}


class TuetokenEngine(Adapter):
    adapter_name = "tuetoken"
    package = "tuetoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True)

    def __init__(self, target, options=None, spec=None):
        super().__init__(target, options, spec)
        import tuetoken

        if target not in KNOWN_VOCABS and not Path(target).exists() and HUB_ID.fullmatch(target):
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(target, "tokenizer.json"))  # needs a network
            self.vocab_name = target
        else:
            vocab = resolve_vocab(target)
            self.vocab_name, self.vocab_sha256 = vocab.name, vocab.sha256
            if vocab.kind == "tiktoken":
                path = _converted(build_encoding(vocab, self.options.get("encoding")), vocab.sha256)
            elif vocab.kind == "hf-json":
                path = vocab.path
            else:
                raise ConfigError(f"tuetoken cannot load a '{vocab.kind}' vocabulary ({vocab.name})")
        try:
            self.auto = tuetoken.AutoTokenizer.from_file(str(path))
            self.core = tuetoken.Tokenizer(str(path))
        except Exception as exc:  # the engine fails closed on what it cannot reproduce
            raise ConfigError(f"tuetoken refuses {path}: {exc}") from exc
        added = json.loads(Path(path).read_text(encoding="utf-8")).get("added_tokens") or []
        self._added = {int(a["id"]): str(a["content"]).encode() for a in added}
        plain = [a for a in added if not a.get("special", False)]
        self._plain_added = bool(plain)
        if plain:
            scheme = _SCHEMES.get(getattr(self.auto, "_prepend_scheme", "none"), 0)
            self.core.set_special_tokens(
                [a["content"] for a in plain], [int(a["id"]) for a in plain],
                [bool(a.get("lstrip", False)) for a in plain], [bool(a.get("rstrip", False)) for a in plain], scheme,
            )
        self._threads = int(self.options.get("threads", 1))

    def encode_texts(self, texts, allow_special):
        if allow_special:
            return [as_token_array(self.auto.encode(t, add_special_tokens=False)) for t in texts]
        if self._plain_added:
            return [as_token_array(ids) for ids in self.core.encode_special_batch(list(texts), self._threads)]
        return [as_token_array(ids) for ids in self.core.encode_ordinary_batch(list(texts), self._threads)]

    def token_bytes(self, ids):
        to_bytes = convert.unicode_to_bytes()
        out = []
        for i, token in zip(ids, self.auto.convert_ids_to_tokens([int(i) for i in ids])):
            i = int(i)
            if i in self._added:
                out.append(self._added[i])
            elif token is None:
                out.append(b"")
            elif all(c in to_bytes for c in token):
                out.append(bytes(to_bytes[c] for c in token))
            else:
                out.append(self.core.decode([i]).encode())
        return out
