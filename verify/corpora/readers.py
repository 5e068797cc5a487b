"""Reading local and generated shards: a descriptor -> its records (samples and bad
records), in order. The table of every kind's reader is ``verify.corpora.shards.READERS``."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from verify.corpora import files, remote
from verify.sample import BadRecord, Sample


def read_local(shard) -> Iterator[Sample | BadRecord]:
    path = shard.path if remote.is_url(shard.path) else Path(shard.path)
    if shard.kind == "file":
        return files.read_file(path, shard.text_field, shard.id_field)
    if shard.kind == "byte-range":
        rng = (shard.start, shard.stop)
        if files.base_suffix(path) in files.TEXT_SUFFIXES:
            return files.read_text(path, rng)
        return files.read_jsonl(path, shard.text_field, shard.id_field, rng)
    return files.read_parquet(path, shard.text_field, shard.id_field, (shard.start, shard.stop))


def read_generated(shard) -> Iterator[Sample]:
    from verify.corpora.generated import generate_one

    seed, documents, long_documents = shard.generator
    for index in range(shard.start, shard.stop):
        yield generate_one(seed, index, documents, long_documents)
