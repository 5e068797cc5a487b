"""Corpus sources: where samples come from. See ``verify.corpora.sources.open_corpus``.

Importing the package imports every module that defines a corpus shard kind
(``verify.corpora.shards``, ``hf_datasets``, ``traces.sources``), so ``Shard.from_json`` knows
every corpus kind wherever a plan is read back."""

from verify.corpora import hf_datasets, traces  # noqa: F401  (their shard classes join the registry)
from verify.corpora.sources import Source, open_corpus

__all__ = ["Source", "open_corpus"]
