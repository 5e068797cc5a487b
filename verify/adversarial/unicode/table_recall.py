"""Recall of the Unicode sweep on realistic planted table faults.

For one ``TableFault`` (the real reference with one class from another table): the
code points whose class changed; a deterministic sample of them; which of those
some context reveals at all (``observability``, a large random battery); and which
the sweep reports when it sweeps the sample with its own probes. Recall is the
share of the observable ones the sweep reports -- undefined (None, printed "n/a") when
no changed code point is observable: a fault nothing can reveal measures nothing, it
does not score 100%. ``extra`` are reported code points
the fault did not change (must be none), and ``version`` what the attribution
named (must be the planted table).

    result = measure(TableFault("cl100k_base", "letters", "15.0.0"))
    python bench/bench_unicode_recall.py      # every supported pattern x class x table
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field


from verify.engines.planted.unicode_tables import KIND_CLASSES, TableFault, planted_engine

REFERENCES = {"cl100k_base": "tiktoken:cl100k_base", "o200k_base": "tiktoken:o200k_base",
              "p50k_base": "tiktoken:p50k_base", "deepseek-v3": "hf:deepseek-v3", "anthropic": "hf:anthropic",
              "tekken": "tekken:tekken"}
OLDER, NEWER = "15.0.0", "17.0.0"
WHITESPACE_TABLES = ("unicode-6.2", "python-isspace", "unicode-3.2", "javascript", "ascii-nel")


@dataclass
class RecallResult:
    fault: TableFault
    changed: int
    sampled: int
    observable: list[int]
    found: list[int]
    missed: list[int]
    extra: list[int]
    version: str | None
    seconds: float
    by_context: dict[str, int] = field(default_factory=dict)
    tied: list[str] = field(default_factory=list)

    @property
    def recall(self) -> float | None:
        """The share of the observable changed code points found; None when none is observable."""
        return None if not self.observable else 1 - len(self.missed) / len(self.observable)


def faults() -> list[TableFault]:
    """Every supported pattern x the classes its patterns use x older and newer tables, and
    every other definition of whitespace."""
    from verify.adversarial.unicode.pattern_contexts import features
    from verify.vocab.inspect import vocabulary_view

    out = []
    for vocab in REFERENCES:
        feats = features(p.regex for p in vocabulary_view(vocab).patterns)
        uses = {"letters": "letters" in feats, "numbers": any(n in feats for n in
                                                             ("numbers_grouped", "numbers_run", "numbers_single")),
                "marks": "marks" in feats, "punctuation": "punct_symbol" in feats, "symbols": "punct_symbol" in feats,
                "whitespace": "whitespace" in feats}
        for kind in KIND_CLASSES:
            if not uses[kind]:
                continue
            tables = WHITESPACE_TABLES if kind == "whitespace" else (OLDER, NEWER)
            out += [TableFault(vocab, kind, table) for table in tables]
    return out


_OBSERVABLE: dict[tuple, list[int]] = {}  # (fault, code points, contexts, seed, reference) -> observable


def measure(fault: TableFault, *, sample: int = 300, contexts: int = 300, seed: int = 0,
            reference=None, packing: str = "auto") -> RecallResult:
    """``packing="joined"`` measures the packing engines without special tokens get."""
    from verify.adversarial.unicode.observability import observable
    from verify.adversarial.unicode.sweep import sweep
    from verify.engines import build_engine
    from verify.executors.local import LocalExecutor
    from verify.vocab.inspect import vocabulary_view

    started = time.perf_counter()
    reference = reference or LocalExecutor(build_engine(REFERENCES[fault.vocab]))
    planted = LocalExecutor(planted_engine(fault))
    changed = fault.changed()
    rng = random.Random(f"{seed}:{fault.spec}")
    picked = sorted(rng.sample(changed.tolist(), min(sample, changed.size)))
    view = vocabulary_view(fault.vocab)
    key = (fault, tuple(picked), contexts, seed, id(reference))
    if key not in _OBSERVABLE:  # the same for every packing: the battery is most of the cost
        _OBSERVABLE[key] = observable(reference, planted, picked, view.tokens, contexts=contexts, seed=seed,
                                      special=list(view.special)).tolist()
    seen = _OBSERVABLE[key]
    result = sweep(reference, planted, cps=picked, packing=packing) if picked else None
    found = sorted(c for a, b in (result.mismatched if result else []) for c in range(a, b + 1))
    changed_set = set(changed.tolist())
    return RecallResult(fault, int(changed.size), len(picked), seen, found,
                        sorted(set(seen) - set(found)), sorted(set(found) - changed_set),
                        result.unicode_version if result else None, time.perf_counter() - started,
                        result.by_context if result else {}, result.tied_versions if result else [])


def version_named(result: RecallResult) -> bool:
    """The attribution named the planted table, or one that no measurement tells from it (the
    number classes of 15.0 and 15.1 agree); whitespace faults are not a Unicode version."""
    f = result.fault
    return f.kind == "whitespace" or not result.found or f.table in {result.version, *result.tied}


def found_share(results: list[RecallResult]) -> float | None:
    """The share of every observable changed code point found; None when none was observable."""
    observable = sum(len(r.observable) for r in results)
    missed = sum(len(r.missed) for r in results)
    return None if observable == 0 else 1 - missed / observable



