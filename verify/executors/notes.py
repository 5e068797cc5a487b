"""Merging engine run notes from several workers into one per engine.

Numbers add up (worker restarts, toktier's execution counts), lists are joined
without repeats (warnings), dictionaries merge key by key, and for anything else
the first worker's value stands.
"""

from __future__ import annotations

from typing import Any


def merge_value(a: Any, b: Any) -> Any:
    if isinstance(a, bool) or isinstance(b, bool):
        return a
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a + b
    if isinstance(a, list) and isinstance(b, list):
        return a + [x for x in b if x not in a]
    if isinstance(a, dict) and isinstance(b, dict):
        out = dict(a)
        for key, value in b.items():
            out[key] = merge_value(out[key], value) if key in out else value
        return out
    return a


def merge_notes(per_worker: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for notes in per_worker:
        merged = merge_value(merged, notes) if merged else dict(notes)
    return merged
