"""Adapter for ``wordchipper`` (OpenAI BPE encodings in Rust).

Specs: ``wordchipper:cl100k_base | o200k_base | p50k_base``.

wordchipper only loads its pretrained encodings, downloading the ranks into its
cache (``WORDCHIPPER_CACHE_DIR``, else ``$XDG_CACHE_HOME`` or ``~/.cache``, then
``io.crates.wordchipper/openai/NAME/NAME.tiktoken``). Offline, this adapter
stages our hash-checked ranks file there first when the cache holds no copy
(or an empty one), then checks the loaded vocabulary's size: wordchipper 0.9.2
otherwise loads an empty or truncated cache file silently as a 256-token
byte vocabulary.

Entry points: ``batch`` (the default: ``encode_batch``) and ``single`` (``encode``).
"""

from __future__ import annotations

import os
from pathlib import Path

from verify.engines.base import Capabilities
from verify.engines.vocab_loading import Loads, VocabAdapter
from verify.errors import ConfigError
from verify.vocab.tiktoken_family import load_ranks
from verify import atomic

OFFLINE_VOCABS: tuple[str, ...] = ("cl100k_base", "o200k_base", "p50k_base")


def wordchipper_cache_file(name: str) -> Path:
    root = os.environ.get("WORDCHIPPER_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "io.crates.wordchipper"
    return base / "openai" / name / f"{name}.tiktoken"


class WordchipperEngine(VocabAdapter):
    adapter_name = "wordchipper"
    package = "wordchipper"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True, entry_points=("batch", "single"))
    # only its pretrained encodings, each staged from our hash-checked ranks file
    loads = Loads(kinds=("tiktoken",), bundled=OFFLINE_VOCABS)

    def load(self, vocab):
        import wordchipper

        cached = wordchipper_cache_file(vocab.name)
        if not cached.is_file() or cached.stat().st_size == 0:
            cached.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(cached, Path(vocab.path).read_bytes())
        self.tokenizer = wordchipper.Tokenizer.from_pretrained(vocab.name)
        expected = len(load_ranks(vocab))
        if self.tokenizer.vocab_size != expected:
            raise ConfigError(
                f"wordchipper loaded {self.tokenizer.vocab_size} tokens for {vocab.name}, expected {expected}: "
                f"its cached file {cached} is not the published vocabulary"
            )
        self._all = wordchipper.SpecialFilter.include_all()
        self._none = wordchipper.SpecialFilter.include_none()

    def encode_many(self, texts, allow_special):
        flt = self._all if allow_special else self._none
        return self.tokenizer.encode_batch(list(texts), special_filter=flt)

    def encode_one(self, text, allow_special):
        return self.tokenizer.encode(text, special_filter=self._all if allow_special else self._none)

    def token_bytes(self, ids):
        return [bytes(self.tokenizer.decode_bytes([int(i)])) for i in ids]
