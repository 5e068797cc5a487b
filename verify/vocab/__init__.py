"""Vocabularies: the known ones (pinned SHA-256), the resolver that finds them, and ``load``,
the API a team's own engine builds on (path, pattern, special tokens, the reference's encoder)."""

from verify.vocab.known import KNOWN_VOCABS, VocabSpec
from verify.vocab.resolver import ResolvedVocab, resolve_vocab
from verify.vocab.vocabulary import Vocabulary, load

__all__ = ["KNOWN_VOCABS", "VocabSpec", "ResolvedVocab", "resolve_vocab", "Vocabulary", "load"]
