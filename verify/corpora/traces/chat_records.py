"""Records of a chat dataset file, for the ShareGPT and OpenAI-messages importers.

    for item in chat_records(path):   # (position, record dict) or BadRecord
        ...
    read_sessions(path, shard, messages_of)   # one session per record, rendered by the shard's template

``.jsonl`` (optionally ``.gz``/``.zst``): one JSON object per line, position
``file:LINE``; ``.json``: one array of objects (or one object), position
``file:itemN``; ``.parquet``: rows read in record batches, position ``file:rowN``. A
line or row that is no JSON object is a ``BadRecord``, never dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

from verify.corpora.files import base_suffix, open_binary
from verify.corpora.traces.importing import Invalid, json_lines, session_or_bad
from verify.corpora.traces.templates import Message, shard_template
from verify.sample import BadRecord

PARQUET_BATCH_ROWS = 256


def chat_records(path: Path) -> Iterator[tuple[str, dict] | BadRecord]:
    suffix = base_suffix(path)
    if suffix == ".parquet":
        yield from _parquet(path)
    elif suffix == ".json":
        yield from _json(path)
    else:
        yield from _jsonl(path)


def _jsonl(path: Path) -> Iterator[tuple[str, dict] | BadRecord]:
    for line in json_lines(path):
        yield line if isinstance(line, BadRecord) else (line.position, line.doc)


def _json(path: Path) -> Iterator[tuple[str, dict] | BadRecord]:
    try:
        with open_binary(path) as fh:
            doc = json.loads(fh.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        yield BadRecord(str(path), f"invalid JSON ({exc})")
        return
    items = doc if isinstance(doc, list) else [doc]
    for i, item in enumerate(items):
        position = f"{path}:item{i}"
        yield (position, item) if isinstance(item, dict) else BadRecord(position, "not a JSON object")


def _parquet(path: Path) -> Iterator[tuple[str, dict] | BadRecord]:
    import pyarrow
    import pyarrow.parquet as pq

    row = 0
    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for record in batch.to_pylist():
                yield f"{path}:row{row}", record
                row += 1
    except (pyarrow.ArrowException, OSError) as exc:
        yield BadRecord(f"{path}:row{row}", f"unreadable Parquet ({exc})")


def record_id(position: str, record: dict) -> str:
    """The record's ``id`` field (a string or integer) when it has one, else its position."""
    value = record.get("id")
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "" else position


def read_sessions(path: Path, shard, messages_of: Callable[[dict], list[Message]]) -> Iterator:
    """One session per record: ``messages_of(record)`` (raising ``Invalid`` for a bad one)
    rendered by the shard's chat template, the record's id as the session id."""
    template = shard_template(shard)
    for item in chat_records(path):
        if isinstance(item, BadRecord):
            yield item
            continue
        position, record = item
        try:
            messages = messages_of(record)
        except Invalid as exc:
            yield BadRecord(position, str(exc))
            continue
        yield from session_or_bad(template, record_id(position, record), messages, position)
