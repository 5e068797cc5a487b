"""``verify shadow --redact``: what of a production input may be kept under OUT.

Only hashes, lengths and a short *window* around the first difference: at most
``CONTEXT`` characters either side of it and never more than half of the input's
characters; token windows (``expected``/``actual``) keep at most ``TOKENS`` ids from the
first difference on and never more than half of the ids, with their pieces only when
those fit in the character window (ids and pieces spell text too). A minimised
reproducer is kept when it is at most ``MAX_REPRODUCER`` characters and smaller than
the input it came from, else it is cut to its own window. Error messages have the
input's text taken out and are shortened. ``text_sha256`` (SHA-256 of the input's
UTF-8 text, segments joined) lets an engineer find the request in production's logs.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any, Sequence

from verify.sample import Segment

CONTEXT = 32
TOKENS = 4
MAX_REPRODUCER = 2 * CONTEXT
MAX_MESSAGE = 200
REDACTED = "<redacted>"


def text_sha256(segments: Sequence[Segment]) -> str:
    return hashlib.sha256("".join(s.text for s in segments).encode("utf-8")).hexdigest()


def char_window(segments: Sequence[Segment], char_offset: int | None) -> dict[str, Any] | None:
    """The segments clipped to the window around ``char_offset`` (None when not located)."""
    if char_offset is None:
        return None
    total = sum(len(s.text) for s in segments)
    width = min(2 * CONTEXT, total // 2)
    at = max(0, min(int(char_offset), total))
    before = min(at, CONTEXT, width // 2)
    after = min(total - at, CONTEXT, width - before)
    before = min(at, CONTEXT, width - after)  # a window cut short after the offset extends before it
    lo, hi = at - before, at + after
    clipped, pos = [], 0
    for seg in segments:
        a, b = max(lo, pos), min(hi, pos + len(seg.text))
        if a < b:
            clipped.append([seg.text[a - pos:b - pos], seg.allow_special])
        pos += len(seg.text)
    return {"start": lo, "first_difference": at - lo, "chars": hi - lo, "segments": clipped}


def _window_text(window: dict[str, Any] | None) -> str:
    return "".join(t for t, _ in window["segments"]) if window else ""


def _token_window(window: Any, token_index: int | None, total: int, char_budget: int) -> Any:
    if not isinstance(window, dict) or token_index is None:
        return None
    start, ids = int(window.get("start", 0)), list(window.get("ids", []))
    keep = min(TOKENS, total // 2)
    lo = max(0, token_index - start)
    out: dict[str, Any] = {"start": start + lo, "ids": ids[lo:lo + keep]}
    pieces = window.get("pieces")
    if pieces is not None:
        kept = pieces[lo:lo + keep]
        if sum(len(p) for p in kept) <= char_budget:
            out["pieces"] = kept
    return out


def scrub(message: str | None, segments: Sequence[Segment]) -> str | None:
    """An error message without the input's text (each segment, and the whole), shortened."""
    if message is None:
        return None
    whole = "".join(s.text for s in segments)
    for text in sorted({whole, *(s.text for s in segments)}, key=len, reverse=True):
        if len(text) >= 4:
            message = message.replace(text, REDACTED)
    return message[:MAX_MESSAGE]


def _hash_of(segments_or_text) -> dict[str, Any]:
    if isinstance(segments_or_text, str):
        segments_or_text = [Segment(segments_or_text, False)]
    segs = [s if isinstance(s, Segment) else Segment(s[0], bool(s[1])) for s in segments_or_text]
    return {"chars": sum(len(s.text) for s in segs), "text_sha256": text_sha256(segs)}


def redact_record(record: dict[str, Any], segments: Sequence[Segment] | None) -> dict[str, Any]:
    """A finding record with the input reduced to its hash and window (``segments``: its input)."""
    out = copy.deepcopy(record)
    if out.get("raw") is not None:  # a bad record's first bytes
        raw = out["raw"]
        out["raw"] = None
        out["raw_redacted"] = {"chars": len(raw), "sha256": hashlib.sha256(raw.encode("utf-8", "replace")).hexdigest()}
    if isinstance(out.get("error"), dict):
        out["error"]["message"] = scrub(out["error"].get("message"), segments or ())
    if segments is None:
        return out
    out.pop("input_file", None)
    out["input"] = None
    window = char_window(segments, out.get("char_offset"))
    out["input_redacted"] = {**_hash_of(segments), "window": window}
    if window is not None and "context" in out:
        text, cut = _window_text(window), window["first_difference"]
        out["context"] = {"before": text[:cut], "after": text[cut:]}
    else:
        out.pop("context", None)
    budget = window["chars"] if window else 0
    for side, length in (("expected", "expected_len"), ("actual", "actual_len")):
        if side in out:
            trimmed = _token_window(out[side], out.get("token_index"), int(out.get(length) or 0), budget)
            if trimmed is None:
                out.pop(side)
            else:
                out[side] = trimmed
    session = out.get("session")
    if isinstance(session, dict) and session.get("append") is not None:
        session["append_redacted"] = _hash_of(session["append"])
        session["append"] = None
    shadow = out.get("shadow")
    if isinstance(shadow, dict):
        if isinstance(shadow.get("reference"), dict):
            shadow["reference"].pop("ids", None)  # all of the input's ids spell all of its text
        replay = shadow.get("replay") or {}
        if isinstance(replay.get("error"), dict):
            replay["error"]["message"] = scrub(replay["error"].get("message"), segments)
    return out


def redact_minimized(block: dict[str, Any] | None, initial_chars: int) -> dict[str, Any] | None:
    """A triage ``minimized`` block, kept whole when it is a short reproducer, else cut to its window."""
    if block is None:
        return None
    segments = [Segment(t, a) for t, a in block["input"]]
    chars = sum(len(s.text) for s in segments)
    if chars <= MAX_REPRODUCER and chars < initial_chars:
        return block
    out = copy.deepcopy(block)
    window = char_window(segments, block.get("char_offset"))
    out["input"] = window["segments"] if window else []
    out["input_redacted"] = {**_hash_of(segments), "window": window}
    budget = window["chars"] if window else 0
    for side in ("expected", "actual"):
        if side in out:
            out[side] = _token_window(out[side], out.get("token_index"), 2 * TOKENS, budget)
    if isinstance(out.get("error"), dict):
        out["error"]["message"] = scrub(out["error"].get("message"), segments)
    return out
