"""The reference ledger: what the reference gave, per input, so it need not encode it again.

    ledger = Ledger.open("ledgers/", reference_identity)     # a directory or an fsspec URL
    entries = ledger.lookup(partition_of(shard.id), bad)     # input key -> (ids digest, length)
    ledger.append(partition_of(shard.id), new_entries)       # one Parquet part per commit

One ledger per reference identity (``keys.engine_key``: adapter, package version,
vocabulary SHA-256, output-changing options, behavioural fingerprint): any change
starts a new one, in its own folder ``<root>/<engine key>/`` with ``identity.json``.
Entries are append-only Parquet parts (``input_key``, ``ids_digest``: 16-byte
binary; ``length``: uint32), partitioned by the shard they were found in
(``shard=<hash of its base id>/part-*.parquet``), so a worker reads only the part
it needs and a cluster can share the folder. ``compact`` merges each partition's
parts into one, dropping duplicates; ``stats`` finds conflicting duplicates (two
digests for one input: corruption) and bad parts.

Integrity. Every part has a checksum sidecar, ``part-X.parquet.sha256`` (``sha256sum``
format: the SHA-256 of the part's bytes), written before the part is renamed into
place, so a reader that sees a part sees its checksum. A part whose bytes do not hash
to its sidecar (truncated, altered, half-copied), a part without a sidecar (an older
harness, a hand-made file), and a part that is not a readable ledger part is a
``BadPart``: reported (``lookup(..., bad)``, ``stats().bad``), skipped -- its inputs are
simply not hits and the reference encodes them again -- never trusted, never raised.

What it does not defend against: a writer with access to the files can rewrite a part
*and* its sidecar (the checksum is no signature). The audit bounds how long that goes
unnoticed: every run re-encodes a deterministic sample of its hits with the reference
(``audited``: a hash of the input key and the run's seed under ``--ledger-audit RATE``,
default ``DEFAULT_AUDIT_RATE``; ``1`` = every hit), a different sample each run (the seed
is drawn when the run is planned and saved in its plan, so workers and resumes agree).
A forged entry survives k runs with probability (1 - RATE)^k; a forged entry that a
candidate disagrees with is re-encoded anyway (below).

How a run uses it (``verify.pipeline.records_task``): the reference encodes only
inputs without an entry, plus the audited hits; a candidate whose ids hash to the
entry's digest is verified; on a mismatch the reference encodes the input again to
locate the first difference. Whenever a fresh encode disagrees with the entry, the
sample is reported as ledger corruption (``error``/``LedgerCorrupt``) and never
counted verified. Entries the reference produced are written by the driver when
the shard commits.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import xxhash

from verify.errors import ConfigError, UsageError
from verify.keys import KEYS_VERSION, engine_key
from verify.outcome import Recorded

SCHEMA = "verify.ledger/1"
IDENTITY_FILE = "identity.json"
CHECKSUM_SUFFIX = ".sha256"  # part-X.parquet.sha256 beside part-X.parquet
COLUMNS = ("input_key", "ids_digest", "length")
DEFAULT_AUDIT_RATE = 0.01  # the fraction of ledger hits a run re-encodes (--ledger-audit)

Entry = tuple[bytes, bytes, int]  # (input key, ids digest, length): keys and digests as 16 raw bytes


def _pa():
    import pyarrow as pa

    return pa, pa.schema([("input_key", pa.binary(16)), ("ids_digest", pa.binary(16)), ("length", pa.uint32())])


def partition_of(shard_id: str) -> str:
    """The partition a shard's entries live in: its id without a --limit cap, hashed (a capped
    or sampled run of a shard finds the entries of a full one)."""
    base = shard_id.split("|limit=")[0]
    return "shard=" + xxhash.xxh3_64_hexdigest(base.encode("utf-8", "surrogatepass"))


def audited(key: bytes, rate: float, seed: int) -> bool:
    """Whether a run with audit ``rate`` and ``seed`` re-encodes the ledger hit of input ``key``:
    a hash of the two below ``rate`` (as ``verify.corpora.shards.keep_record`` samples), so every
    worker and every resume of the run decides the same; ``1`` audits every hit, ``0`` none."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return xxhash.xxh3_64_intdigest(key, seed=seed & 0xFFFFFFFFFFFFFFFF) < rate * 2.0 ** 64


def check_audit_rate(rate: float | None, flag: str) -> None:
    if rate is not None and not 0.0 <= rate <= 1.0:
        raise UsageError(f"{flag} must be a fraction in [0, 1] (1: re-encode every ledger hit; 0: none)")


