"""Text from a corpus, shown so that a reader sees every character it holds.

    visible(text, limit=None) -> str       one line, every invisible character escaped
    visible_edges(text, limit=None) -> str the same, and spaces at either end as ``\\x20``
    visible_input(segments, limit) -> str  a sample's segments as one line

Control characters, bidi controls (U+202A-202E, U+2066-2069, U+200E/F, U+061C),
zero-width and other default-ignorable characters (U+200B-200D, U+2060, U+FEFF,
U+00AD, variation selectors, tag characters, Hangul fillers, ...), separators
other than U+0020, unassigned, private-use and surrogate code points become
Python-style escapes (``\\x1b``, ``\\u202e``, ``\\U000e0001``); a backslash
becomes ``\\\\`` so an escape is never ambiguous. The result can be pasted into a
Python string literal. Every report (HTML, Markdown) shows corpus text through
this one function; HTML and Markdown escaping come on top of it.
"""

from __future__ import annotations

import functools
import re
import unicodedata

ELLIPSIS = "…"

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties) and a few lookalike
# blanks: characters that render as nothing (or as a plain space) in most fonts.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFFB),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@functools.lru_cache(maxsize=65536)  # reports escape the same few hundred characters over and over
def is_invisible(ch: str) -> bool:
    """True for a character a reader could not see or tell apart from a plain space."""
    cp = ord(ch)
    if any(lo <= cp <= hi for lo, hi in _INVISIBLE_RANGES):
        return True
    return ch != " " and (not ch.isprintable() or unicodedata.category(ch) in ("Zs", "Zl", "Zp", "Co", "Cn", "Cs"))


def escape_char(ch: str) -> str:
    cp = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def visible(text: str, limit: int | None = None) -> str:
    """``text`` on one line with every invisible character escaped; cut after ``limit``
    source characters (an ellipsis and the full length say so)."""
    cut = limit is not None and len(text) > limit
    shown = text[:limit] if cut else text
    if shown.isascii() and shown.isprintable() and "\\" not in shown:  # nothing to escape: the common case
        return f"{shown}{ELLIPSIS} ({len(text):,} chars)" if cut else shown
    out = "".join(escape_char(ch) if ch in _NAMED or is_invisible(ch) else ch for ch in shown)
    return f"{out}{ELLIPSIS} ({len(text):,} chars)" if cut else out


def visible_edges(text: str, limit: int | None = None) -> str:
    """``visible`` with the spaces at either end escaped too (``\\x20``): a reproducer that is
    only spaces, or starts or ends with them, must not look like an empty box or like its
    neighbour without them. Still pastes back into a Python string literal."""
    return escape_edges(visible(text, limit))


def escape_edges(shown: str) -> str:
    """Spaces at either end of an already visible text as ``\\x20`` (a token's piece, a reproducer)."""
    core = shown.strip(" ")
    if core == shown:
        return shown
    lead = len(shown) - len(shown.lstrip(" "))
    trail = len(shown) - len(shown.rstrip(" ")) if core else 0
    return "\\x20" * lead + core + "\\x20" * trail


def visible_input(segments: list | None, limit: int | None = None) -> str:
    """A sample (``[[text, allow_special], ...]``) as one line: plain text alone, or
    each segment in brackets, ``[special: ...]`` where special tokens are allowed."""
    if not segments:
        return ""
    if len(segments) == 1 and not segments[0][1]:
        return visible(segments[0][0], limit)
    parts, budget = [], limit
    for text, allow_special in segments:
        if budget is not None and budget <= 0:
            parts.append(ELLIPSIS)
            break
        parts.append(f"[{'special: ' if allow_special else ''}{visible(text, budget)}]")
        if budget is not None:
            budget -= len(text)
    return " ".join(parts)


def reveal_invisible(text: str) -> str:
    """Escape the invisible characters of ``text`` and nothing else (backslashes stay):
    the last line of defence of the HTML report, idempotent on ``visible`` output."""
    return "".join(escape_char(ch) if is_invisible(ch) else ch for ch in text)


_UNIT = re.compile(r"\\(?:\\|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[nrt])|.", re.S)


def cut_visible(shown: str, limit: int) -> str:
    """Cut already-escaped text to at most ``limit`` characters (plus an ellipsis)
    without splitting an escape such as ``\\u202e`` in two."""
    if len(shown) <= limit:
        return shown
    out, used = [], 0
    for unit in _UNIT.findall(shown):
        if used + len(unit) > limit:
            break
        out.append(unit)
        used += len(unit)
    return "".join(out) + ELLIPSIS
