"""``hf:NAME_OR_PATH[:config][:split]`` corpora, read through the ``datasets`` library.

NAME_OR_PATH is one of
  a hub dataset name     streamed (``load_dataset(..., streaming=True)``): needs a network
  a saved directory      written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``:
                         memory-mapped Arrow files, offline
  a data folder          anything ``load_dataset(path)`` loads (Parquet, JSONL, CSV, text
                         files, a README's configs): streamed, offline

Shards: a saved dataset is cut into one contiguous shard per Arrow file
(``Dataset.shard(n, i, contiguous=True)``), a streamed one into its stream shards
(``IterableDataset.n_shards``, ``.shard(n, i)``: one data file each). A shard's
descriptor names the dataset, config, split, index and count, so any machine that can
load the dataset re-creates it. No split given: the only one, else ``train``.

Sample ids: the record's ``--id-field`` when it has one, else ``hf:NAME/CONFIG/SPLIT#ROW``
(a saved dataset: ROW counts the whole split) or ``hf:NAME/CONFIG/SPLIT/shard-I#ROW``
(streamed: ROW counts within stream shard I). A null or non-text text field is a bad
record, as in every other source.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator

from verify.corpora import files
from verify.corpora.shards import Shard
from verify.corpora.source import Source
from verify.errors import ConfigError, CorpusError
from verify.sample import BadRecord, Sample

BATCH_ROWS = 1024


@dataclass(frozen=True, kw_only=True)
class HfShard(Shard):
    """Stream shard (or Arrow file) ``index`` of ``count`` of a dataset's split. The document
    keeps them as ``extra`` ``shard`` and ``shards``, with ``config``, ``split`` and ``saved``."""

    kind = "hf"
    path: str  # the dataset: a hub name or an absolute path
    text_field: str = "text"
    id_field: str = "id"
    config: str | None
    split: str
    saved: bool
    count: int = field(metadata={"key": "shards"})
    index: int = field(metadata={"key": "shard"})

    @property
    def label(self) -> str:
        """``hf:NAME/CONFIG/SPLIT``: what sample ids without an id field start with."""
        return f"hf:{self.path}/{self.config or 'default'}/{self.split}"

    @property
    def base_id(self) -> str:
        return f"{self.label}/shard-{self.index}-of-{self.count}"

    def read(self) -> Iterator[Sample | BadRecord]:
        return read_hf_shard(self)


def parse(value: str) -> tuple[str, str | None, str | None]:
    """``hf:NAME[:config][:split]`` -> (name or absolute path, config, split); empty parts are None."""
    parts = value[len("hf:"):].split(":")
    if not parts[0] or len(parts) > 3:
        raise ConfigError(f"'{value}': use hf:NAME_OR_PATH[:config][:split]")
    name, config, split = (parts + [None, None])[:3]
    local = os.path.expanduser(name)
    if os.path.exists(local):
        name = os.path.abspath(local)
    return name, config or None, split or None


def is_saved(path: str) -> bool:
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, f))
                                       for f in ("state.json", "dataset_dict.json"))


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _pick_split(loaded, split: str | None, label: str):
    """A dataset from what ``load_*`` returned (a dataset, or a dict of splits)."""
    if not hasattr(loaded, "keys"):
        return loaded, split or str(getattr(loaded, "split", None) or "train")
    splits = list(loaded.keys())
    if split is None:
        split = splits[0] if len(splits) == 1 else "train" if "train" in splits else None
        if split is None:
            raise ConfigError(f"{label}: several splits ({', '.join(splits)}); name one: {label}::SPLIT")
    if split not in splits:
        raise ConfigError(f"{label}: no split '{split}' (splits: {', '.join(splits)})")
    return loaded[split], split


@lru_cache(maxsize=4)
def load_split(name: str, config: str | None, split: str | None, saved: bool):
    """The dataset of one split (memoised per process: every shard of a run shares it)."""
    try:
        import datasets
    except ImportError:
        raise ConfigError("hf: corpora need the datasets library: pip install 'verify-tokenizers[hf]'") from None

    if saved:
        return _pick_split(datasets.load_from_disk(name), split, f"hf:{name}")
    return _pick_split(datasets.load_dataset(name, config, split=split, streaming=True), split, f"hf:{name}")


def shard_count(dataset, saved: bool) -> int:
    return max(1, len(dataset.cache_files)) if saved else max(1, int(dataset.n_shards))


def hf_source(value: str, text_field: str, id_field: str, name: str | None = None) -> Source:
    path, config, split = parse(value)
    saved = is_saved(path)
    try:
        dataset, split = load_split(path, config, split, saved)
    except ConfigError:
        raise
    except Exception as exc:  # datasets' own errors: not found, no network, config missing
        raise CorpusError(f"{value}: cannot load the dataset ({_one_line(exc)})") from None
    columns = list(dataset.column_names or [])
    if columns and text_field not in columns:
        raise CorpusError(f"{value}: no column '{text_field}' (columns: {', '.join(columns)}; use --text-field)")
    count = shard_count(dataset, saved)
    shards = [HfShard(name or value, path=path, text_field=text_field, id_field=id_field, config=config,
                      split=split, saved=saved, count=count, index=i) for i in range(count)]
    description: dict[str, Any] = {"kind": "hf", "dataset": path, "config": config or "default", "split": split,
                                   "mode": "saved" if saved else "streaming", "text_field": text_field,
                                   "id_field": id_field}
    if saved:
        description["rows"] = len(dataset)
    return Source(name or value, description, shards)


def read_hf_shard(shard: HfShard) -> Iterator[Sample | BadRecord]:
    index, count, saved = shard.index, shard.count, shard.saved
    prefix = f"{shard.label}#" if saved else f"{shard.label}/shard-{index}#"
    row = 0
    try:
        dataset, _ = load_split(shard.path, shard.config, shard.split, saved)
        part = dataset.shard(count, index, contiguous=True)
        if saved:  # ids count the whole split: this shard starts after the ones before it
            row = sum(len(dataset.shard(count, j, contiguous=True)) for j in range(index))
        names = list(part.column_names or [])
        wanted = [c for c in (shard.text_field, shard.id_field) if c in names]
        if names and wanted:
            part = part.select_columns(list(dict.fromkeys(wanted)))
        for batch in part.iter(batch_size=BATCH_ROWS):
            texts = batch.get(shard.text_field)
            size = len(next(iter(batch.values()))) if batch else 0
            ids = batch.get(shard.id_field) if shard.id_field != shard.text_field else None
            for j in range(size):
                position = f"{prefix}{row}"
                row += 1
                if texts is None:
                    yield BadRecord(position, f"field '{shard.text_field}' is missing (use --text-field)")
                    continue
                yield files.column_record(position, texts[j], ids[j] if ids is not None else None,
                                          shard.text_field)
    except Exception as exc:  # a shard that cannot be loaded or stops being readable
        yield BadRecord(f"{prefix}{row}", f"dataset unreadable from here on ({_one_line(exc)})")
