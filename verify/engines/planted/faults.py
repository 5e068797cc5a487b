"""Token-level faults for the self-test: one change to a correct id sequence, chosen
deterministically from the input's key and a seed.

    table = token_table("cl100k_base")                  # the vocabulary's token bytes
    changed = corrupt("boundary", ids, table, seed=0, key=input_key(sample.segments))
    if changed is not None:
        faulty_ids, injection = changed

Kinds (``TOKEN_KINDS``):

- ``substitute``: one token replaced by another ordinary token of the vocabulary;
- ``delete``: one token dropped;
- ``insert``: one ordinary token inserted;
- ``boundary``: two adjacent tokens re-split at another byte boundary into two tokens
  that are both in the vocabulary. The bytes, the decoded text and the token count stay
  the same; only the ids show it. ``None`` when no adjacent pair of the input admits
  another split.

Every choice (whether an input is faulted, where, which id) is a function of
``(seed, kind, input key)`` only, so the engine that injects a fault in a worker and the
self-test that counts it in the driver agree without talking to each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import xxhash

from verify.engines.base import TOKEN_DTYPE

TOKEN_KINDS = ("substitute", "delete", "insert", "boundary")


def unit(seed: int, kind: str, key: str, salt: str = "") -> float:
    """A number in [0, 1) that depends only on its arguments (xxh3-64)."""
    digest = xxhash.xxh3_64_intdigest(f"{seed}\x00{kind}\x00{key}\x00{salt}".encode("utf-8", "surrogatepass"))
    return digest / 2.0 ** 64


def selected(kind: str, seed: int, key: str, rate: float) -> bool:
    """Whether the input with ``key`` is one a fault of ``kind`` is injected into."""
    return unit(seed, kind, key, "select") < rate


def _pick(seed: int, kind: str, key: str, salt: str, n: int) -> int:
    return min(int(unit(seed, kind, key, salt) * n), n - 1)


@dataclass(frozen=True)
class TokenTable:
    """Every token's bytes, which ids are special, and the ordinary ids by their bytes."""

    tokens: tuple[bytes, ...]
    special: frozenset[int]
    ordinary: np.ndarray  # ids with bytes that are not special, ascending
    by_bytes: dict[bytes, int]
    lengths: np.ndarray  # byte length of each token

    def starts(self, ids) -> np.ndarray:
        """Start byte of each token of ``ids``, and the total length last."""
        return np.concatenate(([0], np.cumsum(self.lengths[np.asarray(ids, dtype=np.int64)])))

    @classmethod
    def from_tokens(cls, tokens, special_ids) -> "TokenTable":
        special = frozenset(int(i) for i in special_ids)
        ordinary = [i for i, tok in enumerate(tokens) if tok and i not in special]
        by_bytes: dict[bytes, int] = {}
        for i in ordinary:
            by_bytes.setdefault(tokens[i], i)
        lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
        return cls(tuple(tokens), special, np.asarray(ordinary, dtype=TOKEN_DTYPE), by_bytes, lengths)

    def pieces(self, ids) -> list[bytes]:
        return [self.tokens[int(i)] if int(i) < len(self.tokens) else b"" for i in ids]

    def decode(self, ids) -> bytes:
        return b"".join(self.pieces(ids))

    def is_ordinary(self, token_id: int) -> bool:
        return token_id < len(self.tokens) and token_id not in self.special and bool(self.tokens[token_id])


@lru_cache(maxsize=8)
def token_table(target: str) -> TokenTable:
    """The table of a vocabulary ``verify.vocab.inspect`` can read (a known name or a file)."""
    from verify.errors import ConfigError
    from verify.vocab.inspect import vocabulary_view

    try:
        view = vocabulary_view(target)
    except Exception as exc:  # any reason the vocabulary cannot be read is a configuration problem here
        raise ConfigError(f"cannot read the vocabulary '{target}' to plant faults in ({exc})") from None
    return TokenTable.from_tokens(view.tokens, view.special.values())


