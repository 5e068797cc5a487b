"""Shards: the units a corpus (or a hunt) is cut into, and what a worker is handed.

A shard is a small frozen value with behaviour, one class per kind, owned by the pipeline the
way Ray Data's ``ReadTask`` is: it knows its ``id`` (stable: a run folder's markers and a
resumed run name shards by it), its records (``read()``; ``records()`` applies ``--sample``
and ``limit``) and its document (``to_json()``; ``Shard.from_json(doc)`` makes the same shard
again on any machine, from the document alone). What every kind shares is on ``Shard``:

  source        the corpus (or hunt) the shard belongs to: results name it
  limit         ``--limit``: at most that many records (the id then ends in ``|limit=N``)
  sample_rate   ``--sample``: keep a deterministic fraction of the records, by ``sample_seed``
                and the record's sample id (its id field, else its position; a bad record's
                position), so every shard kind, every executor and every resume keep the same ones

The corpus kinds of this module:

  GeneratedShard   generated    an index range of the generated corpus (``generator``: seed,
                                documents, long documents)
  PathShard        --           what the kinds of one file share: ``path`` (a local path or an
                                fsspec URL, ``verify.corpora.remote``), ``text_field``, ``id_field``
                                and ``partition``: a partitioned corpus' fields of the file
                                (``{"quality": "high", "kind": "actual"}``), so results say where
                                they came from
    FileShard      file         a whole file (compressed files, small files, remote Parquet files)
    ByteRangeShard byte-range   the lines of an uncompressed .txt/.jsonl file whose first byte
                                is in [start, stop)
    ZstdFramesShard zstd-frames the same in the decompressed stream of a local .zst file of
                                several frames that declare their sizes; decompressing starts
                                at the frame at ``frame_seek`` (compressed offset), which begins
                                at ``frame_base`` of the stream
    RowGroupsShard row-groups   row groups [start, stop) of a local Parquet file
  HuntShard        --           a hunt's shard: no records (the hunt's task makes its inputs);
                                its id is its ``label`` (``unicode:U+0000..U+7FFF``)
    UnloadedShard  (any)        a shard whose class this process has not imported (below)

The other kinds live next to their readers, each a subclass that joins the registry
(``Shard.from_json``'s table of kinds) when its module is imported:

  HfShard                 hf        ``verify.corpora.hf_datasets``
  TraceShard, AgentShard  traces, agent  ``verify.corpora.traces.sources`` (both ``SessionShard``:
                                    their records are sessions, replayed turn by turn)
  ShadowShard             shadow    ``verify.shadow.source``
  the hunts' shards       unicode, vocab, stress, edits, fuzz, recheck, length, certify: each
                          in its hunt's module (``UnicodeShard`` in
                          ``verify.adversarial.unicode.hunt``, ...), with its own typed fields

Why a small class per hunt, in the hunt's module, rather than one ``HuntShard`` with every
hunt's fields: a hunt's fields are typed where its task reads them, and the lower rooms
(``verify.corpora``, ``verify.rundir``) never import a hunt. ``verify.corpora`` imports every
corpus reader's module, so a corpus kind is always known; a hunt's (or the shadow reader's)
kind is known once its module is imported, which running the hunt does. A process that only
reads a run folder (``verify report``, ``verify triage``) may not have imported it: its shards
then load as ``UnloadedShard``, which keeps the document as it is (it writes back unchanged) and
has the id every shard defined outside ``verify.corpora`` has -- its ``path`` label -- but
nothing to run. (``tests/test_shard_classes.py`` checks that every such kind keeps to that.)

The document keeps the one flat layout shards have always had (``_LAYOUT``: ``source``,
``kind``, ``path``, ``start``, ``stop``, ``text_field``, ``id_field``, ``generator``, ``limit``,
``sample_rate``, ``sample_seed``, ``extra``): a class' fields of those names go there (a field's
``metadata={"key": ...}`` names another key: ``HuntShard.label`` is ``path``), its other fields
into ``extra`` under their names; a class with another layout of ``extra`` says so in
``_extra``/``_fields_of``. So an ``OUT/plan.json`` written before shards were classes loads on
``--resume`` to shards with the same ids, and writes back the same documents.

Large files are cut to about ``SPLIT_BYTES`` (the target shard size) where the format
allows: uncompressed text/JSONL by byte ranges, zstd by groups of frames, Parquet by
groups of row groups (also closed at ``MIN_SHARD_ROWS``). A gzip file, or a zstd file
of one frame, cannot be entered in the middle: it is one shard.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Iterator

import xxhash

from verify.corpora import files, remote
from verify.corpora.generated import generate_one
from verify.corpora.remote import PathLike
from verify.sample import BadRecord, Sample

SPLIT_BYTES = 64 << 20  # the target shard size: files above it are cut where their format allows
ZSTD_WALK_BYTES = 1 << 20  # a local .zst file above this (compressed) has its frame headers read
MIN_SHARD_ROWS = 10_000  # consecutive small Parquet row groups are joined up to this many rows
GENERATED_SHARD_DOCUMENTS = 16

# the document of every shard: its keys and their values when a kind has no such field
_LAYOUT: dict[str, Any] = {"source": "", "kind": "", "path": "", "start": 0, "stop": 0, "text_field": "text",
                           "id_field": "id", "generator": None, "limit": None, "sample_rate": None,
                           "sample_seed": 0, "extra": {}}
_FLAT = set(_LAYOUT) - {"extra"}  # the keys a field of the same name (or ``key``) is read from
_KINDS: dict[str, type["Shard"]] = {}  # kind -> its class: ``Shard.from_json``'s registry


def _key(f) -> str:
    """The document key of a field: its name, unless its metadata names another."""
    return f.metadata.get("key", f.name)


def _plain(value: Any) -> Any:
    """A field's value as JSON holds it (tuples are lists)."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Shard:
    """The base of every shard kind (see the module docstring). A subclass that sets ``kind``
    joins the registry ``from_json`` dispatches on; it gives its ``base_id`` and ``read()``."""

    source: str
    _: KW_ONLY
    limit: int | None = None
    sample_rate: float | None = None
    sample_seed: int = 0

    kind: ClassVar[str] = ""
    has_records: ClassVar[bool] = True  # False: a hunt's shard, whose task sends its own inputs

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if isinstance(kind, str) and kind:
            known = _KINDS.get(kind)
            if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
                raise TypeError(f"shard kind {kind!r} is {known.__module__}.{known.__qualname__}'s already")
            _KINDS[kind] = cls

    # --- what a shard is --------------------------------------------------------

    @property
    def base_id(self) -> str:
        """The id before ``limit`` (every kind says its own)."""
        raise NotImplementedError(type(self).__name__)

    @property
    def id(self) -> str:
        return self.base_id + (f"|limit={self.limit}" if self.limit is not None else "")

    @property
    def byte_size(self) -> int | None:
        """The bytes of the file the shard covers, when it is a byte range of one (for progress)."""
        return None

    def read(self) -> Iterator[Any]:
        """Every record of the shard, in order, before ``--sample`` and ``limit``."""
        raise NotImplementedError(type(self).__name__)

    def record_count(self) -> int | None:
        """How many records ``read()`` gives, when that is known without reading them."""
        return None

    def records(self) -> Iterator[Any]:
        """Every record of the shard, in order, after ``--sample`` and ``limit``. A worker
        of a run reads them through ``verify.rundir.status.shard_records``, which shows how
        far it has read."""
        records = self.read()
        if self.sample_rate is not None:
            records = (r for r in records if keep_record(self.sample_seed, self.sample_rate, _position(r)))
        if self.limit is not None:
            records = itertools.islice(records, self.limit)
        return records

    def with_limit(self, limit: int | None) -> "Shard":
        return replace(self, limit=limit)

    def _tuples(self, *names: str) -> None:
        """Fields that hold sequences hold tuples (a shard read back from JSON equals the one written)."""
        for name in names:
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    # --- the document ---------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        doc = {**_LAYOUT, "kind": self.kind}
        for f in fields(self):
            if _key(f) in _LAYOUT:
                doc[_key(f)] = _plain(getattr(self, f.name))
        doc["extra"] = self._extra()
        return doc

    def _extra(self) -> dict[str, Any]:
        """The document's ``extra``: the fields outside the flat layout, under their keys."""
        return {_key(f): _plain(getattr(self, f.name)) for f in fields(self) if _key(f) not in _LAYOUT}

    @classmethod
    def _fields_of(cls, extra: dict[str, Any]) -> dict[str, Any]:
        """The fields ``_extra`` wrote (a key no field takes is left out: it changed nothing)."""
        by_key = {_key(f): f.name for f in fields(cls) if _key(f) not in _LAYOUT}
        return {by_key[k]: v for k, v in extra.items() if k in by_key}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Shard":
        """The shard of a document (``to_json``'s, or one written before shards were classes)."""
        unknown = sorted(set(doc) - set(_LAYOUT))
        if unknown:
            raise TypeError(f"a shard has no field {', '.join(map(repr, unknown))}")
        shard_class = _KINDS.get(doc["kind"], UnloadedShard)
        extra = doc.get("extra") or {}
        if not isinstance(extra, dict):
            raise TypeError(f"a shard's extra is a JSON object, not {type(extra).__name__}")
        return shard_class._load(doc, dict(extra))

    @classmethod
    def _load(cls, doc: dict[str, Any], extra: dict[str, Any]) -> "Shard":
        """The shard of a document of this class' kind (a kind of several classes picks one here)."""
        flat = {f.name: doc[_key(f)] for f in fields(cls) if _key(f) in doc and _key(f) in _FLAT}
        return cls(**flat, **cls._fields_of(extra))


