"""The reference's vocabulary as texts: every token's bytes, its added/special tokens,
and a text for every token (joined with neighbours where its bytes are not UTF-8).

    vocab = vocabulary_of(parse_spec("tiktoken:cl100k_base"))
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
from dataclasses import dataclass

from verify.engines.vocabulary import PROBE_MISSES, Vocabulary, engine_vocabulary, vocabulary_of

PARTNER_TRIES = 8  # partner tokens tried on each side before a synthetic byte

__all__ = ["PROBE_MISSES", "TokenText", "Vocabulary", "engine_vocabulary", "token_texts", "vocabulary_of"]


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
