"""Corpus files read as streams: .txt, .jsonl/.ndjson (optionally .gz, .zst or
.zstd) and .parquet (pyarrow, in record batches), whole or by range. A path is a
local path or an fsspec URL, both opened through fsspec (``verify.corpora.remote``).

Every sample id lets a user find the input again: the record's id field when it
has one, else ``file:line`` (text, JSONL read whole), ``file@byte`` (a large file
read by byte ranges: the offset of the line's first byte) or ``file:rowN``
(Parquet). A large ``.zst`` file made of several frames that declare their sizes
(pzstd, the seekable format, any writer that flushes frames) is read by byte ranges
of its decompressed stream too, each starting at a frame (``zstd_frames``), with the
same ``file@byte`` ids. A record that cannot become a sample (bad JSON, JSON nested deeper
than Python parses, invalid UTF-8, a missing or non-text field, no segments, a lone
surrogate, a line over ``MAX_RECORD_BYTES`` or a file that stops being readable) is yielded
as a ``BadRecord`` with its position: never dropped silently, never the end of the run. An
over-long line is never held whole: it is skipped in chunks up to the next newline, where
reading goes on (so a decompression bomb of one endless line costs time, not memory). A
listed file that does not exist (a partial mirror) is one ``BadRecord`` at its first
position, "file not found"; so is a Parquet file that cannot be opened.
"""

from __future__ import annotations

import io
import json
import os
from typing import IO, Iterator

import orjson

from verify.corpora import remote
from verify.corpora.remote import PathLike
from verify.errors import CorpusError, one_line
from verify.limits import MAX_RECORD_BYTES, MAX_SEGMENTS, READ_CHUNK_BYTES
from verify.sample import BadRecord, Sample

TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
COMPRESSIONS = (".gz", ".zst", ".zstd")

Record = Sample | BadRecord


class Overlong:
    """In place of a line over ``MAX_RECORD_BYTES`` (``size``: its length, newline included)."""

    def __init__(self, size: int):
        self.size = size

    def __len__(self) -> int:
        return self.size

    @property
    def reason(self) -> str:
        return f"line of {self.size:,} bytes, over the limit of {MAX_RECORD_BYTES:,} (MAX_RECORD_BYTES): skipped"


def bounded_lines(fh: IO[bytes], limit: int = MAX_RECORD_BYTES) -> Iterator[bytes | Overlong]:
    """The lines of a binary stream, each at most ``limit`` bytes; a longer one is an ``Overlong``,
    skipped in chunks up to its newline (reading resumes on the next line)."""
    try:
        fh.readline(0)
    except TypeError:  # an fsspec file's readline takes no size: read it through a buffer that does
        fh = io.BufferedReader(fh)
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while line and not line.endswith(b"\n"):
            line = fh.readline(READ_CHUNK_BYTES)
            size += len(line)
        yield Overlong(size)


def base_suffix(path: PathLike) -> str:
    name = remote.name_of(path).lower()
    for comp in COMPRESSIONS:
        if name.endswith(comp):
            name = name[: -len(comp)]
    return os.path.splitext(name)[1]


def is_compressed(path: PathLike) -> bool:
    return remote.name_of(path).lower().endswith(COMPRESSIONS)


def is_supported(path: PathLike) -> bool:
    return base_suffix(path) in TEXT_SUFFIXES + JSONL_SUFFIXES + PARQUET_SUFFIXES


def open_binary(path: PathLike) -> IO[bytes]:
    """The file's bytes, decompressed by its suffix (.gz, .zst, .zstd) with fsspec's codecs."""
    fh = remote.open_raw(path, compression=_codec(path))
    # fsspec's zstd codec is zstandard's reader where Python has no compression.zstd: it reads,
    # but has no readline (nor lines to iterate)
    return fh if isinstance(fh, io.IOBase) else io.BufferedReader(fh)


def _codec(path: PathLike) -> str:
    # fsspec infers .gz and .zst, not the .zstd that Nemotron-CC's files end with
    return "zstd" if remote.name_of(path).lower().endswith(".zstd") else "infer"


