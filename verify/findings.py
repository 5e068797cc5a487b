"""Findings: the divergence record (schema ``verify.divergence/2``, docs/schema.md) and its writer.

A record always carries the input that causes it: inline when it is at most
``INLINE_INPUT_LIMIT`` characters, otherwise in ``OUT/inputs/<input_key>.json``
referenced by ``input_file`` -- or, for a long input that is mostly repetition, as
``input_runs`` (``[[[[unit, count], ...], allow_special], ...]``, ``verify.run_length``), which
rebuilds it exactly and is what reports show (``'1'×24998 + '\x1c' + '1'×2``). Records are written once, by the stage that found
them; triage writes its results beside them (``triage.jsonl``), never into them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from typing_extensions import NotRequired, TypedDict

from verify import jsonl
from verify.token_diff import char_offset, first_difference, token_byte_offsets
from verify.keys import KEYS_VERSION, finding_key, input_key
from verify.outcome import FAILURE_KINDS, ErrorInfo, Failure, FindingKind
from verify.sample import Sample
from verify import atomic

SCHEMA = "verify.divergence/2"
INLINE_INPUT_LIMIT = 64 * 1024
WINDOW_BEFORE, WINDOW_AFTER = 4, 8
CONTEXT_CHARS = 40
BAD_INPUT = FindingKind.BAD_INPUT.value

KINDS = (FindingKind.IDS.value,) + FAILURE_KINDS + (BAD_INPUT,)

__all__ = ["Failure", "Finding", "FindingWriter", "SCHEMA", "KINDS", "BAD_INPUT", "describe_divergence",
           "describe_failure", "bad_input_record", "read_findings", "INLINE_INPUT_LIMIT", "DivergenceRecord",
           "Window", "Context", "ErrorInfo", "FindingKind", "SegmentPair"]

SegmentPair = tuple[str, bool]  # one segment of an input as records hold it: [text, allow_special]


class Window(TypedDict):
    """``expected``/``actual``: a window of ids from ``start``, with each token's decoded bytes."""

    start: int
    ids: list[int]
    pieces: NotRequired[list[str]]


class Context(TypedDict):
    """``context``: the characters either side of ``char_offset``."""

    before: str
    after: str


class DivergenceRecord(TypedDict):
    """One line of ``OUT/divergences.jsonl`` (``verify.divergence/2``; docs/schema.md has a row per
    field, ``tests/test_record_types.py`` holds the two together and checks committed records
    against this). The located fields are an ``ids`` finding's, ``error`` a failure's or a bad
    input's; the sections after ``check`` are written by the hunt that found it. A metamorphic
    check adds its own scalars beside ``check`` (``entry_point``, ``batch_size``, ``property``...)."""

    schema: str
    kind: FindingKind
    engine: str | None
    reference: str | None
    sample_id: str
    source: str | None
    finding_key: str
    input_key: str | None
    input: NotRequired[list[SegmentPair] | None]
    input_file: NotRequired[str]
    input_runs: NotRequired[list[tuple[list[tuple[str, int]], bool]]]
    token_index: NotRequired[int | None]
    byte_offset: NotRequired[int | None]
    char_offset: NotRequired[int | None]
    offsets_exact: NotRequired[bool]
    context: NotRequired[Context]
    expected: NotRequired[Window]
    actual: NotRequired[Window]
    expected_len: NotRequired[int]
    actual_len: NotRequired[int | None]
    note: NotRequired[str]
    error: NotRequired[ErrorInfo]
    raw: NotRequired[str | None]
    input_redacted: NotRequired[dict[str, Any]]
    raw_redacted: NotRequired[dict[str, Any]]
    check: NotRequired[str]
    fresh: NotRequired[str]
    history: NotRequired[dict[str, Any]]
    session: NotRequired[dict[str, Any]]
    stress: NotRequired[dict[str, Any]]
    length: NotRequired[dict[str, Any]]
    certify: NotRequired[dict[str, Any]]
    certificate: NotRequired[Any]
    shadow: NotRequired[dict[str, Any]]


