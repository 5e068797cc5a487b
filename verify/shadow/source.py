"""Shadow files as shards: ``verify shadow FILE.jsonl|FILE.parquet ...``.

    shadow_source(values) -> Source       one ``ShadowShard`` (kind ``shadow``) per file
    ShadowShard.read()                    its records, in file order:
                                          ShadowRecord | BadRecord, then ShadowSession

Each value is a file, a directory (every ``.jsonl``/``.ndjson``/``.parquet`` file under
it, optionally ``.gz``/``.zst`` compressed, sorted) or a glob, local or an fsspec URL.
A line or row is parsed by ``verify.shadow.schema.parse_record``. Records without a
session are yielded as they are read; the turns of each session are kept until the
end of the file and yielded then as one ``ShadowSession`` (turns in order), so a
session's records must all be in one file (any order). A session must be whole from
turn 0: a repeated turn, and every turn after a missing one, is a bad record (its
transcript cannot be rebuilt), while the turns before the gap are still replayed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterator

from verify.corpora import files
from verify.corpora.shards import Shard
from verify.corpora.source import Source, expand_paths
from verify.errors import CorpusError, one_line
from verify.sample import BadRecord
from verify.shadow.schema import SCHEMA, ShadowRecord, ShadowSession, parse_record

PARQUET_BATCH_ROWS = 1024


@dataclass(frozen=True, kw_only=True)
class ShadowShard(Shard):
    """One shadow file; ``format`` ``jsonl`` or ``parquet``. Its id is its path (as every shard
    kind defined outside ``verify.corpora``: ``verify.corpora.shards.UnloadedShard``)."""

    kind = "shadow"
    path: str
    format: str | None = None

    @property
    def base_id(self) -> str:
        return self.path

    def read(self) -> Iterator[ShadowRecord | BadRecord | ShadowSession]:
        return read_shadow_shard(self)


def _format(path) -> str | None:
    suffix = files.base_suffix(path)
    if suffix in files.JSONL_SUFFIXES:
        return "jsonl"
    if suffix in files.PARQUET_SUFFIXES and not files.is_compressed(path):
        return "parquet"
    return None


def shadow_source(values: list[str]) -> Source:
    shards, listed = [], []
    for value in values:
        found = [p[0] if isinstance(p, tuple) else p for p in expand_paths(value)]
        usable = [p for p in found if _format(p)]
        if not usable:
            raise CorpusError(f"{value}: no shadow files (.jsonl, .ndjson, .parquet; {SCHEMA})")
        for path in usable:
            shards.append(ShadowShard(value, path=str(path), format=_format(path)))
            listed.append(str(path))
    return Source(", ".join(values), {"kind": "shadow", "schema": SCHEMA, "files": listed}, shards)


def read_shadow_shard(shard: ShadowShard) -> Iterator[ShadowRecord | BadRecord | ShadowSession]:
    path = shard.path
    rows = _parquet_rows(path) if shard.format == "parquet" else _jsonl_rows(path)
    sessions: dict[str, list[ShadowRecord]] = {}
    for record in rows:
        if isinstance(record, ShadowRecord) and record.session_id is not None:
            sessions.setdefault(record.session_id, []).append(record)
        else:
            yield record
    for session_id, turns in sessions.items():
        yield from _whole_session(session_id, turns)


def _whole_session(session_id: str, turns: list[ShadowRecord]) -> Iterator[ShadowSession | BadRecord]:
    turns = sorted(turns, key=lambda r: (r.turn, r.position))
    kept: list[ShadowRecord] = []
    for record in turns:
        if kept and record.turn == kept[-1].turn:
            yield BadRecord(record.position, f"session {session_id!r} records turn {record.turn} twice "
                                             f"(also at {kept[-1].position})")
        elif record.turn != len(kept):
            yield BadRecord(record.position, f"session {session_id!r} turn {record.turn}: turn {len(kept)} "
                                             "is not in this file, so its transcript cannot be rebuilt "
                                             "(sample and store sessions whole)")
        else:
            kept.append(record)
    if kept:
        yield ShadowSession(session_id, tuple(kept))


def _parsed(position: str, doc, raw) -> ShadowRecord | BadRecord:
    """``parse_record``, whose checks a value of an unexpected type cannot get past as a crash."""
    try:
        return parse_record(position, doc, raw)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        return BadRecord(position, one_line(f"not a shadow record ({type(exc).__name__}: {exc})"), raw)


def _jsonl_rows(path) -> Iterator[ShadowRecord | BadRecord]:
    position = f"{path}:1"
    try:
        with files.open_binary(path) as fh:
            for lineno, raw in enumerate(files.bounded_lines(fh), 1):
                position = f"{path}:{lineno}"
                if isinstance(raw, files.Overlong):
                    yield BadRecord(position, raw.reason)
                    continue
                if not raw.strip():
                    continue
                try:
                    doc = json.loads(raw)
                except UnicodeDecodeError as exc:
                    yield BadRecord(position, f"invalid UTF-8 at byte {exc.start} of the line", raw)
                    continue
                except json.JSONDecodeError as exc:
                    yield BadRecord(position, f"invalid JSON ({exc.msg}: column {exc.colno})", raw)
                    continue
                except RecursionError:
                    yield BadRecord(position, "JSON nested deeper than Python parses (its recursion limit)", raw)
                    continue
                yield _parsed(position, doc, raw)
    except Exception as exc:  # OSError, EOFError, zstandard's own errors: the rest is unreadable
        yield BadRecord(position, one_line(f"file unreadable from here on ({type(exc).__name__}: {exc})"))


def _parquet_rows(path) -> Iterator[ShadowRecord | BadRecord]:
    try:
        parquet = files.open_parquet(path)
    except Exception as exc:
        yield BadRecord(f"{path}:row0", one_line(f"not a readable Parquet file ({exc})"))
        return
    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for doc in batch.to_pylist():
                yield _parsed(f"{path}:row{row}", doc, None)
                row += 1
    except Exception as exc:  # corrupt data, or a remote read that failed mid-file
        yield BadRecord(f"{path}:row{row}", f"unreadable Parquet data from here on ({type(exc).__name__}: {exc})")
    finally:
        parquet.close()

