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

Entry points: ``batch`` (the default: ``encode_special_batch`` / ``encode_ordinary_batch``;
``AutoTokenizer`` has no batch call, so ``allow_special=True`` texts are encoded one by
one) and ``single`` (``encode_special`` / ``encode_ordinary``, ``AutoTokenizer.encode``).
"""

from __future__ import annotations

import json
from pathlib import Path

from verify.engines.base import Capabilities
from verify.engines.common import TOKENIZER_JSON_KINDS, added_token_bytes, vocab_token_bytes
from verify.engines.vocab_loading import Loads, VocabAdapter

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic")

_SCHEMES = {"none": 0, "always": 1, "first": 2}


class TuetokenEngine(VocabAdapter):
    adapter_name = "tuetoken"
    package = "tuetoken"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("batch", "single"))
    loads = Loads(kinds=TOKENIZER_JSON_KINDS, hub=True, options=("encoding", "threads"))

    def load(self, vocab):
        import tuetoken

        if vocab is None:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(self.target, "tokenizer.json"))  # the hub; needs a network
        else:
            path = self.tokenizer_json(vocab)
        with self.refusing(Exception):  # the engine fails closed on what it cannot reproduce
            self.auto = tuetoken.AutoTokenizer.from_file(str(path))
            self.core = tuetoken.Tokenizer(str(path))
        added = json.loads(Path(path).read_text(encoding="utf-8")).get("added_tokens") or []
        self._added = added_token_bytes(added)
        plain = [a for a in added if not a.get("special", False)]
        self._plain_added = bool(plain)
        if plain:
            scheme = _SCHEMES.get(getattr(self.auto, "_prepend_scheme", "none"), 0)
            self.core.set_special_tokens(
                [a["content"] for a in plain], [int(a["id"]) for a in plain],
                [bool(a.get("lstrip", False)) for a in plain], [bool(a.get("rstrip", False)) for a in plain], scheme,
            )
        self._threads = self.int_option("threads", 1)

    def encode_many(self, texts, allow_special):
        if allow_special:
            return [self.auto.encode(t, add_special_tokens=False) for t in texts]
        if self._plain_added:
            return self.core.encode_special_batch(list(texts), self._threads)
        return self.core.encode_ordinary_batch(list(texts), self._threads)

    def encode_one(self, text, allow_special):
        if allow_special:
            return self.auto.encode(text, add_special_tokens=False)
        return self.core.encode_special(text) if self._plain_added else self.core.encode_ordinary(text)

    def token_bytes(self, ids):
        ints = [int(i) for i in ids]
        tokens = dict(zip(ints, self.auto.convert_ids_to_tokens(ints)))  # one batched lookup
        return vocab_token_bytes(ints, tokens.get, lambda i: self.core.decode([i]), added=self._added)
