"""Convert a tiktoken encoding into an equivalent HuggingFace ``tokenizers``
tokenizer: byte-level BPE over the same split pattern, the same vocabulary,
merges derived from the ranks, the same special tokens.

Derivation of merges: a token of rank r is reachable by merging two shorter
tokens whose ranks are both below r. Every such split becomes a merge ranked by
r (ties ordered by the ranks of the parts), which reproduces tiktoken's
lowest-rank-first merge order.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

CONVERTER_VERSION = 2


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (the ByteLevel alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def token_to_str(token: bytes) -> str:
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def derive_merges(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    merges: list[tuple[int, int, int, bytes, bytes]] = []
    for token, rank in ranks.items():
        if len(token) < 2:
            continue
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            lr, rr = ranks.get(left), ranks.get(right)
            if lr is not None and rr is not None and lr < rank and rr < rank:
                merges.append((rank, lr, rr, left, right))
    merges.sort()
    return [(left, right) for _, _, _, left, right in merges]


def onig_pattern(pat_str: str) -> str:
    """Translate a tiktoken (fancy-regex) split pattern to Oniguruma, which
    tokenizers uses. In Oniguruma's Ruby syntax ``{m,n}+`` is NOT possessive: it
    repeats the interval, so ``\\p{N}{1,3}+`` would glue a whole digit run into one
    piece. A plain ``{m,n}`` as the last item of a top-level alternative matches
    exactly what the possessive form matches, so the ``+`` is dropped."""
    return re.sub(r"(\{\d+(?:,\d*)?\})\+", r"\1", pat_str)


def tokenizer_json(pat_str: str, ranks: dict[bytes, int], special_tokens: dict[str, int]) -> str:
    vocab = {token_to_str(tok): rank for tok, rank in ranks.items()}
    # Special tokens must also live in the model vocabulary: added tokens absent
    # from it are renumbered by tokenizers, which would shift their ids.
    vocab.update(special_tokens)
    merges = [[token_to_str(a), token_to_str(b)] for a, b in derive_merges(ranks)]
    added = [
        {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True}
        for s, i in sorted(special_tokens.items(), key=lambda kv: kv[1])
    ]
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": onig_pattern(pat_str)}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            # tiktoken returns a piece that is itself a token without merging; so must we.
            "ignore_merges": True,
            "vocab": vocab, "merges": merges,
        },
    }
    return json.dumps(doc, ensure_ascii=False)


def converted_tokenizer_path(cache_root: Path, vocab_sha256: str, encoding_name: str) -> Path:
    return cache_root / "converted" / f"{encoding_name}-{vocab_sha256[:16]}-v{CONVERTER_VERSION}.tokenizer.json"
