"""Findings: the divergence record (schema ``verify.divergence/1``) and its writer.

Documented field by field in docs/schema.md. A record always carries the input
that causes it: inline when it is at most ``INLINE_INPUT_LIMIT`` characters,
otherwise in ``OUT/inputs/<sha256>.json`` referenced by ``input_file``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verify.compare import char_offset, first_difference, token_byte_offsets
from verify.sample import Sample

SCHEMA = "verify.divergence/1"
INLINE_INPUT_LIMIT = 64 * 1024
WINDOW_BEFORE, WINDOW_AFTER = 4, 8
CONTEXT_CHARS = 40

FAILURE_KINDS = ("error", "crash", "timeout")
KINDS = ("ids",) + FAILURE_KINDS


@dataclass(frozen=True)
class Failure:
    """An engine that returned no ids for a sample."""

    kind: str  # "error" | "crash" | "timeout"
    type: str
    message: str


@dataclass
class Finding:
    engine: str
    reference: str
    sample: Sample
    kind: str
    source: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)

    def to_record(self, inputs_dir: Path | None = None) -> dict[str, Any]:
        record: dict[str, Any] = {
            "schema": SCHEMA,
            "kind": self.kind,
            "engine": self.engine,
            "reference": self.reference,
            "sample_id": self.sample.id,
            "source": self.source,
        }
        record.update(self.fields)
        record.update(input_fields(self.sample, inputs_dir))
        return record


def input_fields(sample: Sample, inputs_dir: Path | None) -> dict[str, Any]:
    payload = json.dumps(sample.to_json(), ensure_ascii=False, sort_keys=True)
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    nchars = sum(len(s.text) for s in sample.segments)
    if nchars <= INLINE_INPUT_LIMIT or inputs_dir is None:
        return {"input_sha256": digest, "input": sample.to_json()["segments"]}
    inputs_dir.mkdir(parents=True, exist_ok=True)
    path = inputs_dir / f"{digest}.json"
    if not path.exists():
        path.write_text(payload, encoding="utf-8")
    return {"input_sha256": digest, "input_file": f"inputs/{path.name}"}


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


def _window(ids: np.ndarray, pieces: list[bytes] | None, lo: int) -> dict[str, Any]:
    hi = min(ids.size, lo + WINDOW_BEFORE + WINDOW_AFTER)
    window = {"start": lo, "ids": [int(i) for i in ids[lo:hi]]}
    if pieces is not None:
        window["pieces"] = [_piece(p) for p in pieces[lo:hi]]
    return window


def describe_failure(failure: Failure) -> dict[str, Any]:
    return {"error": {"type": failure.type, "message": failure.message[:2000]}}


class FindingWriter:
    """Streams findings to ``OUT/divergences.jsonl`` as they are found."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir
        self.path = out_dir / "divergences.jsonl"
        self._fh = open(self.path, "w", encoding="utf-8")
        self.count = 0

    def write(self, finding: Finding) -> dict[str, Any]:
        record = finding.to_record(self.out_dir / "inputs")
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()
        self.count += 1
        return record

    def close(self) -> None:
        self._fh.close()