def _raw_lines(path: PathLike, byte_range: tuple[int, int] | None,
               frames: tuple[int, int] | None = None) -> Iterator[tuple[str, bytes | None, str | None]]:
    """``(position, line bytes, None)`` per line, or ``(position, None, reason)`` once when the
    file stops being readable. Whole files number lines from 1; a byte range yields the
    lines whose first byte lies in ``[start, stop)``, positioned by that byte. ``frames``
    (a zstd file's ``(seek, base)``: the compressed offset of the frame where reading
    starts and that frame's offset in the decompressed stream) makes the range one of the
    decompressed stream."""
    position = f"{path}:1"
    try:
        if byte_range is None:
            with open_binary(path) as fh:
                for lineno, raw in enumerate(bounded_lines(fh), 1):
                    position = f"{path}:{lineno}"
                    yield position, raw, None
            return
        start, stop = byte_range
        with (_zstd_from(path, frames[0]) if frames else remote.open_raw(path)) as fh:
            at = frames[1] if frames else max(0, start - 1)
            if not frames and start > 0:
                fh.seek(at)
            for position, raw in _range_lines(fh, path, start, stop, at):
                yield position, raw, None
    except FileNotFoundError as exc:  # listed (a paths file) but absent: a partial mirror
        yield position, None, missing_reason(exc)
    except (OSError, EOFError) as exc:
        yield position, None, f"file unreadable from here on ({exc})"
    except Exception as exc:  # zstandard raises its own ZstdError
        yield position, None, f"file unreadable from here on ({type(exc).__name__}: {exc})"


def _range_lines(fh: IO[bytes], path: PathLike, start: int, stop: int,
                 at: int) -> Iterator[tuple[str, bytes | Overlong]]:
    """The lines whose first byte lies in ``[start, stop)`` of a stream whose next byte is at
    offset ``at`` (``at <= max(0, start - 1)``), each positioned by that first byte."""
    offset = start
    lines = None
    if start > 0:
        _skip(fh, start - 1 - at)
        if fh.read(1) != b"\n":  # mid-line: that line belongs to the previous range
            lines = bounded_lines(fh)
            offset = start + len(next(lines, b""))
    lines = lines or bounded_lines(fh)
    while offset < stop:
        raw = next(lines, None)
        if raw is None:
            return
        yield f"{path}@{offset}", raw
        offset += len(raw)


def _skip(fh: IO[bytes], n: int, chunk: int = 1 << 20) -> None:
    while n > 0:
        got = len(fh.read(min(n, chunk)))
        if not got:
            return
        n -= got


def _zstd_from(path: PathLike, seek: int) -> IO[bytes]:
    """A zstd file decompressed from the frame at compressed offset ``seek`` on."""
    import zstandard

    raw = remote.open_raw(path)
    raw.seek(seek)
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True, read_across_frames=True))


ZSTD_MAGIC = 0xFD2FB528
ZSTD_SKIPPABLE = 0x184D2A50  # the 16 magics 0x184D2A50..5F, masked with 0xFFFFFFF0


def zstd_frames(path: PathLike) -> list[tuple[int, int]] | None:
    """``(compressed offset, decompressed size)`` of every data frame of a zstd file,
    read from frame and block headers only (no decompression); ``None`` when a frame does
    not declare its size (a streamed single frame: the file cannot be cut without
    decompressing it) or the headers do not add up to the file."""
    import zstandard

    frames: list[tuple[int, int]] = []
    size = remote.size(path)
    with remote.open_raw(path) as fh:
        pos = 0
        while pos < size:
            fh.seek(pos)
            head = fh.read(18)  # a frame header is at most 18 bytes with its magic
            magic = int.from_bytes(head[:4], "little") if len(head) >= 4 else None
            if magic is not None and magic & 0xFFFFFFF0 == ZSTD_SKIPPABLE and len(head) >= 8:
                pos += 8 + int.from_bytes(head[4:8], "little")  # a seek table or user data
                continue
            if magic != ZSTD_MAGIC:
                return None
            try:
                params = zstandard.get_frame_parameters(head)
                header = zstandard.frame_header_size(head)
            except zstandard.ZstdError:
                return None
            if params.content_size >= zstandard.CONTENTSIZE_ERROR:
                return None
            start, pos = pos, pos + header
            while True:  # block headers: 3 bytes, little-endian: last (1 bit), type (2), size (21)
                fh.seek(pos)
                block = fh.read(3)
                if len(block) < 3:
                    return None
                value = int.from_bytes(block, "little")
                kind, last = (value >> 1) & 3, value & 1
                if kind == 3:
                    return None
                pos += 3 + (1 if kind == 1 else value >> 3)
                if last:
                    break
            pos += 4 if params.has_checksum else 0
            frames.append((start, params.content_size))
    return frames if pos == size else None


def missing_reason(exc: Exception) -> str:
    """The one reason every listed-but-absent file is reported with, whichever reader found it."""
    return f"file not found (listed, but missing from the corpus: a partial mirror?) ({exc})"