@dataclass
class Finding:
    engine: str
    reference: str
    sample: Sample
    kind: str  # a FindingKind value
    source: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    detail: str = ""  # what tells findings on one input apart (a metamorphic check, a session turn)

    def to_record(self) -> tuple[DivergenceRecord, "Stored"]:
        """The record, and what is stored beside it: ``(inputs/NAME.json, payload)`` for a large
        input, a list of such pairs when a large history (``verify.fresh_check``) goes too."""
        record, stored = self._record()
        history = record.get("history")
        if history and "calls" in history:
            payload = json.dumps(history, ensure_ascii=False)
            if len(payload) > INLINE_INPUT_LIMIT:
                import xxhash

                name = f"inputs/history-{xxhash.xxh3_128_hexdigest(payload.encode('utf-8', 'surrogatepass'))}.json"
                record["history"] = {**{k: v for k, v in history.items() if k != "calls"}, "file": name}
                stored = [x for x in (stored, (name, payload)) if x is not None]
        return record, stored

    def _record(self) -> tuple[DivergenceRecord, tuple[str, str] | None]:
        key = input_key(self.sample.segments)
        record: DivergenceRecord = {
            "schema": SCHEMA,
            "kind": self.kind,
            "engine": self.engine,
            "reference": self.reference,
            "sample_id": self.sample.id,
            "source": self.source,
            "finding_key": finding_key(self.kind, self.engine, self.reference, key, self.sample.id, self.detail),
            "input_key": key,
        }
        record.update(self.fields)  # the located fields and the hunt's sections
        segments = [[s.text, s.allow_special] for s in self.sample.segments]
        runs = input_runs(self.sample)
        if runs is not None:
            record["input_runs"] = runs
        if sum(len(s.text) for s in self.sample.segments) <= INLINE_INPUT_LIMIT:
            record["input"] = segments
            return record, None
        if runs is not None:  # the runs rebuild the exact input: no file of its own
            return record, None
        name = f"inputs/{key}.json"
        record["input_file"] = name
        return record, (name, json.dumps({"keys_version": KEYS_VERSION, "segments": segments}, ensure_ascii=False))


def input_runs(sample: Sample) -> list | None:
    """``[[runs, allow_special], ...]`` (``verify.run_length``) when the input is long and mostly
    repetition -- what a person reads instead of 25,000 characters, and what rebuilds the
    exact text (``sample_from_runs``) -- else None."""
    from verify.run_length import MIN_CHARS, compact

    if sum(len(s.text) for s in sample.segments) < MIN_CHARS:
        return None
    out = []
    for seg in sample.segments:
        runs = compact(seg.text) if len(seg.text) >= MIN_CHARS else [[seg.text, 1]] if seg.text else []
        if runs is None:
            return None
        out.append([runs, seg.allow_special])
    return out


def sample_from_runs(sample_id: str, runs: list) -> Sample:
    from verify.run_length import from_runs

    return Sample.from_segments(sample_id, [(from_runs(r), bool(a)) for r, a in runs])


def bad_input_record(source: str | None, position: str, reason: str, raw: bytes | str | None) -> DivergenceRecord:
    """A record the corpus could not turn into a sample, with where it is and why."""
    if isinstance(raw, bytes):
        raw = raw[:400].decode("utf-8", "backslashreplace")
    elif isinstance(raw, str):
        raw = raw[:400].encode("utf-8", "backslashreplace").decode("utf-8")
    return {"schema": SCHEMA, "kind": BAD_INPUT, "engine": None, "reference": None, "sample_id": position,
            "source": source, "finding_key": finding_key(BAD_INPUT, None, None, "", position, reason),
            "input_key": None, "input": None, "raw": raw,
            "error": {"type": "BadRecord", "message": reason}}


