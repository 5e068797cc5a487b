"""ShareGPT datasets (``--format sharegpt``): one conversation per record,
``{"id": ..., "conversations": [{"from": "human", "value": "..."}, ...]}``, in JSONL,
JSON or Parquet (``verify.corpora.traces.chat_records``).

Each message is one turn (call K of a chat is the first 2K-1 turns), rendered by the
shard's chat template. ``from`` maps to a role: human/user -> user; gpt, chatgpt, bard,
bing, model, assistant, function_call -> assistant; system -> system; tool, function,
observation -> tool; any other value is passed on as the role. The session id is the
record's ``id`` (string or integer), else its position. A record without a
``conversations`` list of ``{from: string, value: string}`` objects is a bad record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from verify.corpora.traces.chat_records import read_sessions
from verify.corpora.traces.importing import Invalid, require_text
from verify.session_trace import SessionTrace
from verify.corpora.traces.templates import Message
from verify.sample import BadRecord

ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant", "bard": "assistant",
         "bing": "assistant", "model": "assistant", "assistant": "assistant", "function_call": "assistant",
         "system": "system", "tool": "tool", "function": "tool", "observation": "tool"}


def messages_of(record: dict) -> list[Message]:
    conversation = record.get("conversations")
    if not isinstance(conversation, list) or not conversation:
        raise Invalid("needs 'conversations': a non-empty list of {from, value}")
    messages = []
    for i, item in enumerate(conversation):
        if not isinstance(item, dict):
            raise Invalid(f"conversations[{i}] is not an object")
        speaker = require_text(item.get("from"), f"conversations[{i}].from")
        messages.append(Message(ROLES.get(speaker, speaker), require_text(item.get("value"),
                                                                          f"conversations[{i}].value")))
    return messages


def read(path: Path, shard=None) -> Iterator[SessionTrace | BadRecord]:
    return read_sessions(path, shard, messages_of)
