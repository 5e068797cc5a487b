"""Length-only traces in the TraceLab shape (``--format tracelab``): one JSON object per
LLM round, the sizes of what was appended but not the text, filled here with generated
agent-like text of those sizes (``verify.corpora.traces.agent_text``).

Fields read (TraceLab's normalized round rows; everything else is ignored):

- ``session_id`` (string, required) and ``round_index`` (integer >= 0, required);
- what the round appended before the model ran, the first that is present:
  ``current_user_message_chars`` and/or ``current_tool_result_chars`` (characters:
  a ``tool`` message of the tool results, then a ``user`` message), else
  ``current_input_chars`` (characters: one ``user`` message), else
  ``newly_append_tokens`` (tokens: one ``user`` message of ``CHARS_PER_TOKEN``
  characters per token);
- what the model wrote: ``output_tokens`` (tokens, ``CHARS_PER_TOKEN`` characters each)
  plus, for each of ``tools[]``, its ``input_chars`` (characters of a tool call): one
  ``assistant`` message.

Each message is one turn, rendered by the shard's chat template; a message of size 0
is left out. A round must give at least one size. Rounds are grouped by
``session_id`` (sessions in order of first appearance, rounds by ``round_index``, then
file order), so the file need not be sorted. The text of a message depends only on
``(session_id, round_index, part)`` (``random.Random`` seeded with that string), so
the same trace always gives the same transcript. Session ids are ``tracelab:SESSION_ID``.
A line that is no JSON object, or a round that breaks these rules, is a bad record.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Iterator

from verify.corpora.traces.agent_text import AgentText
from verify.corpora.traces.importing import Invalid, json_lines, session_or_bad
from verify.session_trace import SessionTrace
from verify.corpora.traces.templates import Message, shard_template
from verify.sample import BadRecord

CHARS_PER_TOKEN = 4
TEXT_SEED = "tracelab/1"  # bump when the filled text for a given trace changes
PART_KINDS = {"tool": ("tool", "log", "code"), "user": ("prose", "code", "json"), "assistant": ("prose", "code")}


def _size(doc: dict, key: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid(f"'{key}' must be a non-negative integer")
    return value


def round_sizes(doc: dict) -> list[tuple[str, int]]:
    """The round's messages as (role, characters), in transcript order."""
    if not isinstance(doc.get("session_id"), str) or not doc["session_id"]:
        raise Invalid("needs 'session_id' (a non-empty string)")
    if _size(doc, "round_index") is None:
        raise Invalid("needs 'round_index' (a non-negative integer)")
    user, tool = _size(doc, "current_user_message_chars"), _size(doc, "current_tool_result_chars")
    parts: list[tuple[str, int]] = []
    if user is not None or tool is not None:
        parts += [("tool", tool or 0), ("user", user or 0)]
    elif (chars := _size(doc, "current_input_chars")) is not None:
        parts.append(("user", chars))
    elif (tokens := _size(doc, "newly_append_tokens")) is not None:
        parts.append(("user", tokens * CHARS_PER_TOKEN))
    output, tools = _size(doc, "output_tokens"), doc.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise Invalid("'tools' must be a list of objects")
    tool_calls = [_size(t, "input_chars") or 0 for t in tools or []]
    if output is not None or tool_calls:
        parts.append(("assistant", (output or 0) * CHARS_PER_TOKEN + sum(tool_calls)))
    if not parts:
        raise Invalid("gives no size (current_*_chars, newly_append_tokens, output_tokens or tools[].input_chars)")
    return parts


def fill_text(session_id: str, round_index: int, part: int, role: str, chars: int) -> str:
    rng = random.Random(f"{TEXT_SEED}:{session_id}:{round_index}:{part}")
    return AgentText(rng).fill(rng.choice(PART_KINDS.get(role, ("prose",))), chars)


def read(path: Path, shard=None) -> Iterator[SessionTrace | BadRecord]:
    template = shard_template(shard)
    sessions: dict[str, list[tuple[int, int, list[tuple[str, int]]]]] = {}
    first_line: dict[str, int] = {}
    for line in json_lines(path):
        if isinstance(line, BadRecord):
            yield line
            continue
        lineno, position, doc, raw = line
        try:
            parts = round_sizes(doc)
        except Invalid as exc:
            yield BadRecord(position, str(exc), raw[:200])
            continue
        sid = doc["session_id"]
        first_line.setdefault(sid, lineno)
        sessions.setdefault(sid, []).append((doc["round_index"], lineno, parts))
    for sid, rounds in sessions.items():
        messages = [Message(role, fill_text(sid, round_index, i, role, chars))
                    for round_index, _, parts in sorted(rounds)
                    for i, (role, chars) in enumerate(parts) if chars > 0]
        yield from session_or_bad(template, f"tracelab:{sid}", messages, f"{path}:{first_line[sid]}")