def kinds() -> dict[str, type[Shard]]:
    """Every shard kind this process knows, and its class."""
    return dict(_KINDS)


def _position(record) -> str:
    """Where a record is (a sample's or a session's id, a bad record's position)."""
    return record.position if isinstance(record, BadRecord) else record.id


def keep_record(seed: int, rate: float, position: str) -> bool:
    """Deterministic sampling: keep when the record's hash falls below ``rate``."""
    if rate >= 1.0:
        return True
    h = xxhash.xxh3_64_intdigest(position.encode("utf-8", "surrogatepass"), seed=seed & 0xFFFFFFFFFFFFFFFF)
    return h < rate * 2.0 ** 64


# --- the corpus kinds of this module --------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class GeneratedShard(Shard):
    """Documents ``start`` to ``stop - 1`` of the generated corpus ``generator``."""

    kind = "generated"
    start: int
    stop: int
    generator: tuple[int, int, int]  # (seed, documents, long_documents)

    def __post_init__(self) -> None:
        self._tuples("generator")

    @property
    def base_id(self) -> str:
        return f"generated:{self.generator[0]}[{self.start}:{self.stop}]"

    def read(self) -> Iterator[Sample]:
        seed, documents, long_documents = self.generator
        for index in range(self.start, self.stop):
            yield generate_one(seed, index, documents, long_documents)

    def record_count(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True, kw_only=True)
