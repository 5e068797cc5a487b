"""What can be said of an engine from its capabilities and identity, without running it."""

from __future__ import annotations


def is_byte_level(engine) -> bool:
    """Byte-level BPE engines decode to exactly the input bytes; SentencePiece-style ones need not.
    ``engine`` is an engine or an executor: both declare capabilities and an identity."""
    if not engine.capabilities.decode:
        return False
    from verify.vocab.known import KNOWN_VOCABS

    known = KNOWN_VOCABS.get(engine.identity().vocab or "")
    return getattr(known, "kind", None) != "sentencepiece"
