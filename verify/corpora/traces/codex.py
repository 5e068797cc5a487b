"""Codex CLI rollouts (``--format codex``): ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``
(``.jsonl.zst`` and ``.jsonl.gz`` too), one ``{"timestamp", "type", "payload"}`` object per line.

The transcript is built from ``response_item`` records only, one message (one turn)
per record, by ``payload.type``:

- ``message``: role ``payload.role`` (user, assistant, developer, system); ``content``
  a string or a list of items: ``input_text`` / ``output_text`` / ``text`` give their
  ``text``, ``input_image`` gives ``[image]``, any other item its JSON; joined with a
  newline;
- ``function_call``: an ``assistant`` message ``{"arguments": ..., "name": ...}`` (JSON,
  sorted keys; ``arguments`` is the string the model wrote);
- ``function_call_output``: a ``tool`` message, its ``output``: a string, or an object's
  ``content`` string, or a list of content items as above;
- ``reasoning``: an ``assistant`` message of the ``text`` of its ``summary`` items and
  then its ``content`` items, joined with a newline; nothing when only
  ``encrypted_content`` is there;
- any other ``payload.type`` is ignored, as are records of other types
  (``session_meta``, ``turn_context``, ``event_msg``, unknown ones).

A ``compacted`` record replaces the history: the session so far ends and a new one
starts with the items of ``payload.replacement_history`` (response items, converted as
above) or, when it has none, with one ``user`` message holding ``payload.message`` (the
summary; Codex itself rebuilds the history around it, which is not reproduced).
Session ids are ``FILE:LINE`` of the session's first line. A line that is no JSON
object, a ``response_item`` or ``compacted`` without an object ``payload``, or an item
of a known type whose fields break these rules is a bad record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from verify.corpora.traces.importing import Invalid, json_lines, json_text, require_text, session_or_bad
from verify.session_trace import SessionTrace
from verify.corpora.traces.templates import Message, shard_template
from verify.sample import BadRecord

TEXT_ITEMS = ("input_text", "output_text", "text", "summary_text", "reasoning_text")


def _items_text(items, where: str) -> str:
    if isinstance(items, str):
        return items
    if not isinstance(items, list):
        raise Invalid(f"{where} must be a string or a list of content items")
    pieces = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise Invalid(f"{where}[{i}] is not an object")
        kind = item.get("type")
        if kind in TEXT_ITEMS:
            pieces.append(require_text(item.get("text"), f"{where}[{i}].text"))
        elif kind == "input_image":
            pieces.append("[image]")
        else:
            pieces.append(json_text(item))
    return "\n".join(pieces)


def message_of(item) -> Message | None:
    """One response item as a message; None for a type that is not part of the transcript."""
    if not isinstance(item, dict):
        raise Invalid("a response item must be an object")
    kind = item.get("type")
    if kind == "message":
        return Message(require_text(item.get("role"), "message role"), _items_text(item.get("content"),
                                                                                    "message content"))
    if kind == "function_call":
        return Message("assistant", json_text({"name": require_text(item.get("name"), "function_call name"),
                                               "arguments": item.get("arguments")}))
    if kind == "function_call_output":
        output = item.get("output")
        if isinstance(output, dict):
            output = output.get("content")
        return Message("tool", _items_text(output, "function_call_output output"))
    if kind == "reasoning":
        summary = item.get("summary") or []
        content = item.get("content") or []
        text = "\n".join(t for t in (_items_text(summary, "reasoning summary"),
                                     _items_text(content, "reasoning content")) if t)
        return Message("assistant", text) if text else None
    return None


def read(path: Path, shard=None) -> Iterator[SessionTrace | BadRecord]:
    template = shard_template(shard)
    first_line: int | None = None
    messages: list[Message] = []

    def finish():
        if first_line is not None:
            yield from session_or_bad(template, f"{path}:{first_line}", messages, f"{path}:{first_line}")

    for line in json_lines(path):
        if isinstance(line, BadRecord):
            yield line
            continue
        lineno, position, doc, raw = line
        if doc.get("type") not in ("response_item", "compacted"):
            continue
        payload = doc.get("payload")
        try:
            if not isinstance(payload, dict):
                raise Invalid(f"a '{doc['type']}' record needs an object 'payload'")
            if doc["type"] == "compacted":
                history = payload.get("replacement_history")
                if history is not None and not isinstance(history, list):
                    raise Invalid("'replacement_history' must be a list of response items")
                fresh = [m for m in map(message_of, history) if m is not None] if history is not None \
                    else [Message("user", require_text(payload.get("message"), "compacted message"))]
                yield from finish()
                first_line, messages = lineno, fresh
                continue
            message = message_of(payload)
        except Invalid as exc:
            yield BadRecord(position, str(exc), raw[:200])
            continue
        if message is not None:
            if first_line is None:
                first_line = lineno
            messages.append(message)
    yield from finish()