class PathShard(Shard):
    """What the shards of one file share (no kind of its own). ``partition``: the file's
    fields in a partitioned corpus, which the document keeps in ``extra``."""

    path: str
    text_field: str = "text"
    id_field: str = "id"
    partition: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def base_id(self) -> str:
        return self.path

    @property
    def _local(self) -> PathLike:
        """The path to read: a ``Path`` unless it is a URL."""
        return self.path if remote.is_url(self.path) else Path(self.path)

    def _extra(self) -> dict[str, Any]:
        return dict(self.partition)

    @classmethod
    def _fields_of(cls, extra: dict[str, Any]) -> dict[str, Any]:
        return {"partition": extra}


@dataclass(frozen=True, kw_only=True)
class FileShard(PathShard):
    """A whole file, of any supported format."""

    kind = "file"

    def read(self) -> Iterator[Sample | BadRecord]:
        return files.read_file(self._local, self.text_field, self.id_field)


@dataclass(frozen=True, kw_only=True)
class RangeShard(PathShard):
    """What the shards of a part of one file share (no kind of its own): the part, [start,
    stop) in the file's own unit (bytes, row groups), written after the path in the id."""

    start: int
    stop: int
    id_mark: ClassVar[str] = ""  # between the path and the range: "@" bytes, "#rg" row groups

    @property
    def base_id(self) -> str:
        return f"{self.path}{self.id_mark}{self.start}-{self.stop}"