def _readable_lines(path: PathLike, byte_range, frames=None) -> Iterator[tuple[str, bytes | None, BadRecord | None]]:
    """``(position, line bytes, None)`` per line, or ``(position, None, BadRecord)`` for a line over
    the size limit and, once, for a file that stops being readable."""
    for position, raw, failure in _raw_lines(path, byte_range, frames):
        if failure is not None:
            yield position, None, BadRecord(position, one_line(failure), None)
            return
        if isinstance(raw, Overlong):
            yield position, None, BadRecord(position, raw.reason, None)
            continue
        yield position, raw, None


def _decoded(position: str, raw: bytes) -> tuple[str | None, BadRecord | None]:
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, BadRecord(position, f"invalid UTF-8 at byte {exc.start} of the line", raw)


def read_text(path: PathLike, byte_range: tuple[int, int] | None = None,
              frames: tuple[int, int] | None = None) -> Iterator[Record]:
    """One sample per line, newline included (tokenizers see line ends)."""
    for position, raw, bad in _readable_lines(path, byte_range, frames):
        line, bad = (None, bad) if bad is not None else _decoded(position, raw)
        yield bad if bad is not None else Sample.plain(position, line)


def read_jsonl(path: PathLike, text_field: str, id_field: str,
               byte_range: tuple[int, int] | None = None, frames: tuple[int, int] | None = None) -> Iterator[Record]:
    """One sample per record. A record with ``segments: [[text, allow_special], ...]``
    becomes a segmented sample; otherwise ``text_field`` is its text. Blank lines are
    not records."""
    for position, raw, bad in _readable_lines(path, byte_range, frames):
        if bad is not None:
            yield bad
            continue
        record = _plain_record(position, raw, text_field, id_field)
        if record is None:  # anything but a plain text record, and every bad line: the exact path
            line, bad = _decoded(position, raw)
            if bad is not None:
                yield bad
                continue
            if not line.strip():
                continue
            record = jsonl_record(position, line, text_field, id_field)
        yield record


def _plain_record(position: str, raw: bytes, text_field: str, id_field: str) -> Sample | None:
    """The common record (an object whose ``text_field`` is text, its id a string or an integer)
    parsed by orjson straight from the line's bytes, else None. orjson refuses invalid UTF-8 and
    lone surrogates itself, so what it gives needs no further check; whatever it refuses or parses
    differently from the standard library (big integers, NaN, deep nesting) goes the exact way
    (``jsonl_record``), which says why a line is bad."""
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict):
        return None
    text, rid = record.get(text_field), record.get(id_field)
    if not isinstance(text, str) or not (rid is None or isinstance(rid, (str, int))) or isinstance(rid, bool):
        return None
    return Sample.plain(position if rid is None else str(rid), text)


def jsonl_record(position: str, line: str, text_field: str, id_field: str) -> Record:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return BadRecord(position, f"invalid JSON ({exc.msg}: column {exc.colno})", line)
    except RecursionError:
        return BadRecord(position, "JSON nested deeper than Python parses (its recursion limit)", line)
    if not isinstance(record, dict):
        return BadRecord(position, "expected a JSON object per line", line)
    sample_id = str(record[id_field]) if record.get(id_field) is not None else position
    if "segments" in record and text_field not in record:
        segments = record["segments"]
        ok = isinstance(segments, list) and 0 < len(segments) <= MAX_SEGMENTS and all(
            isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and isinstance(s[1], bool)
            for s in segments)
        if not ok:
            return BadRecord(position, f"'segments' must be a list of 1 to {MAX_SEGMENTS:,} [text, allow_special] "
                                       "pairs", line)
        sample = Sample.from_segments(sample_id, segments)
    else:
        text = record.get(text_field)
        if not isinstance(text, str):
            what = ("missing" if text_field not in record else "null, not text" if text is None
                    else f"{type(text).__name__}, not text")
            return BadRecord(position, f"field '{text_field}' is {what} (use --text-field)", line)
        sample = Sample.plain(sample_id, text)
    return scalar_checked(position, sample, line)


def scalar_checked(position: str, sample: Sample, raw) -> Record:
    """JSON can escape lone surrogates ("\\ud800"); no tokenizer input can hold one,
    and some engines silently rewrite them, so they are refused at the source."""
    for segment in sample.segments:
        try:
            segment.text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return BadRecord(position, f"lone surrogate U+{ord(segment.text[exc.start]):04X} in text "
                                       "(not valid Unicode)", raw)
    return sample