def _piece(b: bytes) -> str:
    return b.decode("utf-8", errors="backslashreplace")


def describe_divergence(sample: Sample, expected: np.ndarray, actual: np.ndarray,
                        expected_pieces: list[bytes] | None, actual_pieces: list[bytes] | None) -> dict[str, Any]:
    """The located fields of an ``ids`` finding (first differing token and around it).

    Offsets come from the reference's token bytes (or the candidate's when the
    reference cannot decode); ``offsets_exact`` says whether those bytes add up
    to the input's bytes, which holds for byte-level BPE."""
    index = first_difference(expected, actual)
    assert index is not None, "describe_divergence called on equal arrays"
    text = sample.text
    text_bytes = text.encode("utf-8")
    pieces = expected_pieces if expected_pieces is not None else actual_pieces
    byte_off = char_off = None
    exact = False
    if pieces is not None:
        starts = token_byte_offsets(pieces)
        exact = int(starts[-1]) == len(text_bytes)
        byte_off = int(starts[min(index, len(pieces))])
        char_off = char_offset(text_bytes, byte_off)
    lo = max(0, index - WINDOW_BEFORE)
    fields: dict[str, Any] = {
        "token_index": index,
        "byte_offset": byte_off,
        "char_offset": char_off,
        "offsets_exact": exact,
        "expected_len": int(expected.size),
        "actual_len": int(actual.size),
        "expected": _window(expected, expected_pieces, lo),
        "actual": _window(actual, actual_pieces, lo),
    }
    if char_off is not None:
        fields["context"] = {
            "before": text[max(0, char_off - CONTEXT_CHARS):char_off],
            "after": text[char_off:char_off + CONTEXT_CHARS],
        }
    return fields


def _window(ids: np.ndarray, pieces: list[bytes] | None, lo: int) -> Window:
    hi = min(ids.size, lo + WINDOW_BEFORE + WINDOW_AFTER)
    window: Window = {"start": lo, "ids": [int(i) for i in ids[lo:hi]]}
    if pieces is not None:
        window["pieces"] = [_piece(p) for p in pieces[lo:hi]]
    return window


def describe_failure(failure: Failure) -> dict[str, Any]:
    return {"error": failure.as_dict()}


Stored = "tuple[str, str] | list[tuple[str, str]] | None"


def stored_items(stored) -> list[tuple[str, str]]:
    """What ``Finding.to_record`` stores beside a record, as a list of ``(name, payload)``."""
    if stored is None:
        return []
    return list(stored) if isinstance(stored, list) else [stored]


def write_stored_input(out_dir: Path, stored) -> None:
    """Write a large input (or history) beside the report (content-addressed: written once)."""
    for name, payload in stored_items(stored):
        path = out_dir / name
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_text(path, payload)


class FindingWriter:
    """Streams findings to ``OUT/divergences.jsonl`` as they are found (commands that
    are not sharded: fuzz, check, unicode). ``verify run`` commits per shard instead."""

    def __init__(self, out_dir: Path, name: str = "divergences.jsonl"):  # = verify.rundir.layout.FINDINGS_FILE
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.out_dir / name
        self._fh = open(self.path, "w", encoding="utf-8")
        self.count = 0

    def write(self, finding: Finding) -> DivergenceRecord:
        record, stored = finding.to_record()
        write_stored_input(self.out_dir, stored)
        return self.write_record(record)

    def write_record(self, record: DivergenceRecord) -> DivergenceRecord:
        self._fh.write(jsonl.line(record))
        self._fh.flush()
        self.count += 1
        return record

    def close(self) -> None:
        self._fh.close()


def read_findings(path: Path) -> Iterator[DivergenceRecord]:
    """The records of a findings file, in order; nothing when it does not exist. Read as committed:
    a reader of another run's file checks what it needs (``verify.rundir.paths`` for its paths)."""
    return jsonl.read(path)
