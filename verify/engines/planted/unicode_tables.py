"""Realistic planted Unicode-table faults: the real reference with one thing changed.

A planted engine is built from a reference vocabulary's own ranks and its own
pre-tokenizer pattern, with ONE character class of that pattern rewritten as an
explicit class from another table: the letters (``\\p{L}`` and its case
subcategories), numbers (``\\p{N}``), marks (``\\p{M}``), punctuation or symbols of
another Unicode version, or another definition of whitespace (``\\s``). Such an
engine differs from the reference only where that class changed -- and, as in
a real engine, only where the change moves a pre-token boundary that a merge or
a vocabulary entry crosses. The recall tests measure how many of those the sweep
finds (``verify.adversarial.unicode.observability`` says which are observable at all).

    fault = TableFault("cl100k_base", "letters", "15.0.0")
    engine = planted_engine(fault)           # an engine object (wrap in LocalExecutor)
    fault.changed()                           # code points whose class membership differs
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from verify.unicode_tables import tables as ud
from verify.engines.base import TOKEN_DTYPE, Adapter, Capabilities

CLASS_CATEGORIES = {
    "L": ("Lu", "Ll", "Lt", "Lm", "Lo"), "Lu": ("Lu",), "Ll": ("Ll",), "Lt": ("Lt",), "Lm": ("Lm",),
    "Lo": ("Lo",), "M": ("Mn", "Mc", "Me"), "N": ("Nd", "Nl", "No"),
    "P": ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"), "S": ("Sm", "Sc", "Sk", "So"),
}
# Which \p{...} classes each planted kind rewrites.
KIND_CLASSES = {"letters": ("L", "Lu", "Ll", "Lt", "Lm", "Lo"), "numbers": ("N",), "marks": ("M",),
                "punctuation": ("P",), "symbols": ("S",), "whitespace": ()}

# Unicode White_Space (unchanged since 6.3), the \s of Rust's regex and of Oniguruma.
WHITE_SPACE = (*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
               0x205F, 0x3000)
# Other definitions of whitespace that real engines carry, each a realistic table fault.
WHITESPACE_VARIANTS = {
    "unicode-6.2": (0x180E,), "python-isspace": (0x1C, 0x1D, 0x1E, 0x1F), "unicode-3.2": (0x200B,),
    "javascript": (0xFEFF,), "ascii-nel": (-0x85,),  # negative: taken out
}


@lru_cache(maxsize=64)
def class_members(name: str, version: str) -> np.ndarray:
    """Boolean mask over all code points: members of ``\\p{name}`` in ``version``."""
    table = ud.category_table(version)
    wanted = np.array([ud.CATEGORY_INDEX[c] for c in CLASS_CATEGORIES[name]], dtype=table.dtype)
    return np.isin(table, wanted)


def whitespace_members(variant: str | None) -> np.ndarray:
    mask = np.zeros(ud.N_CP, dtype=bool)
    mask[list(WHITE_SPACE)] = True
    for cp in WHITESPACE_VARIANTS.get(variant, ()) if variant else ():
        mask[abs(cp)] = cp >= 0
    return mask


def _ranges(mask: np.ndarray) -> str:
    """An explicit character-class body (no brackets) listing the set code points."""
    parts = []
    for first, last in ud.to_ranges(np.flatnonzero(mask)):
        if 0xD800 <= first <= 0xDFFF and 0xD800 <= last <= 0xDFFF:
            continue
        parts.append(f"\\x{{{first:X}}}" if first == last else f"\\x{{{first:X}}}-\\x{{{last:X}}}")
    return "".join(parts) or "\\x{10FFFF}"


def rewrite(regex: str, replacements: dict[str, str], whitespace: str | None = None) -> str:
    """``regex`` with each ``\\p{NAME}`` in ``replacements`` (and ``\\s``/``\\S`` when
    ``whitespace`` is given) replaced by an explicit class: the body alone inside a
    bracket expression, wrapped in brackets outside one."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\" and i + 1 < len(regex):
            nxt = regex[i + 1]
            if nxt == "p" and regex.startswith("{", i + 2):
                end = regex.index("}", i)
                name = regex[i + 3:end]
                if name in replacements:
                    body = replacements[name]
                    out.append(body if depth else f"[{body}]")
                    i = end + 1
                    continue
            if whitespace is not None and nxt in "sS":
                if nxt == "s":
                    out.append(whitespace if depth else f"[{whitespace}]")
                elif depth:
                    raise ValueError("\\S inside a bracket expression cannot be rewritten")
                else:
                    out.append(f"[^{whitespace}]")
                i += 2
                continue
            out.append(regex[i:i + 2])
            i += 2
            continue
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class TableFault:
    vocab: str  # a known vocabulary name (its ranks and pattern are the reference's)
    kind: str  # letters | numbers | marks | punctuation | symbols | whitespace
    table: str  # a Unicode version ("15.0.0"), or a WHITESPACE_VARIANTS name for whitespace
    reference_version: str = "16.0.0"  # the tables of the reference's regex engine

    @property
    def spec(self) -> str:
        return f"planted:{self.vocab}/{self.kind}@{self.table}"

    def changed(self) -> np.ndarray:
        """Code points whose membership of the rewritten class differs from the reference's."""
        if self.kind == "whitespace":
            return np.flatnonzero(whitespace_members(self.table) != whitespace_members(None))
        diff = np.zeros(ud.N_CP, dtype=bool)
        for name in KIND_CLASSES[self.kind]:
            diff |= class_members(name, self.table) != class_members(name, self.reference_version)
        return np.flatnonzero(diff)

    def rewritten(self, regex: str) -> str:
        if self.kind == "whitespace":
            return rewrite(regex, {}, _ranges(whitespace_members(self.table)))
        return rewrite(regex, {c: _ranges(class_members(c, self.table)) for c in KIND_CLASSES[self.kind]})


