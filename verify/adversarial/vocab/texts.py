"""The reference's vocabulary as texts: every token's bytes, its added/special tokens,
and a text for every token (joined with neighbours where its bytes are not UTF-8).

    vocab = vocabulary_of("tiktoken:cl100k_base")
    texts = token_texts(vocab.tokens)   # id -> TokenText (None: no text contains those bytes)

The executor protocol has no call that lists a vocabulary, so ``vocabulary_of``
builds the adapter in this process and reads it (``engine_vocabulary``): an adapter
method ``vocabulary() -> list[bytes]`` (+ ``added_tokens() -> dict[str, int]``) when it
has one, else the tables of the tiktoken and tokenizers adapters, else ``token_bytes``
id by id until a long run of ids has no token.

A token whose bytes are not valid UTF-8 on its own (half a character) is completed
with the bytes of other tokens: its id-order neighbours first, then the nearest token
that supplies exactly the missing lead or continuation bytes, then a synthetic lead
or continuation byte; bytes no UTF-8 text can contain (``C0``, ``FF``, a run of four
continuation bytes) are ``None``, counted as unreachable.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

PROBE_MISSES = 4096  # the generic probe stops after this many consecutive ids without a token
PARTNER_TRIES = 8  # partner tokens tried on each side before a synthetic byte


@dataclass
class Vocabulary:
    """The tokens of one engine: ordinary ones by id, added/special ones by text."""

    spec: str
    size: int  # one past the largest id
    tokens: dict[int, bytes]  # ordinary tokens (added/special ones excluded)
    added: dict[str, int]  # added/special token text -> id
    special: set[str] = field(default_factory=set)  # the added tokens marked special (all, for tiktoken)
    how: str = ""  # how the vocabulary was read
    vocab_name: str | None = None  # a vocabulary this harness knows (its patterns give the contexts)

    def describe(self) -> dict[str, Any]:
        return {"size": self.size, "ordinary": len(self.tokens), "added": len(self.added),
                "special": len(self.special), "read_from": self.how}


def vocabulary_of(spec: str) -> Vocabulary:
    """``spec``'s vocabulary: read from its files when it names a vocabulary this harness
    knows (``verify.vocab.inspect``), else from its adapter built in this process."""
    from verify.engines import build_engine
    from verify.engines.registry import parse_spec

    parsed = parse_spec(spec)
    if parsed.adapter not in ("python", "subprocess", "http"):
        try:
            from verify.vocab.inspect import vocabulary_view

            view = vocabulary_view(parsed.target, parsed.options)
        except Exception:  # not a vocabulary file of ours (a hub id, a plugin target): ask the adapter
            view = None
        if view is not None:
            ids = set(view.special.values())
            tokens = {i: t for i, t in enumerate(view.tokens) if t and i not in ids}
            return Vocabulary(spec, len(view.tokens), tokens, dict(view.special), set(view.special),
                              f"{view.kind} file ({view.name})", parsed.target)
    engine = build_engine(spec)
    try:
        return engine_vocabulary(engine)
    finally:
        engine.close()


def engine_vocabulary(engine) -> Vocabulary:
    """The vocabulary of an adapter object (see the module docstring for the order asked)."""
    for obj in (engine, getattr(engine, "engine", None)):  # the python adapter wraps its plugin object
        listing = getattr(obj, "vocabulary", None)
        if callable(listing):
            added_of = getattr(obj, "added_tokens", None)
            added = dict(added_of()) if callable(added_of) else {}
            tokens = {i: bytes(b) for i, b in enumerate(listing()) if b and i not in set(added.values())}
            return Vocabulary(engine.spec, _size(tokens, added), tokens, added, set(added), "vocabulary()")
    encoding = getattr(engine, "encoding", None)
    if encoding is not None and hasattr(encoding, "_mergeable_ranks"):  # tiktoken
        added = dict(encoding._special_tokens)
        tokens = {rank: b for b, rank in encoding._mergeable_ranks.items()}
        return Vocabulary(engine.spec, encoding.n_vocab, tokens, added, set(added), "tiktoken ranks")
    tokenizer = getattr(engine, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "get_added_tokens_decoder"):  # HuggingFace tokenizers
        decoder = tokenizer.get_added_tokens_decoder()
        added = {t.content: i for i, t in decoder.items()}
        special = {t.content for t in decoder.values() if t.special}
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        ids = [i for i in range(size) if i not in decoder]
        tokens = {i: b for i, b in zip(ids, engine.token_bytes(ids)) if b}
        return Vocabulary(engine.spec, _size(tokens, added, size), tokens, added, special, "tokenizers vocabulary")
    return _probe(engine)


def _size(tokens: dict[int, bytes], added: dict[str, int], at_least: int = 0) -> int:
    return max([at_least, *(i + 1 for i in tokens), *(i + 1 for i in added.values())])


def _probe(engine) -> Vocabulary:
    """``token_bytes`` id by id, for adapters that can decode but cannot list their vocabulary."""
    if not engine.capabilities.decode:
        raise ValueError(f"{engine.spec}: cannot list its vocabulary (no vocabulary(), cannot decode)")
    tokens: dict[int, bytes] = {}
    i = misses = 0
    while misses < PROBE_MISSES:
        try:
            (b,) = engine.token_bytes([i])
        except Exception:
            b = b""
        if b:
            tokens[i], misses = b, 0
        else:
            misses += 1
        i += 1
    return Vocabulary(engine.spec, _size(tokens, {}), tokens, {}, set(), "token_bytes probe")


# --- a text for every token ----------------------------------------------------------------

@dataclass(frozen=True)
class TokenText:
    text: str
    joined: str = ""  # "" when the token is UTF-8 on its own, else how it was completed


def _is_cont(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def _lead_len(byte: int) -> int:
    """Length of the character a lead byte starts; 0 for continuation and never-valid bytes."""
    if byte < 0x80:
        return 1
    if 0xC2 <= byte <= 0xDF:
        return 2
    if 0xE0 <= byte <= 0xEF:
        return 3
    if 0xF0 <= byte <= 0xF4:
        return 4
    return 0


def _decodes(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def utf8_needs(b: bytes) -> tuple[int, int] | None:
    """``(k, t)``: ``b`` starts with ``k`` continuation bytes that need a lead before them and
    ends ``t`` continuation bytes short of a whole character; None when no bytes around it
    can make it UTF-8."""
    k = 0
    while k < len(b) and _is_cont(b[k]):
        k += 1
    if k > 3:
        return None
    t, cut = 0, len(b)
    for back in range(1, min(4, len(b) - k) + 1):
        byte = b[len(b) - back]
        if _is_cont(byte):
            continue
        n = _lead_len(byte)
        if n > back:
            t, cut = n - back, len(b) - back
        break
    return (k, t) if _decodes(b[k:cut]) else None


_SYNTHETIC_LEAD = {1: b"\xc2", 2: b"\xe1", 3: b"\xf1"}  # a lead valid before any k continuation bytes
_SYNTHETIC_CONT = (0x80, 0xA0, 0x90)  # one of these completes any lead (E0 needs A0+, ED and F4 need 80..)


def token_texts(tokens: dict[int, bytes]) -> dict[int, TokenText | None]:
    """A text containing each token's bytes, by id (see the module docstring)."""
    needs = {i: (0, 0) if _decodes(b) else utf8_needs(b) for i, b in tokens.items()}
    # Partners: tokens that are whole but for a missing tail of t bytes (prefix partners), or
    # for t continuation bytes at the start (suffix partners), by the t they supply.
    ends_short: dict[int, list[int]] = {}
    starts_short: dict[int, list[int]] = {}
    for i, need in sorted(needs.items()):
        if need and need[0] == 0 and need[1]:
            ends_short.setdefault(need[1], []).append(i)
        elif need and need[0] and need[1] == 0:
            starts_short.setdefault(need[0], []).append(i)
    out: dict[int, TokenText | None] = {}
    for i, b in tokens.items():
        need = needs[i]
        if need == (0, 0):
            out[i] = TokenText(b.decode("utf-8"))
        elif need is None:
            out[i] = None
        else:
            out[i] = _complete(i, b, need, tokens, ends_short, starts_short)
    return out


