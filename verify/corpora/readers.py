"""Reading a shard: its descriptor -> its records (samples and bad records), in order."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from verify.corpora import files, remote
from verify.sample import BadRecord, Sample


def read_shard(shard) -> Iterator[Sample | BadRecord]:
    if shard.kind == "generated":
        return _generated(shard)
    if shard.kind in ("traces", "agent"):  # sessions, not samples: replayed turn by turn
        from verify.corpora.traces.sources import read_trace_shard

        return read_trace_shard(shard)
    if shard.kind == "shadow":  # production shadow records (verify shadow), sessions whole
        from verify.corpora.shadow import read_shadow_shard

        return read_shadow_shard(shard)
    if shard.kind == "hf":
        from verify.corpora.hf_datasets import read_hf_shard

        return read_hf_shard(shard)
    path = shard.path if remote.is_url(shard.path) else Path(shard.path)
    if shard.kind == "file":
        return files.read_file(path, shard.text_field, shard.id_field)
    if shard.kind == "byte-range":
        rng = (shard.start, shard.stop)
        if files.base_suffix(path) in files.TEXT_SUFFIXES:
            return files.read_text(path, rng)
        return files.read_jsonl(path, shard.text_field, shard.id_field, rng)
    if shard.kind == "row-groups":
        return files.read_parquet(path, shard.text_field, shard.id_field, (shard.start, shard.stop))
    raise ValueError(f"unknown shard kind {shard.kind!r}")


def _generated(shard) -> Iterator[Sample]:
    from verify.corpora.generated import generate_one

    seed, documents, long_documents = shard.generator
    for index in range(shard.start, shard.stop):
        yield generate_one(seed, index, documents, long_documents)
