"""Agent traces: sessions that grow turn by turn, as the pipeline replays them.

    open_traces("sessions.jsonl", fmt="verify") -> Source      # shards of SessionTrace records
    open_traces("agent:7") -> Source                          # generated agent sessions

A ``SessionTrace`` is a session id and its turns; each ``Turn`` is what was appended
(typed segments: chat-template structure ``allow_special=True``, message contents
``False``) and, when a trace recorded them, the ids a production tokenizer gave the
transcript after it. Importers (``formats``) turn other logs into these; see
docs/traces.md for every format.
"""

from __future__ import annotations

from verify.session_trace import SessionTrace, Turn
from verify.corpora.traces.sources import TRACE_FORMATS, TRACE_KINDS, open_traces

__all__ = ["SessionTrace", "Turn", "TRACE_FORMATS", "TRACE_KINDS", "open_traces"]