def checksum_line(data: bytes, name: str) -> bytes:
    """A sidecar's contents, as ``sha256sum`` writes them (``sha256sum -c`` checks a part)."""
    return f"{hashlib.sha256(data).hexdigest()}  {name}\n".encode()


@dataclass(frozen=True)
class BadPart:
    """A part that is not used: ``path`` relative to the ledger's folder, and why."""

    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


class _Unusable(Exception):
    """A part that cannot be trusted (``str``: why); caught where the part is read."""


class _Vanished(Exception):
    """A part removed between listing and reading it (``compact`` elsewhere): not corruption."""


def _fixed_bytes(column) -> bytes:
    """The raw values of a ``binary(16)`` column (no nulls: the schema is checked), end to end."""
    if not len(column):
        return b""
    return column.buffers()[1].slice(column.offset * 16, len(column) * 16).to_pybytes()


def _lengths(column) -> np.ndarray:
    """A ``uint32`` column's values (no nulls: the schema is checked) read from its buffer as int64.
    Not ``np.asarray`` or ``to_numpy``: those import pandas, 0.3-1 s of start-up in every worker."""
    if not len(column):
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(column.buffers()[1], dtype="<u4", count=len(column), offset=column.offset * 4).astype(np.int64)


class PartitionEntries:
    """A partition's entries as arrays: the input keys sorted (``S16`` compares as 16 raw bytes),
    each with the row of its digest and length, the last row winning where an input repeats (later
    parts are later rows). ``find`` answers a whole batch with one search; ``get``, ``in`` and
    ``[]`` answer one key."""

    def __init__(self, keys: bytes, digests: bytes, lengths: np.ndarray):
        listed = np.frombuffer(keys, dtype="S16")
        order = np.argsort(listed, kind="stable")  # equal keys keep their row order: the last is the newest
        ordered = listed[order]
        last = np.ones(len(ordered), dtype=bool)
        last[:-1] = ordered[1:] != ordered[:-1]
        self._keys, self._rows = ordered[last], order[last]
        # what ``find`` hands out per hit, made once per partition: hex digests, lengths as ints
        self._hex, self._lengths = digests.hex(), lengths.tolist()

    def __len__(self) -> int:
        return len(self._keys)

    def _rows_of(self, keys: list[bytes]) -> np.ndarray:
        """The row of each key, -1 where there is none."""
        if not keys or not len(self._keys):
            return np.full(len(keys), -1, dtype=np.int64)
        wanted = np.frombuffer(b"".join(keys), dtype="S16")
        at = np.minimum(np.searchsorted(self._keys, wanted), len(self._keys) - 1)
        return np.where(self._keys[at] == wanted, self._rows[at], -1)

    def find(self, keys: list[bytes]) -> list[Recorded | None]:
        """Each key's entry as the reference's ``Recorded`` outcome, None where the ledger has none."""
        digests, lengths = self._hex, self._lengths
        return [None if row < 0 else Recorded(digests[row * 32:row * 32 + 32], lengths[row])
                for row in self._rows_of(keys).tolist()]

    def get(self, key: bytes, default=None) -> tuple[bytes, int] | None:
        if len(key) != 16:
            return default
        row = int(self._rows_of([key])[0])
        return default if row < 0 else (bytes.fromhex(self._hex[row * 32:row * 32 + 32]), self._lengths[row])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, bytes) and self.get(key) is not None

    def __getitem__(self, key: bytes) -> tuple[bytes, int]:
        entry = self.get(key)
        if entry is None:
            raise KeyError(key)
        return entry


@dataclass
class LedgerStats:
    entries: int
    partitions: int
    parts: int
    bytes: int
    conflicts: int = 0  # inputs with two different digests (corruption)
    duplicates: int = 0  # inputs recorded twice with the same digest (compactable)
    bad: list[BadPart] = field(default_factory=list)  # parts skipped: checksum, truncation, not a part

    @property
    def bad_parts(self) -> int:
        return len(self.bad)

    def as_dict(self) -> dict[str, int]:
        return {"entries": self.entries, "partitions": self.partitions, "parts": self.parts, "bytes": self.bytes,
                "conflicts": self.conflicts, "duplicates": self.duplicates, "bad_parts": self.bad_parts}


