"""Exact comparison of token-ID arrays and location of the first difference."""

from __future__ import annotations

import numpy as np


def first_difference(expected: np.ndarray, actual: np.ndarray) -> int | None:
    """Index of the first differing token, ``None`` when the arrays are identical.

    When one array is a prefix of the other the index is the shorter length."""
    if expected.shape == actual.shape and np.array_equal(expected, actual):
        return None
    n = min(expected.size, actual.size)
    differing = np.flatnonzero(expected[:n] != actual[:n])
    return int(differing[0]) if differing.size else n


def token_byte_offsets(pieces: "list[bytes]") -> np.ndarray:
    """Start byte of each token, plus one trailing entry for the total length. Pieces that know
    their lengths as an array (``verify.comparison.TokenPieces``) are not walked one by one."""
    lengths = getattr(pieces, "lengths", None)
    if lengths is None:
        lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    return np.concatenate(([0], np.cumsum(lengths)))


def char_offset(text_bytes: bytes, byte_offset: int) -> int:
    """Index of the character that contains ``byte_offset`` (UTF-8 lead bytes before it)."""
    head = np.frombuffer(text_bytes[:byte_offset], dtype=np.uint8)
    index = int(np.count_nonzero((head & 0xC0) != 0x80))
    inside = byte_offset < len(text_bytes) and (text_bytes[byte_offset] & 0xC0) == 0x80
    return index - 1 if inside else index