@dataclass(frozen=True)
class Injection:
    """What one fault changed: ids ``before`` at ``position`` became ``after``."""

    kind: str
    position: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    bytes_preserved: bool  # the faulty ids decode to the same bytes: only an id comparison sees it

    def as_dict(self) -> dict:
        return {"kind": self.kind, "position": self.position, "before": list(self.before),
                "after": list(self.after), "bytes_preserved": self.bytes_preserved}


def corrupt(kind: str, ids: np.ndarray, table: TokenTable, seed: int, key: str,
            at: int | None = None) -> tuple[np.ndarray, Injection] | None:
    """``ids`` with one fault of ``kind``, or ``None`` when the input admits none. ``at``
    fixes the position (the history fault) instead of drawing it."""
    ids = np.asarray(ids, dtype=TOKEN_DTYPE)
    n = int(ids.size)
    if kind == "boundary":
        return _shift_boundary(ids, table, seed, key, at)
    if kind == "insert":
        position = _pick(seed, kind, key, "position", n + 1) if at is None else min(at, n)
        new = _other_id(table, seed, kind, key, avoid=int(ids[position]) if position < n else None)
        faulty = np.insert(ids, position, new)
        before, after = (), (new,)
    elif n == 0:
        return None
    else:
        position = _pick(seed, kind, key, "position", n) if at is None else min(at, n - 1)
        old = int(ids[position])
        if kind == "substitute":
            new = _other_id(table, seed, kind, key, avoid=old)
            faulty = ids.copy()
            faulty[position] = new
            before, after = (old,), (new,)
        elif kind == "delete":
            faulty = np.delete(ids, position)
            before, after = (old,), ()
        else:
            raise ValueError(f"unknown token fault kind '{kind}' (known: {', '.join(TOKEN_KINDS)})")
    preserved = table.decode(before) == table.decode(after)  # the rest of the ids is unchanged
    return faulty.astype(TOKEN_DTYPE), Injection(kind, position, before, after, preserved)


def _other_id(table: TokenTable, seed: int, kind: str, key: str, avoid: int | None) -> int:
    """An ordinary id drawn from the key, other than ``avoid`` and with other bytes."""
    count = table.ordinary.size
    start = _pick(seed, kind, key, "id", count)
    avoid_bytes = table.tokens[avoid] if avoid is not None and avoid < len(table.tokens) else None
    for step in range(count):
        candidate = int(table.ordinary[(start + step) % count])
        if candidate != avoid and table.tokens[candidate] != avoid_bytes:
            return candidate
    raise ValueError("the vocabulary has no second ordinary token")


def resplits(table: TokenTable, first: int, second: int) -> list[tuple[int, int]]:
    """Every other split of the bytes of two adjacent tokens into two vocabulary tokens."""
    if not (table.is_ordinary(first) and table.is_ordinary(second)):
        return []
    joined = table.tokens[first] + table.tokens[second]
    cut = len(table.tokens[first])
    out = []
    for k in range(1, len(joined)):
        if k == cut:
            continue
        left, right = table.by_bytes.get(joined[:k]), table.by_bytes.get(joined[k:])
        if left is not None and right is not None:
            out.append((left, right))
    return out


def _shift_boundary(ids: np.ndarray, table: TokenTable, seed: int, key: str,
                    at: int | None) -> tuple[np.ndarray, Injection] | None:
    pairs = int(ids.size) - 1
    if pairs < 1:
        return None
    start = _pick(seed, "boundary", key, "position", pairs) if at is None else min(at, pairs - 1)
    for step in range(pairs):
        i = (start + step) % pairs
        options = resplits(table, int(ids[i]), int(ids[i + 1]))
        if options:
            left, right = options[_pick(seed, "boundary", key, "split", len(options))]
            faulty = ids.copy()
            faulty[i], faulty[i + 1] = left, right
            return faulty, Injection("boundary", i, (int(ids[i]), int(ids[i + 1])), (left, right), True)
    return None