class Ledger:
    def __init__(self, fs, path: str, identity: dict[str, Any]):
        self.fs, self.path, self.identity = fs, path.rstrip("/"), identity

    # --- opening --------------------------------------------------------------------------
    @classmethod
    def open(cls, root: str, identity: dict[str, Any], create: bool = True) -> "Ledger":
        """The ledger of ``identity`` under ``root`` (created when missing and ``create``)."""
        from fsspec.core import url_to_fs

        fs, base = url_to_fs(root)
        path = f"{base.rstrip('/')}/{engine_key(identity)}"
        ident_path = f"{path}/{IDENTITY_FILE}"
        if fs.exists(ident_path):
            stored = _identity_doc(fs, ident_path, root)
            if stored.get("schema") != SCHEMA or stored.get("keys_version") != KEYS_VERSION:
                raise ConfigError(f"ledger {root}: {ident_path} was written by another harness version")
        elif create:
            try:
                fs.makedirs(path, exist_ok=True)
            except (FileExistsError, NotADirectoryError) as exc:  # a file where a folder must be
                raise ConfigError(f"ledger {root}: cannot hold a ledger ({exc.strerror}: {exc.filename})") from None
            _atomic(fs, ident_path, json.dumps({"schema": SCHEMA, "keys_version": KEYS_VERSION,
                                                "engine_key": engine_key(identity), "identity": identity},
                                               indent=1, default=str).encode())
        else:
            raise ConfigError(f"ledger {root}: no ledger for this reference ({engine_key(identity)})")
        return cls(fs, path, identity)

    @classmethod
    def folders(cls, root: str) -> list[dict[str, Any]]:
        """Every ledger under ``root``: its identity file's contents and its folder."""
        from fsspec.core import url_to_fs

        fs, base = url_to_fs(root)
        out = []
        for ident in sorted(fs.glob(f"{base.rstrip('/')}/*/{IDENTITY_FILE}")):
            out.append({**_identity_doc(fs, ident, root), "folder": ident.rsplit("/", 1)[0]})
        return out

    # --- reading and writing --------------------------------------------------------------
    def _parts(self, partition: str | None = None) -> list[str]:
        pattern = f"{self.path}/{partition or 'shard=*'}/part-*.parquet"
        return sorted(self.fs.glob(pattern))

    def _relative(self, part: str) -> str:
        return part[len(self.path) + 1:] if part.startswith(self.path + "/") else part

    def _read_part(self, part: str):
        """The part's table and size once its bytes hash to its sidecar and it is a ledger
        part; ``_Unusable`` (why) or ``_Vanished`` otherwise. One read: the bytes hashed are
        the bytes parsed."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            data = self.fs.cat_file(part)
        except FileNotFoundError:
            raise _Vanished() from None
        except Exception as exc:  # every fsspec backend has its own errors
            raise _Unusable(f"unreadable ({type(exc).__name__}: {exc})") from None
        try:
            sidecar = self.fs.cat_file(part + CHECKSUM_SUFFIX)
        except FileNotFoundError:
            if not _exists(self.fs, part):  # compacted away since it was read: not corruption
                raise _Vanished() from None
            raise _Unusable("no checksum file (written by an older harness, or by hand)") from None
        except Exception as exc:
            raise _Unusable(f"checksum file unreadable ({type(exc).__name__}: {exc})") from None
        recorded = (sidecar.split() or [b""])[0].decode("ascii", "replace").lower()
        actual = hashlib.sha256(data).hexdigest()
        if actual != recorded:
            raise _Unusable(f"checksum mismatch: {len(data):,} bytes hash to {actual[:16]}, the sidecar records "
                            f"{recorded[:16] or 'nothing'} (truncated or altered)")
        try:
            # the plain file reader on this thread: the dataset scanner's background threads
            # can abort the interpreter at exit (apache/arrow#34314)
            table = pq.ParquetFile(pa.BufferReader(data)).read(use_threads=False)
        except Exception as exc:  # pyarrow's ArrowInvalid and friends
            raise _Unusable(f"not a readable Parquet file ({type(exc).__name__}: {exc})") from None
        _, schema = _pa()
        if not table.schema.equals(schema):
            raise _Unusable(f"not a ledger part (columns {', '.join(f'{f.name}: {f.type}' for f in table.schema)})")
        return table, len(data)

    def _tables(self, partition: str | None, bad: list[BadPart] | None):
        """``(part, table, bytes)`` for every usable part (of one partition, or all), in name order;
        the others are appended to ``bad``. Never raises for what it finds in the folder."""
        try:
            listed = self._parts(partition)
        except Exception as exc:  # a remote listing that failed: nothing of it is used
            if bad is not None:
                bad.append(BadPart(partition or "*", f"listing failed ({type(exc).__name__}: {exc})"))
            return
        for part in listed:
            try:
                yield (part, *self._read_part(part))
            except _Vanished:
                continue
            except _Unusable as why:
                if bad is not None:
                    bad.append(BadPart(self._relative(part), str(why)))

    def lookup(self, partition: str, bad: list[BadPart] | None = None) -> "PartitionEntries":
        """Every entry of a partition's usable parts (later parts win where one input repeats);
        the parts skipped are appended to ``bad``."""
        keys, digests, lengths = [], [], []
        for _, table, _ in self._tables(partition, bad):
            for column, into in zip(COLUMNS, (keys, digests, lengths)):
                into.append(table.column(column).combine_chunks())
        return PartitionEntries(b"".join(_fixed_bytes(k) for k in keys), b"".join(_fixed_bytes(d) for d in digests),
                                np.concatenate([_lengths(n) for n in lengths]) if lengths
                                else np.zeros(0, dtype=np.int64))

    def append(self, partition: str, entries: Iterable[Entry]) -> int:
        """Write ``entries`` as a new part of a partition: its checksum first, then the part,
        renamed into place (atomically); how many."""
        import pyarrow.parquet as pq

        rows = list(entries)
        if not rows:
            return 0
        pa, schema = _pa()
        keys, digests, lengths = zip(*rows)
        table = pa.table([pa.array(keys, pa.binary(16)), pa.array(digests, pa.binary(16)),
                          pa.array(lengths, pa.uint32())], schema=schema)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        data = sink.getvalue().to_pybytes()
        folder = f"{self.path}/{partition}"
        self.fs.makedirs(folder, exist_ok=True)
        name = f"part-{uuid.uuid4().hex}.parquet"
        _atomic(self.fs, f"{folder}/{name}{CHECKSUM_SUFFIX}", checksum_line(data, name))
        tmp = f"{folder}/.tmp-{uuid.uuid4().hex}.parquet"
        with self.fs.open(tmp, "wb") as fh:
            fh.write(data)
        self.fs.mv(tmp, f"{folder}/{name}")
        return len(rows)

    def _remove(self, part: str) -> None:
        """A part, then its sidecar (a reader never sees a part without its checksum)."""
        self.fs.rm(part)
        try:
            self.fs.rm(part + CHECKSUM_SUFFIX)
        except FileNotFoundError:
            pass

    # --- maintenance ----------------------------------------------------------------------
    def _partitions(self) -> list[str]:
        return sorted({p.rsplit("/", 2)[-2] for p in self._parts()})

    def stats(self) -> LedgerStats:
        """Entries, partitions, parts and bytes; conflicts and duplicates among the usable
        parts; every bad part (verified checksums)."""
        partitions = self._partitions()
        entries = conflicts = duplicates = size = parts = 0
        bad: list[BadPart] = []
        for partition in partitions:
            seen: dict[bytes, bytes] = {}
            before = len(bad)
            for _, table, nbytes in self._tables(partition, bad):
                parts += 1
                size += nbytes
                for key, digest in zip(table.column("input_key").to_pylist(), table.column("ids_digest").to_pylist()):
                    entries += 1
                    if key not in seen:
                        seen[key] = digest
                    elif seen[key] != digest:
                        conflicts += 1
                    else:
                        duplicates += 1
            parts += len(bad) - before
        return LedgerStats(entries, len(partitions), parts, size, conflicts, duplicates, bad)

    def compact(self) -> tuple[int, int, list[BadPart]]:
        """Merge each partition's usable parts into one, without duplicates; (parts before,
        after, bad parts). A partition with conflicting entries is left as it is, and so is
        every bad part (``check`` reports them; remove them by hand once understood)."""
        before = after = 0
        bad: list[BadPart] = []
        for partition in self._partitions():
            skipped = len(bad)
            tables = list(self._tables(partition, bad))
            skipped = len(bad) - skipped
            before += len(tables) + skipped
            merged: dict[bytes, tuple[bytes, int]] = {}
            conflict = False
            for _, table, _ in tables:
                for key, digest, length in zip(*(table.column(c).to_pylist() for c in COLUMNS)):
                    if key in merged and merged[key][0] != digest:
                        conflict = True
                    merged[key] = (digest, length)
            if conflict or len(tables) <= 1:
                after += len(tables) + skipped
                continue
            self.append(partition, ((k, d, n) for k, (d, n) in merged.items()))
            for part, _, _ in tables:
                self._remove(part)
            after += 1 + skipped
        return before, after, bad


def _exists(fs, path: str) -> bool:
    try:
        return bool(fs.exists(path))
    except Exception:  # a remote that cannot say: treat the part as there (and so as unchecked)
        return True


def _identity_doc(fs, path: str, root: str) -> dict[str, Any]:
    try:
        doc = json.loads(fs.cat_file(path))
    except Exception as exc:  # truncated, not JSON, unreadable
        raise ConfigError(f"ledger {root}: {path} is unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"ledger {root}: {path} is not a ledger identity file")
    return doc


def _atomic(fs, path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with fs.open(tmp, "wb") as fh:
        fh.write(data)
    fs.mv(tmp, path)
