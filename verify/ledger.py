"""The reference ledger: what the reference gave, per input, so it need not encode it again.

    ledger = Ledger.open("ledgers/", reference_identity)     # a directory or an fsspec URL
    entries = ledger.lookup(partition_of(shard.id))          # input key -> (ids digest, length)
    ledger.append(partition_of(shard.id), new_entries)       # one Parquet part per commit

One ledger per reference identity (``keys.engine_key``: adapter, package version,
vocabulary SHA-256, output-changing options, behavioural fingerprint): any change
starts a new one, in its own folder ``<root>/<engine key>/`` with ``identity.json``.
Entries are append-only Parquet parts (``input_key``, ``ids_digest``: 16-byte
binary; ``length``: uint32), partitioned by the shard they were found in
(``shard=<hash of its base id>/part-*.parquet``), so a worker reads only the part
it needs and a cluster can share the folder. ``compact`` merges each partition's
parts into one, dropping duplicates; ``check`` finds conflicting duplicates (two
digests for one input: corruption).

How a run uses it (``verify.pipeline.records_task``): the reference encodes only
inputs without an entry; a candidate whose ids hash to the entry's digest is
verified; on a mismatch the reference encodes the input again to locate the
first difference -- and when that fresh encode disagrees with the entry, the
sample is reported as ledger corruption (``error``/``LedgerCorrupt``) and never
counted verified. Entries the reference produced are written by the driver when
the shard commits.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

import xxhash

from verify.errors import ConfigError
from verify.keys import KEYS_VERSION, engine_key

SCHEMA = "verify.ledger/1"
IDENTITY_FILE = "identity.json"

Entry = tuple[bytes, bytes, int]  # (input key, ids digest, length): keys and digests as 16 raw bytes


def _pa():
    import pyarrow as pa

    return pa, pa.schema([("input_key", pa.binary(16)), ("ids_digest", pa.binary(16)), ("length", pa.uint32())])


def partition_of(shard_id: str) -> str:
    """The partition a shard's entries live in: its id without a --limit cap, hashed (a capped
    or sampled run of a shard finds the entries of a full one)."""
    base = shard_id.split("|limit=")[0]
    return "shard=" + xxhash.xxh3_64_hexdigest(base.encode("utf-8", "surrogatepass"))


@dataclass
class LedgerStats:
    entries: int
    partitions: int
    parts: int
    bytes: int
    conflicts: int = 0  # inputs with two different digests (corruption)
    duplicates: int = 0  # inputs recorded twice with the same digest (compactable)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


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
            stored = json.loads(fs.cat_file(ident_path))
            if stored.get("schema") != SCHEMA or stored.get("keys_version") != KEYS_VERSION:
                raise ConfigError(f"ledger {root}: {ident_path} was written by another harness version")
        elif create:
            fs.makedirs(path, exist_ok=True)
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
            doc = json.loads(fs.cat_file(ident))
            out.append({**doc, "folder": ident.rsplit("/", 1)[0]})
        return out

    # --- reading and writing --------------------------------------------------------------
    def _parts(self, partition: str | None = None) -> list[str]:
        pattern = f"{self.path}/{partition or 'shard=*'}/part-*.parquet"
        return sorted(self.fs.glob(pattern))

    def lookup(self, partition: str) -> dict[bytes, tuple[bytes, int]]:
        """Every entry of a partition (later parts win where one input repeats)."""
        import pyarrow.parquet as pq

        out: dict[bytes, tuple[bytes, int]] = {}
        for part in self._parts(partition):
            with self.fs.open(part, "rb") as fh:
                table = pq.read_table(fh)
            for key, digest, length in zip(table.column("input_key").to_pylist(),
                                           table.column("ids_digest").to_pylist(),
                                           table.column("length").to_pylist()):
                out[key] = (digest, length)
        return out

    def append(self, partition: str, entries: Iterable[Entry]) -> int:
        """Write ``entries`` as a new part of a partition (atomically); how many."""
        import pyarrow.parquet as pq

        rows = list(entries)
        if not rows:
            return 0
        pa, schema = _pa()
        keys, digests, lengths = zip(*rows)
        table = pa.table([pa.array(keys, pa.binary(16)), pa.array(digests, pa.binary(16)),
                          pa.array(lengths, pa.uint32())], schema=schema)
        folder = f"{self.path}/{partition}"
        self.fs.makedirs(folder, exist_ok=True)
        final = f"{folder}/part-{uuid.uuid4().hex}.parquet"
        tmp = f"{folder}/.tmp-{uuid.uuid4().hex}.parquet"
        with self.fs.open(tmp, "wb") as fh:
            pq.write_table(table, fh)
        self.fs.mv(tmp, final)
        return len(rows)

    # --- maintenance ----------------------------------------------------------------------
    def stats(self) -> LedgerStats:
        import pyarrow.parquet as pq

        parts = self._parts()
        partitions = {p.rsplit("/", 2)[-2] for p in parts}
        entries = conflicts = duplicates = 0
        size = 0
        for partition in sorted(partitions):
            seen: dict[bytes, bytes] = {}
            for part in self._parts(partition):
                size += self.fs.size(part)
                with self.fs.open(part, "rb") as fh:
                    table = pq.read_table(fh, columns=["input_key", "ids_digest"])
                for key, digest in zip(table.column("input_key").to_pylist(), table.column("ids_digest").to_pylist()):
                    entries += 1
                    if key not in seen:
                        seen[key] = digest
                    elif seen[key] != digest:
                        conflicts += 1
                    else:
                        duplicates += 1
        return LedgerStats(entries, len(partitions), len(parts), size, conflicts, duplicates)

    def compact(self) -> tuple[int, int]:
        """Merge each partition's parts into one, without duplicates; (parts before, after).
        A partition with conflicting entries is left as it is (``check`` reports it)."""
        import pyarrow.parquet as pq

        before = after = 0
        for partition in sorted({p.rsplit("/", 2)[-2] for p in self._parts()}):
            parts = self._parts(partition)
            before += len(parts)
            merged: dict[bytes, tuple[bytes, int]] = {}
            conflict = False
            for part in parts:
                with self.fs.open(part, "rb") as fh:
                    table = pq.read_table(fh)
                for key, digest, length in zip(table.column("input_key").to_pylist(),
                                               table.column("ids_digest").to_pylist(),
                                               table.column("length").to_pylist()):
                    if key in merged and merged[key][0] != digest:
                        conflict = True
                    merged[key] = (digest, length)
            if conflict or len(parts) <= 1:
                after += len(parts)
                continue
            self.append(partition, ((k, d, n) for k, (d, n) in merged.items()))
            for part in parts:
                self.fs.rm(part)
            after += 1
        return before, after


def _atomic(fs, path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with fs.open(tmp, "wb") as fh:
        fh.write(data)
    fs.mv(tmp, path)