def _complete(i, b, need, tokens, ends_short, starts_short) -> TokenText | None:
    k, t = need
    prefixes = _partners(i, i - 1, tokens, ends_short.get(k, [])) if k else [(None, b"")]
    suffixes = _partners(i, i + 1, tokens, starts_short.get(t, [])) if t else [(None, b"")]
    for p_id, prefix in prefixes:
        for s_id, suffix in suffixes:
            if _decodes(prefix + b + suffix):
                how = " ".join(f"{side} {j}" for side, j in (("after", p_id), ("before", s_id)) if j is not None)
                return TokenText((prefix + b + suffix).decode("utf-8"), how)
    prefix = _SYNTHETIC_LEAD.get(k, b"") if k else b""
    for cont in _SYNTHETIC_CONT:
        text = prefix + b + bytes([cont]) * t
        if _decodes(text):
            return TokenText(text.decode("utf-8"), "synthetic bytes")
    return None


def _partners(i: int, neighbour: int, tokens: dict[int, bytes], supply: list[int]) -> list[tuple[int, bytes]]:
    """The id-order neighbour, then the tokens of ``supply`` nearest to ``i`` by id."""
    found = [neighbour] if neighbour in tokens else []
    at = bisect.bisect_left(supply, i)
    lo, hi = at - 1, at
    while len(found) < PARTNER_TRIES and (lo >= 0 or hi < len(supply)):
        if hi < len(supply) and (lo < 0 or supply[hi] - i <= i - supply[lo]):
            j, hi = supply[hi], hi + 1
        else:
            j, lo = supply[lo], lo - 1
        if j != i and j not in found:
            found.append(j)
    return [(j, tokens[j]) for j in found]
