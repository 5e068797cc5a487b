"""Local corpus files read as streams: .txt, .jsonl/.ndjson (optionally .gz or
.zst) and .parquet (pyarrow, in record batches).

Every sample id lets a user find the input again: the record's id field when it
has one, else ``file:line`` (text, JSONL) or ``file:row`` (Parquet). Anything
unreadable (bad compression, invalid UTF-8, bad JSON, a missing text field) is a
``CorpusError`` naming the file and line, never a silently dropped record.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import IO, Iterator

from verify.errors import CorpusError
from verify.sample import Sample

TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
COMPRESSIONS = (".gz", ".zst")


def base_suffix(path: Path) -> str:
    name = path.name.lower()
    for comp in COMPRESSIONS:
        if name.endswith(comp):
            name = name[: -len(comp)]
    return Path(name).suffix


def is_supported(path: Path) -> bool:
    return base_suffix(path) in TEXT_SUFFIXES + JSONL_SUFFIXES + PARQUET_SUFFIXES


def open_binary(path: Path) -> IO[bytes]:
    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rb")
    if name.endswith(".zst"):
        import zstandard

        return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True))
    return open(path, "rb")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with open_binary(path) as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    yield lineno, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise CorpusError(f"{path}:{lineno}: invalid UTF-8 at byte {exc.start} of the line") from None
    except CorpusError:
        raise
    except (OSError, EOFError) as exc:
        raise CorpusError(f"{path}: unreadable ({exc})") from None
    except Exception as exc:  # zstandard raises its own ZstdError
        raise CorpusError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from None


def read_text(path: Path) -> Iterator[Sample]:
    """One sample per line, newline included (tokenizers see line ends)."""
    for lineno, line in _lines(path):
        yield Sample.plain(f"{path}:{lineno}", line)


def read_jsonl(path: Path, text_field: str, id_field: str) -> Iterator[Sample]:
    """One sample per record. A record with ``segments: [[text, allow_special], ...]``
    becomes a segmented sample; otherwise ``text_field`` is its text."""
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise CorpusError(f"{path}:{lineno}: expected a JSON object per line")
        sample_id = str(record[id_field]) if record.get(id_field) is not None else f"{path}:{lineno}"
        if "segments" in record and text_field not in record:
            sample = _segmented(path, lineno, sample_id, record["segments"])
        else:
            text = record.get(text_field)
            if not isinstance(text, str):
                raise CorpusError(f"{path}:{lineno}: no string field '{text_field}' (use --text-field)")
            sample = Sample.plain(sample_id, text)
        for segment in sample.segments:
            _require_scalar_values(path, lineno, segment.text)
        yield sample


def _require_scalar_values(path: Path, lineno: int, text: str) -> None:
    """JSON can escape lone surrogates ("\\ud800"); no tokenizer input can hold one,
    and some engines silently rewrite them, so they are refused at the source."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CorpusError(f"{path}:{lineno}: lone surrogate U+{ord(text[exc.start]):04X} in text "
                          "(not valid Unicode)") from None


def _segmented(path: Path, lineno: int, sample_id: str, segments) -> Sample:
    ok = isinstance(segments, list) and all(
        isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and isinstance(s[1], bool) for s in segments
    )
    if not ok:
        raise CorpusError(f"{path}:{lineno}: 'segments' must be a list of [text, allow_special] pairs")
    return Sample.from_segments(sample_id, segments)


def read_parquet(path: Path, text_field: str, id_field: str, batch_rows: int = 4096) -> Iterator[Sample]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(f"{path}: not a readable Parquet file ({exc})") from None
    names = parquet.schema_arrow.names
    if text_field not in names:
        raise CorpusError(f"{path}: no column '{text_field}' (columns: {', '.join(names)}; use --text-field)")
    columns = [text_field] + ([id_field] if id_field in names and id_field != text_field else [])
    row = 0
    try:
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
            texts = batch.column(text_field).to_pylist()
            ids = batch.column(id_field).to_pylist() if len(columns) > 1 else [None] * len(texts)
            for text, rid in zip(texts, ids):
                if isinstance(text, bytes):
                    try:
                        text = text.decode("utf-8")
                    except UnicodeDecodeError:
                        raise CorpusError(f"{path}:row {row}: invalid UTF-8 in '{text_field}'") from None
                if not isinstance(text, str):
                    raise CorpusError(f"{path}:row {row}: '{text_field}' is {type(text).__name__}, not text")
                yield Sample.plain(str(rid) if rid is not None else f"{path}:row{row}", text)
                row += 1
    except pa.ArrowException as exc:
        raise CorpusError(f"{path}: corrupt Parquet data near row {row} ({exc})") from None


def read_file(path: Path, text_field: str, id_field: str) -> Iterator[Sample]:
    suffix = base_suffix(path)
    if suffix in TEXT_SUFFIXES:
        return read_text(path)
    if suffix in JSONL_SUFFIXES:
        return read_jsonl(path, text_field, id_field)
    if suffix in PARQUET_SUFFIXES:
        return read_parquet(path, text_field, id_field)
    raise CorpusError(f"{path}: unsupported file type (use .txt, .jsonl, .ndjson, .parquet; .gz/.zst compressed)")
