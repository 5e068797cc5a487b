"""One engine's vocabulary, read from the engine: every ordinary token's bytes by id and its
added/special tokens by text.

    vocab = vocabulary_of(parse_spec("tiktoken:cl100k_base"))   # from its files, else from its adapter
    vocab = engine_vocabulary(engine)               # from an adapter object already built

The executor protocol has no call that lists a vocabulary, so ``engine_vocabulary`` asks
the adapter object: a method ``vocabulary() -> list[bytes]`` (+ ``added_tokens() ->
dict[str, int]``) when it has one, else the tables of the tiktoken and tokenizers
adapters, else ``token_bytes`` id by id until a long run of ids has no token. It lives
with the engines because engines need it too (the repair wrapper's longest token); the
vocabulary hunts read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verify.engines import build_engine
from verify.engine_spec import PLUGIN_ADAPTERS, EngineSpec
from verify.vocab.inspect import vocabulary_view

PROBE_MISSES = 4096  # the generic probe stops after this many consecutive ids without a token


@dataclass
class Vocabulary:
    """The tokens of one engine: ordinary ones by id, added/special ones by text."""

    spec: str
    size: int  # one past the largest id
    tokens: dict[int, bytes]  # ordinary tokens (added/special ones excluded)
    added: dict[str, int]  # added/special token text -> id
    special: set[str] = field(default_factory=set)  # the added tokens marked special (all, for tiktoken)
    how: str = ""  # how the vocabulary was read
    vocab_name: str | None = None  # a vocabulary this harness knows (its patterns give the contexts)

    def describe(self) -> dict[str, Any]:
        return {"size": self.size, "ordinary": len(self.tokens), "added": len(self.added),
                "special": len(self.special), "read_from": self.how}


def vocabulary_of(spec: EngineSpec) -> Vocabulary:
    """``spec``'s vocabulary: read from its files when it names a vocabulary this harness
    knows (``verify.vocab.inspect``), else from its adapter built in this process."""
    if spec.adapter not in PLUGIN_ADAPTERS:
        try:
            view = vocabulary_view(spec.target, spec.options)
        except Exception:  # not a vocabulary file of ours (a hub id, a plugin target): ask the adapter
            view = None
        if view is not None:
            ids = set(view.special.values())
            tokens = {i: t for i, t in enumerate(view.tokens) if t and i not in ids}
            return Vocabulary(spec, len(view.tokens), tokens, dict(view.special), set(view.special),
                              f"{view.kind} file ({view.name})", spec.target)
    engine = build_engine(spec)
    try:
        return engine_vocabulary(engine)
    finally:
        engine.close()


def engine_vocabulary(engine) -> Vocabulary:
    """The vocabulary of an adapter object (see the module docstring for the order asked)."""
    for obj in (engine, getattr(engine, "engine", None)):  # the python adapter wraps its plugin object
        listing = getattr(obj, "vocabulary", None)
        if callable(listing):
            added_of = getattr(obj, "added_tokens", None)
            added = dict(added_of()) if callable(added_of) else {}
            tokens = {i: bytes(b) for i, b in enumerate(listing()) if b and i not in set(added.values())}
            return Vocabulary(engine.spec, _size(tokens, added), tokens, added, set(added), "vocabulary()")
    encoding = getattr(engine, "encoding", None)
    if encoding is not None and hasattr(encoding, "_mergeable_ranks"):  # tiktoken
        added = dict(encoding._special_tokens)
        tokens = {rank: b for b, rank in encoding._mergeable_ranks.items()}
        return Vocabulary(engine.spec, encoding.n_vocab, tokens, added, set(added), "tiktoken ranks")
    tokenizer = getattr(engine, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "get_added_tokens_decoder"):  # HuggingFace tokenizers
        decoder = tokenizer.get_added_tokens_decoder()
        added = {t.content: i for i, t in decoder.items()}
        special = {t.content for t in decoder.values() if t.special}
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        ids = [i for i in range(size) if i not in decoder]
        tokens = {i: b for i, b in zip(ids, engine.token_bytes(ids)) if b}
        return Vocabulary(engine.spec, _size(tokens, added, size), tokens, added, special, "tokenizers vocabulary")
    return _probe(engine)


def _size(tokens: dict[int, bytes], added: dict[str, int], at_least: int = 0) -> int:
    return max([at_least, *(i + 1 for i in tokens), *(i + 1 for i in added.values())])


def _probe(engine) -> Vocabulary:
    """``token_bytes`` id by id, for adapters that can decode but cannot list their vocabulary."""
    if not engine.capabilities.decode:
        raise ValueError(f"{engine.spec}: cannot list its vocabulary (no vocabulary(), cannot decode)")
    tokens: dict[int, bytes] = {}
    i = misses = 0
    while misses < PROBE_MISSES:
        try:
            (b,) = engine.token_bytes([i])
        except Exception:
            b = b""
        if b:
            tokens[i], misses = b, 0
        else:
            misses += 1
        i += 1
    return Vocabulary(engine.spec, _size(tokens, {}), tokens, {}, set(), "token_bytes probe")
