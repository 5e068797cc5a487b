"""The code points some engine or other counts as whitespace (``WHITESPACE_LIKE``): a fact
about Unicode and its implementations, read by the Unicode sweep (mismatches there are a
different *definition* of whitespace, not a table version) and by triage (a cause named
"whitespace definition")."""

from __future__ import annotations

import numpy as np

MAX_CP = 0x10FFFF

# Code points that some engine or other counts as whitespace: Unicode
# White_Space, Python's str.isspace (adds U+001C..U+001F), characters that were
# Zs in older Unicode versions (U+180E until 6.3, U+200B in 3.x), U+FEFF
# (JavaScript \s), U+0085 (NEL; not \s in ASCII-minded engines).
WHITESPACE_LIKE: tuple[tuple[int, int], ...] = (
    (0x0009, 0x000D), (0x001C, 0x001F), (0x0020, 0x0020), (0x0085, 0x0085), (0x00A0, 0x00A0),
    (0x1680, 0x1680), (0x180E, 0x180E), (0x2000, 0x200B), (0x2028, 0x2029), (0x202F, 0x202F),
    (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
)


def whitespace_like_mask() -> np.ndarray:
    mask = np.zeros(MAX_CP + 1, dtype=bool)
    for a, b in WHITESPACE_LIKE:
        mask[a:b + 1] = True
    return mask
