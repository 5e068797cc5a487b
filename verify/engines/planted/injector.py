"""What a faulty engine injects, decided in one place: the fault configuration, its spec
spelling, and the injector that turns correct ids into faulty ones.

    faulty:INNER_SPEC?kind=KIND[&rate=R&seed=S&after=N&fault=F&unicode=CLASS@TABLE]

The spelling of every wrapper (``verify/engines/registry.py``): the target is a whole
engine spec, the query string is the wrapper's. ``kind`` is one of ``KINDS``. ``rate``
(default 1) is the share of inputs faulted (decided per input key and ``seed``); the
others get the inner engine's ids unchanged.

- token kinds (``verify.engines.planted.faults``): substitute, delete, insert, boundary;
- ``unicode``: the inner engine's vocabulary and pre-tokenizer pattern with one character
  class taken from another Unicode table (``verify.engines.planted.unicode_tables``; ``unicode=
  numbers@15.0.0`` by default): a selected input gets that engine's ids, which differ from
  the inner engine's only where the class change moves a boundary that matters;
- ``history``: stateless encodes are correct; a session is correct until its transcript
  passes ``after`` characters, and from that turn on the token that holds character
  ``after`` is corrupted with the token fault ``fault`` (default substitute). Whether a
  session is faulted is decided by the key of the transcript at the turn that crosses.

The self-test driver asks the same injector what it injected, so the engine in a worker
and the count in the driver cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence
from urllib.parse import urlencode

import numpy as np

from verify.token_diff import first_difference
from verify.errors import ConfigError
from verify.keys import input_key
from verify.engines.planted.faults import TOKEN_KINDS, Injection, TokenTable, corrupt, selected

KINDS = TOKEN_KINDS + ("unicode", "history")
ADAPTER = "faulty"
DEFAULT_UNICODE_FAULT = "numbers@15.0.0"


@dataclass(frozen=True)
class FaultConfig:
    kind: str
    rate: float = 1.0
    seed: int = 0
    after: int = 1000  # history: characters of transcript before the session goes wrong
    fault: str = "substitute"  # history: the token fault that corrupts it
    unicode: str = DEFAULT_UNICODE_FAULT  # unicode: CLASS@TABLE (unicode_tables.TableFault kind and table)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ConfigError(f"unknown fault kind '{self.kind}' (known: {', '.join(KINDS)})")
        if not 0 <= self.rate <= 1:
            raise ConfigError(f"fault rate must be within [0, 1], got {self.rate}")
        if self.fault not in TOKEN_KINDS:
            raise ConfigError(f"history fault must be one of {', '.join(TOKEN_KINDS)}, got '{self.fault}'")
        if self.after < 0:
            raise ConfigError(f"after must be at least 0, got {self.after}")
        if self.unicode.count("@") != 1:
            raise ConfigError(f"unicode fault is CLASS@TABLE (e.g. {DEFAULT_UNICODE_FAULT}), got '{self.unicode}'")

    def options(self) -> dict:
        """The options that matter for this kind (what the spec spells and the identity records)."""
        out = {"rate": self.rate, "seed": self.seed}
        if self.kind == "history":
            out.update(after=self.after, fault=self.fault)
        if self.kind == "unicode":
            out["unicode"] = self.unicode
        return out

    def spec(self, inner: str) -> str:
        if "?" in inner:
            raise ConfigError(f"cannot wrap '{inner}': its options would read as the fault's; name it in "
                              "engines/*.toml and wrap that name")
        return f"{ADAPTER}:{inner}?{urlencode({'kind': self.kind, **self.options()}, safe='@')}"


OPTION_TYPES = {"kind": str, "rate": float, "seed": int, "after": int, "fault": str, "unicode": str}


def config_from(options: dict, where: str) -> FaultConfig:
    """The configuration a ``faulty:`` spec's options name (``kind`` required)."""
    unknown = sorted(set(options) - set(OPTION_TYPES))
    if unknown:
        raise ConfigError(f"{where}: unknown fault option(s) {', '.join(unknown)} "
                          f"(known: {', '.join(OPTION_TYPES)})")
    if "kind" not in options:
        raise ConfigError(f"{where}: say which fault with ?kind=KIND (one of {', '.join(KINDS)})")
    try:
        values = {name: OPTION_TYPES[name](value) for name, value in options.items()}
    except ValueError as exc:
        raise ConfigError(f"{where}: bad fault option value ({exc})") from None
    return FaultConfig(**values)


class FaultInjector:
    """Correct ids in, faulty ids and what was injected out (``None`` where nothing was)."""

    def __init__(self, config: FaultConfig, table: TokenTable, vocab: str | None = None):
        self.config = config
        self.table = table
        self.planted = None
        if config.kind == "unicode":
            from verify.engines.planted.unicode_tables import TableFault, planted_engine

            if vocab is None:
                raise ConfigError("a unicode fault needs an inner engine with a known vocabulary")
            cls, _, table_name = config.unicode.partition("@")
            self.planted = planted_engine(TableFault(vocab, cls, table_name))

    def apply(self, samples: Sequence, correct: Sequence[np.ndarray]) -> list[tuple[np.ndarray, Injection | None]]:
        c = self.config
        if c.kind == "history":  # stateless encodes stay correct
            return [(ids, None) for ids in correct]
        keys = [input_key(s.segments) for s in samples]
        chosen = [i for i, key in enumerate(keys) if selected(c.kind, c.seed, key, c.rate)]
        out: list[tuple[np.ndarray, Injection | None]] = [(ids, None) for ids in correct]
        if c.kind == "unicode":
            planted = self.planted.encode_batch([samples[i] for i in chosen]) if chosen else []
            for i, ids in zip(chosen, planted):
                index = first_difference(correct[i], ids)
                if index is not None:
                    same = self.table.decode(ids) == self.table.decode(correct[i])
                    out[i] = (ids, Injection("unicode", index, tuple(int(x) for x in correct[i][index:index + 2]),
                                             tuple(int(x) for x in ids[index:index + 2]), same))
            return out
        for i in chosen:
            changed = corrupt(c.kind, correct[i], self.table, c.seed, keys[i])
            if changed is not None:
                out[i] = changed
        return out

    def session_ids(self, transcript: Sequence, correct: np.ndarray,
                    crossing_key: str | None) -> tuple[np.ndarray, Injection | None]:
        """A history fault: the session's ids for a transcript (coalesced segments) whose
        correct ids are ``correct``; ``crossing_key`` is the key of the transcript at the
        turn that first passed ``after`` characters (``None`` while it has not)."""
        c = self.config
        if crossing_key is None or not selected("history", c.seed, crossing_key, c.rate):
            return correct, None
        text = "".join(s.text for s in transcript)
        at_byte = len(text[:c.after].encode("utf-8"))
        starts = self.table.starts(correct)
        position = int(np.searchsorted(starts, at_byte, side="right")) - 1
        changed = corrupt(c.fault, correct, self.table, c.seed, crossing_key, at=max(position, 0))
        return changed if changed is not None else (correct, None)