class PlantedTableEngine(Adapter):
    """The reference vocabulary's ranks and pattern, one class rewritten (see ``TableFault``)."""

    adapter_name = "planted"
    capabilities = Capabilities(special_tokens=True, segments=False, decode=True)

    def __init__(self, fault: TableFault):
        super().__init__(fault.vocab, {"kind": fault.kind, "table": fault.table}, spec=fault.spec)
        from verify.vocab.inspect import vocabulary_view

        self.fault = fault
        view = vocabulary_view(fault.vocab)
        self.view = view
        self.vocab_name, self.vocab_sha256 = view.name, view.sha256
        if view.kind in ("tiktoken", "tekken-json"):
            self._build_tiktoken(view)
        elif view.kind == "hf-json":
            self._build_hf()
        else:
            raise ValueError(f"no planted engine for a '{view.kind}' vocabulary")

    def _build_tiktoken(self, view) -> None:
        import tiktoken

        offset = 1000 if view.kind == "tekken-json" else 0  # Tekken ids follow its special tokens
        ranks = {tok: i - offset for i, tok in enumerate(view.tokens) if i >= offset and tok
                 and (view.kind == "tekken-json" or tok.decode("utf-8", "replace") not in view.special)}
        specials = {} if offset else dict(view.special)
        self._offset = offset
        self._encoding = tiktoken.Encoding(name=self.spec, pat_str=self.fault.rewritten(view.patterns[0].regex),
                                           mergeable_ranks=ranks, special_tokens=specials)
        self._hf = None

    def _build_hf(self) -> None:
        from tokenizers import Tokenizer

        from verify.vocab.resolver import resolve_vocab

        doc = json.loads(resolve_vocab(self.fault.vocab).path.read_text(encoding="utf-8"))
        doc["pre_tokenizer"] = self._rewrite_pre_tokenizer(doc["pre_tokenizer"])
        self._hf = Tokenizer.from_str(json.dumps(doc))
        self._offset = 0

    def _rewrite_pre_tokenizer(self, node: dict) -> dict:
        from verify.vocab.inspect import BYTE_LEVEL_REGEX

        kind = node.get("type")
        if kind == "Sequence":
            return {**node, "pretokenizers": [self._rewrite_pre_tokenizer(c) for c in node["pretokenizers"]]}
        if kind == "Split" and "Regex" in (node.get("pattern") or {}):
            return {**node, "pattern": {"Regex": self.fault.rewritten(node["pattern"]["Regex"])}}
        if kind == "ByteLevel" and node.get("use_regex", True):  # its built-in GPT-2 split, made explicit
            return {"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": self.fault.rewritten(BYTE_LEVEL_REGEX)},
                 "behavior": "Isolated", "invert": False},
                {**node, "use_regex": False}]}
        return node

    def encode_texts(self, texts, allow_special):
        if self._hf is not None:
            self._hf.encode_special_tokens = not allow_special
            return [np.asarray(e.ids, dtype=TOKEN_DTYPE)
                    for e in self._hf.encode_batch_fast(list(texts), add_special_tokens=False)]
        enc = self._encoding
        out = [enc.encode(t, allowed_special="all") if allow_special else enc.encode_ordinary(t) for t in texts]
        return [np.asarray(ids, dtype=TOKEN_DTYPE) + self._offset for ids in out]

    def token_bytes(self, ids):
        return [self.view.tokens[int(i)] if int(i) < len(self.view.tokens) else b"" for i in ids]


def planted_engine(fault: TableFault) -> PlantedTableEngine:
    return PlantedTableEngine(fault)
