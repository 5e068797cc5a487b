"""OpenAI-messages datasets (``--format openai``): one conversation per record,
``{"id": ..., "messages": [{"role": "user", "content": "..."}, ...]}``, in JSONL, JSON
or Parquet (``verify.corpora.traces.chat_records``).

Each message is one turn (call K of a chat is the first 2K-1 turns), rendered by the
shard's chat template with its ``role`` as given. ``content`` is a string, null, or a
list of parts: ``{"type": "text", "text": ...}`` gives its text, any other part its
JSON (sorted keys), parts joined with a newline; each of an assistant's
``tool_calls`` adds a line ``{"arguments": ..., "name": ...}`` (JSON of its
``function``). A record without a ``messages`` list of objects with a string
``role`` is a bad record, as is content of another type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from verify.corpora.traces.chat_records import read_sessions
from verify.corpora.traces.importing import Invalid, json_text, require_text
from verify.session_trace import SessionTrace
from verify.corpora.traces.templates import Message
from verify.sample import BadRecord


def _part(part, where: str) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        raise Invalid(f"{where} is neither a string nor an object")
    if part.get("type") == "text":
        return require_text(part.get("text"), f"{where}.text")
    return json_text(part)


def content_text(message: dict, where: str) -> str:
    content = message.get("content")
    if content is None:
        pieces = []
    elif isinstance(content, str):
        pieces = [content]
    elif isinstance(content, list):
        pieces = [_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)]
    else:
        raise Invalid(f"{where}.content must be a string, null or a list of parts")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise Invalid(f"{where}.tool_calls must be a list")
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise Invalid(f"{where}.tool_calls[{i}] has no 'function' object")
        pieces.append(json_text({"name": function.get("name"), "arguments": function.get("arguments")}))
    return "\n".join(pieces)


def messages_of(record: dict) -> list[Message]:
    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Invalid("needs 'messages': a non-empty list of {role, content}")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise Invalid(f"messages[{i}] is not an object")
        out.append(Message(require_text(message.get("role"), f"messages[{i}].role"),
                           content_text(message, f"messages[{i}]")))
    return out


def read(path: Path, shard=None) -> Iterator[SessionTrace | BadRecord]:
    return read_sessions(path, shard, messages_of)
