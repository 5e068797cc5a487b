"""Small views every report shares: limits, the verdict of a manifest, safe links and the
first difference of a finding or reproducer as a report shows it."""

from __future__ import annotations

from typing import Any

from verify.reports.visible import ELLIPSIS, escape_edges, reveal_invisible, visible, visible_edges  # noqa: F401
from verify.reports.visible import visible_input  # noqa: F401  (re-exported)

REPRODUCER_CHARS = 300  # a minimised reproducer, shown
ORIGINAL_CHARS = 120  # the start of an original input standing in for a reproducer not minimised
CONTEXT_CHARS = 40  # either side of a finding's first difference, in the findings table
CLUSTER_CONTEXT_CHARS = 24  # the same for a cluster's original (not minimised) input
MISSING = "—"
EMPTY_INPUT = '""  (the empty string)'
# hunts whose samples carry no characters of their own: their chars and tokens are not measured, not zero
UNMEASURED = {"replay-edits": "not counted: a sample is an edit script, its texts are in the findings"}
THROUGHPUT_FLAG = 0.25  # a check's throughput changed by more than this fraction since the baseline: flagged


def shown_input(segments: Any, limit: int = REPRODUCER_CHARS) -> str:
    """A reproducer (``[[text, allow_special], ...]``) on one visible line: a long repetitive
    text in its run-length form (``'1'×24998 + '\\x1c' + '1'×2``), spaces at either end and
    every invisible character as escapes, several segments each in brackets
    (``[special: ...]`` where special tokens are allowed); the empty input says so."""
    if not isinstance(segments, list) or not all(isinstance(s, (list, tuple)) and len(s) == 2 and isinstance(s[0], str)
                                                 for s in segments):
        return visible(str(segments), limit) if segments is not None else MISSING
    if not segments or all(not s[0] for s in segments):
        return EMPTY_INPUT
    if len(segments) == 1 and not segments[0][1]:
        return _one_text(segments[0][0], limit)
    parts, budget = [], limit
    for text, allow_special in segments:
        if budget <= 0:
            parts.append(ELLIPSIS)
            break
        parts.append(f"[{'special: ' if allow_special else ''}{_one_text(text, budget)}]")
        budget -= len(text)
    return " ".join(parts)


def _one_text(text: str, limit: int) -> str:
    from verify.run_length import compact, describe

    runs = compact(text) if len(text) > 64 else None
    if runs:
        return reveal_invisible(describe(runs, limit))
    return visible_edges(text, limit)


def session_view(session: dict[str, Any] | None, limit: int = REPRODUCER_CHARS) -> dict[str, Any] | None:
    """A session finding's where (session id, turn, how much came before) and, when triage
    shrank it, the minimised ``prefix`` and ``append`` -- the pair a stateful engine gets wrong."""
    if not isinstance(session, dict):
        return None
    update = session.get("update") if isinstance(session.get("update"), dict) else {}
    notes = update.get("notes")
    rules = notes.get("rules") if isinstance(notes, dict) else None
    shown_notes = (f"rules: {', '.join(map(str, rules))}" if rules else
                   ", ".join(f"{k}={v}" for k, v in notes.items()) if isinstance(notes, dict) else
                   str(notes) if notes else "")
    return {"id": visible(str(session.get("id", MISSING)), 120), "turn": session.get("turn", MISSING),
            "turns": session.get("turns", MISSING),
            "prefix_chars": session.get("prefix_chars", MISSING),
            "append": shown_input(session.get("append"), limit) if session.get("append") is not None else MISSING,
            "prefix": shown_input(session.get("prefix"), limit) if session.get("prefix") is not None else None,
            "replace_from": update.get("replace_from", MISSING) if update else MISSING,
            "notes": visible(shown_notes, 200), "stateless": bool(session.get("stateless"))}


def run_verdict(manifest: dict[str, Any]) -> str:
    """PASS when the run is complete and every sample was verified by every engine with
    no bad record; INCOMPLETE while shards are missing; FAIL otherwise (summary.md's rule)."""
    counts = manifest.get("counts") or {}
    complete = manifest.get("complete", True)
    ok = complete and counts.get("samples", 0) > 0 and counts.get("verified") == counts.get("samples") \
        and not counts.get("bad_records")
    return "PASS" if ok else "FAIL" if complete else "INCOMPLETE"


def safe_link(url: Any) -> str | None:
    """An http(s) URL that may become a link; anything else (javascript:, data:, relative) is shown as text."""
    if not isinstance(url, str):
        return None
    lowered = url.strip().lower()
    ok = lowered.startswith(("https://", "http://")) and not any(ord(c) < 0x21 or c in "\"'<>`" for c in url.strip())
    return url.strip() if ok else None


def token_at(window: dict | None, index: int | None) -> dict[str, str]:
    """The id and decoded piece at ``index`` of an ``expected``/``actual`` window."""
    if not window or index is None:
        return {"id": MISSING, "piece": MISSING}
    at = index - int(window.get("start") or 0)
    ids, pieces = window.get("ids") or [], window.get("pieces")
    tid = str(ids[at]) if 0 <= at < len(ids) else "(end)"
    # Pieces already spell undecodable bytes as \xNN (backslashreplace): keep their backslashes.
    # spaces at either end as \x20: a whitespace token is never an empty box
    piece = escape_edges(reveal_invisible(str(pieces[at]))) if pieces is not None and 0 <= at < len(pieces) \
        else MISSING
    return {"id": tid, "piece": piece}


def difference_view(*, token_index=None, byte_offset=None, expected=None, actual=None, error="", text="") -> dict:
    """What the reports show of a first difference: located (token index, byte offset,
    expected and actual id and piece), an ``error`` line, or a ``text`` line."""
    return {"token_index": token_index, "byte_offset": byte_offset, "expected": expected or token_at(None, None),
            "actual": actual or token_at(None, None), "error": error, "text": text}


def first_difference(block: dict[str, Any] | None) -> dict[str, Any] | None:
    """The first difference of a finding (or of its minimised block): located for ``ids``,
    the error for failures; None when nothing is located."""
    if not block:
        return None
    if block.get("error") and block.get("token_index") is None:
        error = block["error"]
        return difference_view(error=visible(f"{error.get('type', '?')}: {error.get('message', '')}", 200))
    index = block.get("token_index")
    if index is None:
        return None
    return difference_view(token_index=index, byte_offset=block.get("byte_offset"),
                           expected=token_at(block.get("expected"), index), actual=token_at(block.get("actual"), index))
