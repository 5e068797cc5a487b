"""Corpus sources: where samples come from. See ``verify.corpus.sources.open_corpus``."""

from verify.corpus.sources import Source, open_corpus

__all__ = ["Source", "open_corpus"]
