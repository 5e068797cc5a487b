"""Corpus sources: where samples come from. See ``verify.corpora.sources.open_corpus``."""

from verify.corpora.sources import Source, open_corpus

__all__ = ["Source", "open_corpus"]
