"""Vocabularies: the known ones (pinned SHA-256) and the resolver that finds them."""

from verify.vocab.known import KNOWN_VOCABS, VocabSpec
from verify.vocab.resolver import ResolvedVocab, resolve_vocab

__all__ = ["KNOWN_VOCABS", "VocabSpec", "ResolvedVocab", "resolve_vocab"]
