"""Shards: the units a corpus is cut into, and what a worker is handed.

A shard is a small picklable descriptor with a stable id, re-creatable from its
descriptor alone on any machine (``Shard.from_json(shard.to_json())``):

  generated    an index range of the generated corpus (seed, documents, long_documents)
  file         a whole file (compressed files, small files, remote Parquet files)
  byte-range   the lines of an uncompressed .txt/.jsonl file whose first byte is in [start, stop)
  zstd-frames  the same in the decompressed stream of a local .zst file of several frames that
               declare their sizes; ``extra["zstd"]`` says where to start decompressing
               (``seek``: a frame's compressed offset, ``base``: its decompressed offset)
  row-groups   a range of a local Parquet file's row groups
  hf           one shard of a ``datasets`` dataset (``verify.corpora.hf_datasets``):
               ``path`` the dataset, ``extra`` its config, split, shard index and count

A file shard's ``path`` is a local path or an fsspec URL (``verify.corpora.remote``);
``extra`` carries source-specific fields, e.g. a partitioned corpus' partition fields
(``{"quality": "high", "kind": "actual"}``), so results can say where they came from.

Large files are cut to about ``SPLIT_BYTES`` (the target shard size) where the format
allows: uncompressed text/JSONL by byte ranges, zstd by groups of frames, Parquet by
groups of row groups (also closed at ``MIN_SHARD_ROWS``). A gzip file, or a zstd file
of one frame, cannot be entered in the middle: it is one shard.

``limit`` caps the records read from the shard (``--limit`` on the corpus);
``sample_rate``/``sample_seed`` keep a deterministic fraction of its records
(``--sample``): whether a record is kept depends only on the seed and the
record's sample id (its id field, else its position; a bad record's position), so
every shard kind, every executor and every resume picks the same ones.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

import xxhash

from verify.corpora import files, remote
from verify.corpora.remote import PathLike
from verify.sample import BadRecord, Sample

KINDS = ("generated", "file", "byte-range", "zstd-frames", "row-groups", "hf")
SPLIT_BYTES = 64 << 20  # the target shard size: files above it are cut where their format allows
ZSTD_WALK_BYTES = 1 << 20  # a local .zst file above this (compressed) has its frame headers read
MIN_SHARD_ROWS = 10_000  # consecutive small Parquet row groups are joined up to this many rows
GENERATED_SHARD_DOCUMENTS = 16


@dataclass(frozen=True)
class Shard:
    source: str
    kind: str
    path: str = ""
    start: int = 0
    stop: int = 0
    text_field: str = "text"
    id_field: str = "id"
    generator: tuple[int, int, int] | None = None  # (seed, documents, long_documents)
    limit: int | None = None
    sample_rate: float | None = None
    sample_seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)  # source-specific fields

    @property
    def id(self) -> str:
        if self.kind == "generated":
            seed = self.generator[0] if self.generator else 0
            base = f"generated:{seed}[{self.start}:{self.stop}]"
        elif self.kind in ("file", "traces", "shadow"):
            base = self.path
        elif self.kind == "agent":
            base = f"agent:{self.extra.get('seed', 0)}[{self.start}:{self.stop}]"
        elif self.kind in ("byte-range", "zstd-frames"):
            base = f"{self.path}@{self.start}-{self.stop}"
        elif self.kind == "hf":
            base = f"{hf_label(self)}/shard-{self.extra['shard']}-of-{self.extra['shards']}"
        elif self.kind == "row-groups":
            base = f"{self.path}#rg{self.start}-{self.stop}"
        else:  # a hunt's shard: its path is its label (unicode:U+0000..U+7FFF, vocab:tokens[0:8192] ...)
            base = self.path or f"{self.kind}[{self.start}:{self.stop}]"
        return base + (f"|limit={self.limit}" if self.limit is not None else "")

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["generator"] = list(self.generator) if self.generator else None
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Shard":
        doc = dict(doc)
        if doc.get("generator") is not None:
            doc["generator"] = tuple(doc["generator"])
        return cls(**doc)

    @property
    def byte_size(self) -> int | None:
        """The bytes of the file the shard covers, when it is a byte range of one (for progress)."""
        return self.stop - self.start if self.kind in ("byte-range", "zstd-frames") else None

    def records(self) -> Iterator[Sample | BadRecord]:
        """Every record of the shard, in order, after ``--sample`` and ``limit``. A worker
        of a run reads them through ``verify.rundir.status.shard_records``, which shows how
        far it has read."""
        records = read_shard(self)
        if self.sample_rate is not None:
            records = (r for r in records if keep_record(self.sample_seed, self.sample_rate, _position(r)))
        if self.limit is not None:
            records = itertools.islice(records, self.limit)
        return records

    def with_limit(self, limit: int | None) -> "Shard":
        from dataclasses import replace

        return replace(self, limit=limit)


def hf_label(shard: Shard) -> str:
    return f"hf:{shard.path}/{shard.extra.get('config') or 'default'}/{shard.extra['split']}"


# kind -> "module:function" reading a shard of that kind; imported when a shard is read, so
# this module stays a leaf (the readers import sources, traces and datasets, never the reverse)
READERS = {
    "generated": "verify.corpora.readers:read_generated",
    "file": "verify.corpora.readers:read_local",
    "byte-range": "verify.corpora.readers:read_local",
    "zstd-frames": "verify.corpora.shards:read_zstd_frames",
    "row-groups": "verify.corpora.readers:read_local",
    "hf": "verify.corpora.hf_datasets:read_hf_shard",
    "traces": "verify.corpora.traces.sources:read_trace_shard",
    "agent": "verify.corpora.traces.sources:read_trace_shard",
    "shadow": "verify.shadow.source:read_shadow_shard",
}


def read_shard(shard: Shard) -> Iterator[Sample | BadRecord]:
    """The records of a corpus shard (no ``--sample``/``limit`` applied)."""
    import importlib

    where = READERS.get(shard.kind)
    if where is None:
        raise ValueError(f"shard kind {shard.kind!r} has no records (it is a hunt's shard)")
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)(shard)


def read_zstd_frames(shard: Shard) -> Iterator[Sample | BadRecord]:
    frames = (shard.extra["zstd"]["seek"], shard.extra["zstd"]["base"])
    rng = (shard.start, shard.stop)
    if files.base_suffix(shard.path) in files.TEXT_SUFFIXES:
        return files.read_text(shard.path, rng, frames)
    return files.read_jsonl(shard.path, shard.text_field, shard.id_field, rng, frames)


def _position(record) -> str:
    """Where a record is (a sample's or a session's id, a bad record's position)."""
    return record.position if isinstance(record, BadRecord) else record.id


def keep_record(seed: int, rate: float, position: str) -> bool:
    """Deterministic sampling: keep when the record's hash falls below ``rate``."""
    if rate >= 1.0:
        return True
    h = xxhash.xxh3_64_intdigest(position.encode("utf-8", "surrogatepass"), seed=seed & 0xFFFFFFFFFFFFFFFF)
    return h < rate * 2.0 ** 64


# --- listing -------------------------------------------------------------------

def generated_shards(source: str, seed: int, documents: int, long_documents: int,
                     per_shard: int = GENERATED_SHARD_DOCUMENTS) -> list[Shard]:
    total = documents + long_documents
    gen = (seed, documents, long_documents)
    return [Shard(source, "generated", start=a, stop=min(a + per_shard, total), generator=gen)
            for a in range(0, total, per_shard)]


def file_shards(source: str, path: PathLike, text_field: str, id_field: str, *, size: int | None = None,
                extra: dict[str, Any] | None = None, target_bytes: int | None = None) -> list[Shard]:
    """The shards of one file, each about ``target_bytes`` (default ``SPLIT_BYTES``) where the
    format allows. A local Parquet file is cut by row groups (its footer is read); a remote
    one is one shard, opened only when it runs (the caller checks one file's columns). An
    uncompressed text/JSONL file is cut into byte ranges (``size``: from the listing, else
    asked for); a local zstd file of several sized frames into groups of frames."""
    target = target_bytes or SPLIT_BYTES
    url = remote.is_url(path)
    common = {"source": source, "path": path if url else str(path), "text_field": text_field,
              "id_field": id_field, "extra": dict(extra or {})}
    suffix = files.base_suffix(path)
    if suffix in files.PARQUET_SUFFIXES:
        if url:
            return [Shard(kind="file", **common)]
        try:
            _, rows = files.parquet_row_groups(path, text_field)
        except files.UnreadableParquet:  # one shard whose reader reports it: a bad-input record, the rest runs
            return [Shard(kind="file", **common)]
        sizes = files.parquet_row_group_bytes(path)
        shards, first, count, nbytes = [], 0, 0, 0
        for i, n in enumerate(rows):
            count, nbytes = count + n, nbytes + sizes[i]
            if count >= MIN_SHARD_ROWS or nbytes >= target or i == len(rows) - 1:
                shards.append(Shard(kind="row-groups", start=first, stop=i + 1, **common))
                first, count, nbytes = i + 1, 0, 0
        return shards or [Shard(kind="row-groups", start=0, stop=0, **common)]
    if files.is_compressed(path):
        if not url and remote.name_of(path).lower().endswith((".zst", ".zstd")):
            return _zstd_shards(path, target, common)
        return [Shard(kind="file", **common)]
    size = remote.size(path) if size is None else size
    if size <= target:
        return [Shard(kind="file", **common)]
    return [Shard(kind="byte-range", start=a, stop=min(a + target, size), **common)
            for a in range(0, size, target)]


def _zstd_shards(path: PathLike, target: int, common: dict[str, Any]) -> list[Shard]:
    """Groups of whole frames of about ``target`` decompressed bytes; one ``file`` shard when
    the file is small, or one frame, or its frames do not declare their sizes. Each group's
    reading starts at the frame holding the byte before it (is that byte a line end?)."""
    try:
        frames = files.zstd_frames(path) if remote.size(path) > ZSTD_WALK_BYTES else None
    except OSError:  # missing or unreadable: the reader reports it, at its first position
        frames = None
    if not frames or sum(n for _, n in frames) <= target:
        return [Shard(kind="file", **common)]
    starts = []  # (compressed offset, decompressed offset) of every frame
    base = 0
    for seek, n in frames:
        starts.append((seek, base))
        base += n
    offsets = [at for _, at in starts]
    shards: list[Shard] = []
    group_start = 0
    for i, (_, at) in enumerate(starts):
        end = at + frames[i][1]
        if (end - group_start >= target or i == len(frames) - 1) and end > group_start:
            # the frame holding the byte before the group (it tells whether the group starts a line)
            lead = bisect.bisect_right(offsets, group_start - 1) - 1 if group_start > 0 else 0
            zstd = {"seek": starts[lead][0], "base": starts[lead][1]}
            shards.append(Shard(kind="zstd-frames", start=group_start, stop=end,
                                **{**common, "extra": {**common["extra"], "zstd": zstd}}))
            group_start = end
    return shards if len(shards) > 1 else [Shard(kind="file", **common)]  # one frame: ids stay file:line


def count_records(shard: Shard, up_to: int | None = None) -> int:
    """How many records the shard holds before ``limit`` (cheap where the format allows:
    Parquet metadata, the generated corpus' ranges; JSONL and text are read) -- read no further
    than ``up_to`` + 1 records: past that, the count only has to say "more"."""
    if shard.sample_rate is None:
        if shard.kind == "generated":
            return shard.stop - shard.start
        if shard.kind == "row-groups":
            parquet = files.open_parquet(shard.path)
            try:
                return sum(parquet.metadata.row_group(i).num_rows for i in range(shard.start, shard.stop))
            finally:
                parquet.close()
    records = read_shard(shard) if shard.sample_rate is None else shard.with_limit(None).records()
    if up_to is not None:
        records = itertools.islice(records, up_to + 1)
    return sum(1 for _ in records)


def apply_limit(shards: list[Shard], limit: int | None) -> list[Shard]:
    """The shards that hold the first ``limit`` records, the last one capped. Each shard is
    counted only up to what is left of ``limit``: ``--limit 200`` of a huge file reads about
    200 records, never the whole file."""
    if limit is None:
        return shards
    kept: list[Shard] = []
    left = limit
    for shard in shards:
        if left <= 0:
            break
        n = count_records(shard, up_to=left)
        kept.append(shard if n <= left else shard.with_limit(left))
        left -= n
    return kept
