"""Every read has a size limit: the limits, in one place (docs/reliability.md lists them).

Past a limit, a corpus record is a ``bad-input`` finding with its position and the reader
goes on at the next record; an engine's answer is an ``error`` finding for that call; a
configuration file is one line and exit 2. Never a hang, never memory without bound.

The bounds of numbers a user gives -- on the command line or in a gate suite -- are checked
by one function each (``whole``, ``seconds``), so both refuse the same values in the same words.
"""

from __future__ import annotations

import math
from typing import Any

# --- sizes -----------------------------------------------------------------------------------
MAX_RECORD_BYTES = 32 << 20  # a corpus line (text or JSONL) or a column value; longer is bad-input
READ_CHUNK_BYTES = 1 << 20  # an over-long line is skipped this much at a time (memory stays flat)
MAX_SEGMENTS = 100_000  # segments of one JSONL record
MAX_ANSWER_LINE_BYTES = 256 << 20  # one line a ``subprocess:`` engine writes (a batch's ids as JSON)
MAX_HTTP_BODY_BYTES = 256 << 20  # one HTTP answer of an ``http:`` engine
MAX_GIVEN_JSON_BYTES = 64 << 20  # a JSON file named on the command line (a certificate, a premise's manifest)
# JSON and TOML nesting: Python's parsers recurse; a document nested deeper than the
# interpreter's recursion limit (about 1,000 levels) is refused as what it is, never a crash.

# --- numbers a user gives ----------------------------------------------------------------------
MAX_SECONDS = 10**6  # every time option's ceiling, about 11 days (poll()'s milliseconds overflow at 24.8 days)
MAX_COUNT = 10**9  # counts without a tighter bound of their own
MAX_SEED = 2**64 - 1


def whole_problem(value: Any, low: int, high: int = MAX_COUNT) -> str | None:
    """Why ``value`` is not a whole number from ``low`` to ``high`` (None when it is)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be a whole number from {low} to {high}, got {value!r}"
    if not low <= value <= high:
        return f"must be from {low} to {high}, got {value}"
    return None


def seconds_problem(value: Any, zero_ok: bool = False, high: float = MAX_SECONDS) -> str | None:
    """Why ``value`` is not a finite number of seconds above 0 (or 0 with ``zero_ok``) up to ``high``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and \
        (value >= 0 if zero_ok else value > 0) and value <= high
    if ok:
        return None
    return (f"must be a number of seconds {'of at least' if zero_ok else 'above'} 0 and at most {high:g}, "
            f"got {value!r}")
