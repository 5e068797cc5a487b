"""What a vocabulary is made of, read from its files: every token's bytes, the special
(added) tokens, the pre-tokenizer patterns and the normalizer.

    view = vocabulary_view("cl100k_base")      # a known name, or a path
    view.tokens[i]        bytes of token id i (b"" where an id has no entry)
    view.special          {"<|endoftext|>": 100257, ...}
    view.patterns         [Pattern(regex, flavor), ...] in the order they split the text
    view.normalizer       "NFKC" | None

The sweeps derive their probe contexts from ``patterns`` and their vocabulary
neighbours from ``tokens``; the planted reference engines of the recall tests are
built from the same ranks and patterns with one character class changed.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from verify.errors import ConfigError
from verify.vocab.resolver import ResolvedVocab, resolve_vocab

# The split pattern HF's ByteLevel pre-tokenizer applies when ``use_regex`` is on (GPT-2's).
BYTE_LEVEL_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


@dataclass(frozen=True)
class Pattern:
    regex: str
    flavor: str  # "fancy-regex" (tiktoken and Rust engines) | "oniguruma" (HF tokenizers)
    source: str = ""  # where in the tokenizer it sits, e.g. "pre_tokenizer.pretokenizers[2]"


@dataclass
class VocabularyView:
    name: str
    kind: str
    sha256: str
    tokens: list[bytes]
    special: dict[str, int] = field(default_factory=dict)
    patterns: list[Pattern] = field(default_factory=list)
    normalizer: str | None = None
    isolated_ranges: list[str] = field(default_factory=list)  # Split patterns of fixed ranges (not classes)


def vocabulary_view(target: str, options: dict | None = None) -> VocabularyView:
    """The view of a known vocabulary name or a vocabulary file (read once per process)."""
    vocab = resolve_vocab(target)
    return _view(vocab.sha256, vocab.kind, (options or {}).get("encoding"), target)


@lru_cache(maxsize=8)
def _view(sha256: str, kind: str, encoding: str | None, target: str) -> VocabularyView:
    vocab = resolve_vocab(target)
    if kind == "tiktoken":
        return _tiktoken(vocab, encoding)
    if kind == "hf-json":
        return _hf_json(vocab)
    if kind == "tekken-json":
        return _tekken(vocab)
    if kind == "sentencepiece":
        return _sentencepiece(vocab)
    raise ConfigError(f"cannot inspect a '{kind}' vocabulary ({vocab.name})")


def _tiktoken(vocab: ResolvedVocab, encoding: str | None) -> VocabularyView:
    from verify.vocab.tiktoken_family import family_definition, family_name, load_ranks

    ranks = load_ranks(vocab)
    family = family_definition(family_name(vocab, encoding))
    size = max([*ranks.values(), *family["special_tokens"].values()]) + 1
    tokens = [b""] * size
    for token, rank in ranks.items():
        tokens[rank] = token
    for text, rank in family["special_tokens"].items():
        tokens[rank] = text.encode()
    return VocabularyView(vocab.name, "tiktoken", vocab.sha256, tokens, dict(family["special_tokens"]),
                          [Pattern(family["pat_str"], "fancy-regex", "pat_str")])


def _hf_json(vocab: ResolvedVocab) -> VocabularyView:
    from verify.vocab.convert import unicode_to_bytes

    doc = json.loads(Path(vocab.path).read_text(encoding="utf-8"))
    model = doc.get("model") or {}
    entries = model.get("vocab") or {}
    if isinstance(entries, list):  # Unigram: [[piece, score], ...]
        entries = {piece: i for i, (piece, _) in enumerate(entries)}
    added = {t["content"]: int(t["id"]) for t in doc.get("added_tokens") or []}
    size = max([*entries.values(), *added.values(), -1]) + 1
    to_bytes = unicode_to_bytes()
    byte_level = _uses_byte_level(doc)
    tokens = [b""] * size
    for piece, i in entries.items():
        if byte_level and all(c in to_bytes for c in piece):
            tokens[i] = bytes(to_bytes[c] for c in piece)
        else:
            tokens[i] = piece.replace("\u2581", " ").encode()
    for text, i in added.items():
        tokens[i] = text.encode()
    patterns, ranges = [], []
    _walk_pre_tokenizer(doc.get("pre_tokenizer"), "pre_tokenizer", patterns, ranges)
    return VocabularyView(vocab.name, "hf-json", vocab.sha256, tokens, added, patterns,
                          _normalizer(doc.get("normalizer")), ranges)


def _uses_byte_level(doc: dict) -> bool:
    text = json.dumps(doc.get("pre_tokenizer")) + json.dumps(doc.get("decoder"))
    return '"ByteLevel"' in text


def _walk_pre_tokenizer(node, where: str, patterns: list[Pattern], ranges: list[str]) -> None:
    if not node:
        return
    kind = node.get("type")
    if kind == "Sequence":
        for i, child in enumerate(node.get("pretokenizers") or []):
            _walk_pre_tokenizer(child, f"{where}.pretokenizers[{i}]", patterns, ranges)
    elif kind == "Split":
        pattern = node.get("pattern") or {}
        regex = pattern.get("Regex")
        if regex is None and "String" in pattern:
            import re

            regex = re.escape(pattern["String"])
        if regex is not None:
            if "\\p{" in regex or "\\s" in regex:
                patterns.append(Pattern(regex, "oniguruma", where))
            else:  # fixed code point ranges (DeepSeek's CJK split): no Unicode table involved
                ranges.append(regex)
    elif kind == "ByteLevel" and node.get("use_regex", True):
        patterns.append(Pattern(BYTE_LEVEL_REGEX, "oniguruma", f"{where} (ByteLevel)"))


def _normalizer(node) -> str | None:
    if not node:
        return None
    if node.get("type") == "Sequence":
        names = [n for n in (_normalizer(c) for c in node.get("normalizers") or []) if n]
        return "+".join(names) or None
    return node.get("type")


def _tekken(vocab: ResolvedVocab) -> VocabularyView:
    doc = json.loads(Path(vocab.path).read_text(encoding="utf-8"))
    config = doc["config"]
    n_special = int(config.get("default_num_special_tokens", 1000))
    size = int(config.get("default_vocab_size", len(doc["vocab"]) + n_special))
    tokens = [b""] * size
    special = {}
    for token in doc.get("special_tokens") or []:
        tokens[int(token["rank"])] = token["token_str"].encode()
        special[token["token_str"]] = int(token["rank"])
    for entry in doc["vocab"][: size - n_special]:
        tokens[n_special + int(entry["rank"])] = base64.b64decode(entry["token_bytes"])
    return VocabularyView(vocab.name, "tekken-json", vocab.sha256, tokens, special,
                          [Pattern(config["pattern"], "fancy-regex", "config.pattern")])


def _sentencepiece(vocab: ResolvedVocab) -> VocabularyView:
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=str(vocab.path))
    tokens, special = [], {}
    for i in range(sp.get_piece_size()):
        piece = sp.id_to_piece(i)
        if sp.is_control(i) or sp.is_unknown(i):
            special[piece] = i
        tokens.append(piece.replace("\u2581", " ").encode())
    return VocabularyView(vocab.name, "sentencepiece", vocab.sha256, tokens, special, [], "sentencepiece")