def open_parquet(path: PathLike):
    """A ``pyarrow.parquet.ParquetFile`` read through the path's fsspec filesystem."""
    import pyarrow.parquet as pq

    fs, stripped = remote.url_to_fs(path)
    return pq.ParquetFile(stripped, filesystem=fs)


class UnreadableParquet(CorpusError):
    """A Parquet file that cannot be opened (corrupt, truncated, not Parquet at all)."""


def parquet_row_groups(path: PathLike, text_field: str) -> tuple[list[str], list[int]]:
    """Column names and row counts of a Parquet file's row groups (its footer only);
    ``CorpusError`` when it has no text column (almost always a wrong ``--text-field``),
    ``UnreadableParquet`` when it cannot be opened."""
    try:
        meta = open_parquet(path)
    except Exception as exc:  # pyarrow's and every fsspec backend's own errors
        raise UnreadableParquet(f"{path}: not a readable Parquet file ({one_line(str(exc))})") from None
    try:
        names = meta.schema_arrow.names
        if text_field not in names:
            raise CorpusError(f"{path}: no column '{text_field}' (columns: {', '.join(names)}; use --text-field)")
        return names, [meta.metadata.row_group(i).num_rows for i in range(meta.num_row_groups)]
    finally:
        meta.close()


def parquet_row_group_bytes(path: PathLike) -> list[int]:
    """The uncompressed size of each row group of a Parquet file (its footer only)."""
    meta = open_parquet(path)
    try:
        return [meta.metadata.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
    finally:
        meta.close()


def read_parquet(path: PathLike, text_field: str, id_field: str, row_groups: tuple[int, int] | None = None,
                 batch_rows: int = 4096) -> Iterator[Record]:
    try:
        parquet = open_parquet(path)
    except FileNotFoundError as exc:
        yield BadRecord(f"{path}:row0", missing_reason(exc))
        return
    except Exception as exc:
        yield BadRecord(f"{path}:row0", f"not a readable Parquet file ({one_line(str(exc))})")
        return
    try:
        yield from _parquet_rows(parquet, path, text_field, id_field, row_groups, batch_rows)
    finally:
        parquet.close()


def _parquet_rows(parquet, path, text_field, id_field, row_groups, batch_rows) -> Iterator[Record]:
    names = parquet.schema_arrow.names
    if text_field not in names:
        yield BadRecord(f"{path}:row0", f"no column '{text_field}' (columns: {', '.join(names)})")
        return
    columns = [text_field] + ([id_field] if id_field in names and id_field != text_field else [])
    first, last = row_groups if row_groups else (0, parquet.num_row_groups)
    row = sum(parquet.metadata.row_group(i).num_rows for i in range(first))
    try:
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns,
                                          row_groups=list(range(first, last))):
            texts = batch.column(text_field).to_pylist()
            ids = batch.column(id_field).to_pylist() if len(columns) > 1 else [None] * len(texts)
            for text, rid in zip(texts, ids):
                position = f"{path}:row{row}"
                row += 1
                yield column_record(position, text, rid, text_field)
    except Exception as exc:  # corrupt data, or a remote read that failed mid-file
        yield BadRecord(f"{path}:row{row}", one_line(f"unreadable Parquet data from here on ({type(exc).__name__}: "
                                                     f"{exc})"))


def column_record(position: str, text, rid, text_field: str) -> Record:
    """A record from a column store (Parquet, ``datasets``): a sample, or a bad record
    for a null, non-text or non-UTF-8 text value."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            return BadRecord(position, f"invalid UTF-8 in '{text_field}'", text)
    if not isinstance(text, str):
        return BadRecord(position, f"'{text_field}' is {'null' if text is None else type(text).__name__}, not text",
                         None if text is None else repr(text)[:1000])
    if len(text) > MAX_RECORD_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_RECORD_BYTES:
        return BadRecord(position, f"'{text_field}' holds over {MAX_RECORD_BYTES:,} bytes (MAX_RECORD_BYTES): skipped")
    return scalar_checked(position, Sample.plain(str(rid) if rid is not None else position, text), text)


def read_file(path: PathLike, text_field: str, id_field: str) -> Iterator[Record]:
    suffix = base_suffix(path)
    if suffix in TEXT_SUFFIXES:
        return read_text(path)
    if suffix in JSONL_SUFFIXES:
        return read_jsonl(path, text_field, id_field)
    if suffix in PARQUET_SUFFIXES:
        return read_parquet(path, text_field, id_field)
    raise CorpusError(f"{path}: unsupported file type (use .txt, .jsonl, .ndjson, .parquet; .gz/.zst/.zstd compressed)")