@dataclass(frozen=True, kw_only=True)
class ByteRangeShard(RangeShard):
    """The lines of an uncompressed text/JSONL file whose first byte is in [start, stop)."""

    kind = "byte-range"
    id_mark = "@"

    @property
    def byte_size(self) -> int:
        return self.stop - self.start

    def read(self) -> Iterator[Sample | BadRecord]:
        rng = (self.start, self.stop)
        if files.base_suffix(self._local) in files.TEXT_SUFFIXES:
            return files.read_text(self._local, rng)
        return files.read_jsonl(self._local, self.text_field, self.id_field, rng)


@dataclass(frozen=True, kw_only=True)
class ZstdFramesShard(ByteRangeShard):
    """A byte range of the decompressed stream of a local .zst file, read by decompressing
    from the frame at ``frame_seek`` (compressed), which starts at ``frame_base`` (decompressed).
    The document keeps the two as ``extra["zstd"] = {"seek": ..., "base": ...}``."""

    kind = "zstd-frames"
    frame_seek: int
    frame_base: int

    def read(self) -> Iterator[Sample | BadRecord]:
        rng, frames = (self.start, self.stop), (self.frame_seek, self.frame_base)
        if files.base_suffix(self.path) in files.TEXT_SUFFIXES:
            return files.read_text(self.path, rng, frames)
        return files.read_jsonl(self.path, self.text_field, self.id_field, rng, frames)

    def _extra(self) -> dict[str, Any]:
        return {**self.partition, "zstd": {"seek": self.frame_seek, "base": self.frame_base}}

    @classmethod
    def _fields_of(cls, extra: dict[str, Any]) -> dict[str, Any]:
        zstd = extra.pop("zstd")
        return {"partition": extra, "frame_seek": zstd["seek"], "frame_base": zstd["base"]}


@dataclass(frozen=True, kw_only=True)
class RowGroupsShard(RangeShard):
    """Row groups [start, stop) of a local Parquet file."""

    kind = "row-groups"
    id_mark = "#rg"

    def read(self) -> Iterator[Sample | BadRecord]:
        return files.read_parquet(self._local, self.text_field, self.id_field, (self.start, self.stop))

    def record_count(self) -> int:
        parquet = files.open_parquet(self.path)
        try:
            return sum(parquet.metadata.row_group(i).num_rows for i in range(self.start, self.stop))
        finally:
            parquet.close()


# --- hunts' shards ---------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class HuntShard(Shard):
    """A hunt's shard (no kind of its own: each hunt's module subclasses it with its fields).
    It has no records -- its task makes the inputs from its fields and the plan's options --
    and its id is its ``label`` (the document's ``path``), else ``kind[start:stop]``."""

    has_records = False
    label: str = field(default="", metadata={"key": "path"})
    start: int = 0
    stop: int = 0

    @property
    def base_id(self) -> str:
        return self.label or f"{self.kind}[{self.start}:{self.stop}]"

    def read(self) -> Iterator[Any]:
        raise ValueError(f"shard kind {self.kind!r} has no records (it is a hunt's shard)")


@dataclass(frozen=True, kw_only=True)
class UnloadedShard(HuntShard):
    """A shard of a kind whose class this process has not imported (a hunt's, read back by a
    report): its document kept whole, so it writes back unchanged; its id a hunt shard's."""

    kind: str  # the document's: a field here, a class attribute of every other class
    text_field: str = "text"
    id_field: str = "id"
    generator: Any = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False)

    def _extra(self) -> dict[str, Any]:
        return dict(self.extra)

    @classmethod
    def _fields_of(cls, extra: dict[str, Any]) -> dict[str, Any]:
        return {"extra": extra}


