"""Build tiktoken encodings from a resolved vocabulary file, offline.

The split pattern and special tokens come from tiktoken's own plugin definitions
(``tiktoken_ext.openai_public``); only the ranks file comes from our resolver.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from verify.errors import ConfigError
from verify.vocab.resolver import ResolvedVocab

_lock = threading.Lock()


def _no_ranks(*_args, **_kwargs) -> dict[bytes, int]:
    return {}


@functools.lru_cache(maxsize=None)
def family_definition(encoding_name: str) -> dict[str, Any]:
    """``{"pat_str": ..., "special_tokens": {...}}`` for a tiktoken encoding name."""
    import tiktoken_ext.openai_public as public

    constructor = public.ENCODING_CONSTRUCTORS.get(encoding_name)
    if constructor is None:
        known = ", ".join(sorted(public.ENCODING_CONSTRUCTORS))
        raise ConfigError(f"unknown tiktoken encoding '{encoding_name}' (known: {known})")
    # The constructor would download the ranks; we only want its pattern and special tokens, so
    # its module's loader answers an empty table while it runs (under a lock: the swap is global).
    with _lock:
        loader = public.load_tiktoken_bpe
        public.load_tiktoken_bpe = _no_ranks
        try:
            definition = constructor()
        finally:
            public.load_tiktoken_bpe = loader
    return {"pat_str": definition["pat_str"], "special_tokens": dict(definition["special_tokens"])}


def load_ranks(vocab: ResolvedVocab) -> dict[bytes, int]:
    from tiktoken.load import load_tiktoken_bpe

    return load_tiktoken_bpe(str(vocab.path), expected_hash=vocab.sha256)


def family_name(vocab: ResolvedVocab, encoding_name: str | None = None) -> str:
    """The tiktoken family (split pattern, specials) of a ranks file: the option, or the known vocabulary's."""
    name = encoding_name or (vocab.spec.tiktoken_encoding if vocab.spec else None)
    if not name:
        raise ConfigError(
            f"vocabulary {vocab.path} is a bare ranks file: say which split pattern and special tokens "
            "it uses with the option encoding=NAME (e.g. ?encoding=cl100k_base)"
        )
    return name


def encoding_name(vocab: ResolvedVocab, encoding_name: str | None = None) -> str:
    """The name ``build_encoding`` gives the encoding (known without loading the ranks)."""
    name = family_name(vocab, encoding_name)
    return vocab.name if vocab.spec else f"{name}@{vocab.path.name}"


def build_encoding(vocab: ResolvedVocab, encoding_name_option: str | None = None):
    import tiktoken

    name = family_name(vocab, encoding_name_option)
    family = family_definition(name)
    return tiktoken.Encoding(
        name=encoding_name(vocab, encoding_name_option),
        pat_str=family["pat_str"],
        mergeable_ranks=load_ranks(vocab),
        special_tokens=family["special_tokens"],
    )
