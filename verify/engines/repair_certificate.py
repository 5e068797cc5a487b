"""The repair engine's settings and its stable-boundary certificate (the TokTier paper, sec. 3.3).

A window re-encode starts at byte ``w`` of the last segment, at a boundary between two
of its old tokens. Its *matched run* is the longest run of tokens at the start of the
re-encode equal to the old tokens at the same byte offsets (same id, same start, same
end). The splice (old ids before the run's end, the re-encode after it) is accepted
when the run passes every rule the settings keep:

``match``  at least ``min_match`` tokens in the run (default 2);
``cover``  the run covers more bytes than ``cover`` (default: the vocabulary's longest
           token, added and special tokens included);
``sync``   a *synchronising boundary* inside the run: a byte offset ``p`` that ends a
           token of the run other than its last one, in an ``allow_special=False``
           segment, with an ASCII letter or digit (``[A-Za-z0-9]``) before it and an ASCII
           whitespace byte (space, tab, ``\\r``, ``\\n``) after it.

Why ``sync`` holds (docs/repair.md has the argument in full): no pre-token of a
GPT-style pattern (gpt2/p50k, cl100k, o200k, Llama 3, Qwen 2, DeepSeek) contains a
letter or digit followed by whitespace, so every left-to-right scan that passes ``p``
-- the scan of the old text, of the new text and of the window -- has a match boundary
there, and what any scan produces after ``p`` depends only on the text after ``p``.
The old ids before ``p`` therefore stay right for the new text, and the window's ids
after ``p`` are the from-scratch ids. ``cover`` protects that argument from a token
that spans the run from before the window (an added token matched before
pre-tokenization can contain a space); ``match`` is implied by either other rule
(a boundary strictly inside a run needs two tokens; one token never covers more than
the longest token), so dropping it alone cannot make a splice unsafe.

Pure functions over arrays: ``RepairSession`` does the encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from verify.errors import ConfigError

SYNC_LEFT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
SYNC_RIGHT = frozenset(b" \t\r\n")

SCHEMES = ("certificate", "margin")
OPTION_NAMES = ("scheme", "window", "widen", "min_match", "cover", "sync", "fallback", "margin")


@dataclass(frozen=True)
class RepairSettings:
    """``repair:INNER?scheme=&window=&widen=&min_match=&cover=&sync=&fallback=&margin=``."""

    scheme: str = "certificate"  # or "margin": re-encode the last ``margin`` bytes, no certificate
    window: int = 512  # bytes of old text the first window re-encodes
    widen: int = 5  # times the window doubles after an uncertified try
    min_match: int = 2
    cover: int | None = None  # None: the vocabulary's longest token; 0: no coverage rule
    sync: bool = True  # sync=class (True) or sync=none
    fallback: bool = True  # False: accept the last uncertified splice instead of a full encode
    margin: int = 64

    @classmethod
    def from_options(cls, options: dict[str, Any], spec: str) -> "RepairSettings":
        def positive(name: str, default: int, least: int = 1) -> int:
            value = options.get(name, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"{spec}: option {name} must be an integer >= {least}, got {value!r}")
            return value

        scheme = options.get("scheme", "certificate")
        if scheme not in SCHEMES:
            raise ConfigError(f"{spec}: scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")
        cover = options.get("cover", "longest")
        if cover != "longest" and (isinstance(cover, bool) or not isinstance(cover, int) or cover < 0):
            raise ConfigError(f"{spec}: cover must be 'longest' or a number of bytes >= 0, got {cover!r}")
        sync = options.get("sync", "class")
        if sync not in ("class", "none"):
            raise ConfigError(f"{spec}: sync must be 'class' or 'none', got {sync!r}")
        fallback = options.get("fallback", True)
        if not isinstance(fallback, bool):
            raise ConfigError(f"{spec}: fallback must be true or false, got {fallback!r}")
        return cls(scheme=scheme, window=positive("window", 512), widen=positive("widen", 5, 0),
                   min_match=positive("min_match", 2), cover=None if cover == "longest" else cover,
                   sync=sync == "class", fallback=fallback, margin=positive("margin", 64))

    def as_options(self) -> dict[str, Any]:
        if self.scheme == "margin":
            return {"scheme": "margin", "margin": self.margin}
        return {"scheme": "certificate", "window": self.window, "widen": self.widen, "min_match": self.min_match,
                "cover": "longest" if self.cover is None else self.cover, "sync": "class" if self.sync else "none",
                "fallback": self.fallback}

    def dropped(self) -> list[str]:
        """The certificate rules (or safety nets) this variant drops or weakens."""
        if self.scheme == "margin":
            return ["certificate"]
        out = []
        if self.min_match < 2:
            out.append("match")
        if self.cover == 0:
            out.append("cover")
        if not self.sync:
            out.append("sync")
        if not self.fallback:
            out.append("fallback")
        return out


@dataclass(frozen=True)
class Certificate:
    matched: int  # tokens in the matched run
    covered: int  # bytes the run covers
    sync_at: int | None  # the synchronising boundary's byte offset in the segment, if one was needed and found
    passed: tuple[str, ...]
    failed: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.failed


def matched_run(old_ids: np.ndarray, old_ends: np.ndarray, first: int, start: int,
                window_ids: np.ndarray, window_ends: np.ndarray) -> int:
    """How many tokens at the start of the window re-encode (which starts at byte ``start``,
    the end of old token ``first - 1``) equal the old tokens from ``first`` on, byte offsets
    included. ``*_ends`` are cumulative byte ends: old ones absolute, window ones relative."""
    n = min(window_ids.size, old_ids.size - first)
    if n <= 0:
        return 0
    same = (window_ids[:n] == old_ids[first:first + n]) & (window_ends[:n] + start == old_ends[first:first + n])
    return n if bool(same.all()) else int(np.argmin(same))


def sync_boundary(text: bytes, start: int, window_ends: np.ndarray, matched: int) -> int | None:
    """The first synchronising boundary strictly inside the matched run, or None."""
    for i in range(matched - 1):
        p = start + int(window_ends[i])
        if text[p - 1] in SYNC_LEFT and text[p] in SYNC_RIGHT:
            return p
    return None


def certify(settings: RepairSettings, longest: int, *, text: bytes, plain: bool, start: int,
            old_ids: np.ndarray, old_ends: np.ndarray, first: int,
            window_ids: np.ndarray, window_ends: np.ndarray) -> Certificate:
    """Check the rules the settings keep on the window re-encode starting at byte ``start``
    of the last segment (``text``: its old bytes; ``plain``: an allow_special=False segment)."""
    m = matched_run(old_ids, old_ends, first, start, window_ids, window_ends)
    covered = int(window_ends[m - 1]) if m else 0
    passed: list[str] = []
    failed: list[str] = []
    (passed if m >= settings.min_match else failed).append("match")
    bound = longest if settings.cover is None else settings.cover
    if bound:
        (passed if covered > bound else failed).append("cover")
    sync_at = None
    if settings.sync:
        sync_at = sync_boundary(text, start, window_ends, m) if plain else None
        (passed if sync_at is not None else failed).append("sync")
    return Certificate(m, covered, sync_at, tuple(passed), tuple(failed))