# --- listing -------------------------------------------------------------------

def generated_shards(source: str, seed: int, documents: int, long_documents: int,
                     per_shard: int = GENERATED_SHARD_DOCUMENTS) -> list[Shard]:
    total = documents + long_documents
    gen = (seed, documents, long_documents)
    return [GeneratedShard(source, start=a, stop=min(a + per_shard, total), generator=gen)
            for a in range(0, total, per_shard)]


def file_shards(source: str, path: PathLike, text_field: str, id_field: str, *, size: int | None = None,
                partition: dict[str, Any] | None = None, target_bytes: int | None = None) -> list[Shard]:
    """The shards of one file, each about ``target_bytes`` (default ``SPLIT_BYTES``) where the
    format allows. A local Parquet file is cut by row groups (its footer is read); a remote
    one is one shard, opened only when it runs (the caller checks one file's columns). An
    uncompressed text/JSONL file is cut into byte ranges (``size``: from the listing, else
    asked for); a local zstd file of several sized frames into groups of frames.
    ``partition``: the file's fields in a partitioned corpus."""
    target = target_bytes or SPLIT_BYTES
    url = remote.is_url(path)
    common = {"path": path if url else str(path), "text_field": text_field, "id_field": id_field,
              "partition": dict(partition or {})}
    suffix = files.base_suffix(path)
    if suffix in files.PARQUET_SUFFIXES:
        if url:
            return [FileShard(source, **common)]
        try:
            _, rows = files.parquet_row_groups(path, text_field)
        except files.UnreadableParquet:  # one shard whose reader reports it: a bad-input record, the rest runs
            return [FileShard(source, **common)]
        sizes = files.parquet_row_group_bytes(path)
        shards: list[Shard] = []
        first, count, nbytes = 0, 0, 0
        for i, n in enumerate(rows):
            count, nbytes = count + n, nbytes + sizes[i]
            if count >= MIN_SHARD_ROWS or nbytes >= target or i == len(rows) - 1:
                shards.append(RowGroupsShard(source, start=first, stop=i + 1, **common))
                first, count, nbytes = i + 1, 0, 0
        return shards or [RowGroupsShard(source, start=0, stop=0, **common)]
    if files.is_compressed(path):
        if not url and remote.name_of(path).lower().endswith((".zst", ".zstd")):
            return _zstd_shards(source, path, target, common)
        return [FileShard(source, **common)]
    size = remote.size(path) if size is None else size
    if size <= target:
        return [FileShard(source, **common)]
    return [ByteRangeShard(source, start=a, stop=min(a + target, size), **common) for a in range(0, size, target)]


def _zstd_shards(source: str, path: PathLike, target: int, common: dict[str, Any]) -> list[Shard]:
    """Groups of whole frames of about ``target`` decompressed bytes; one ``file`` shard when
    the file is small, or one frame, or its frames do not declare their sizes. Each group's
    reading starts at the frame holding the byte before it (is that byte a line end?)."""
    try:
        frames = files.zstd_frames(path) if remote.size(path) > ZSTD_WALK_BYTES else None
    except OSError:  # missing or unreadable: the reader reports it, at its first position
        frames = None
    if not frames or sum(n for _, n in frames) <= target:
        return [FileShard(source, **common)]
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
            shards.append(ZstdFramesShard(source, start=group_start, stop=end, frame_seek=starts[lead][0],
                                          frame_base=starts[lead][1], **common))
            group_start = end
    return shards if len(shards) > 1 else [FileShard(source, **common)]  # one frame: ids stay file:line


def count_records(shard: Shard, up_to: int | None = None) -> int:
    """How many records the shard holds before ``limit`` (cheap where the shard knows:
    Parquet metadata, the generated corpus' ranges; JSONL and text are read) -- read no further
    than ``up_to`` + 1 records: past that, the count only has to say "more"."""
    if shard.sample_rate is None:
        known = shard.record_count()
        if known is not None:
            return known
        records = shard.read()
    else:
        records = shard.with_limit(None).records()
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
