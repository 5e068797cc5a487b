"""The probes of a Unicode sweep, chosen for the reference's vocabulary.

    probes = probe_set("cl100k_base")       # from the vocabulary's patterns and entries
    probes.probes(0x00E9)                     # [(context name, probe text), ...]

Three tiers, by what a table version can do to a code point:

* changing (category differs between known Unicode versions, about 35,000, plus the
  whitespace-like ones): every structural context of the vocabulary's patterns
  (``pattern_contexts``) and up to four vocabulary neighbours each side (``neighbours``);
* stable (assigned, one category in every known version, about 140,000): one context
  per class question (``FOR_STABLE``) and one neighbour each side;
* unassigned (never assigned, private use, noncharacters: about 940,000): the cheap
  tier (``FOR_UNASSIGNED``) -- no known table moves them, only an engine bug would, and
  these contexts show a class change whatever the bytes.

A reference without a known vocabulary (a plugin) gets the generic
``contexts.CONTEXTS`` for every code point.

``separator`` is a special token of the vocabulary: probes joined by it and
encoded with special tokens allowed are encoded exactly as if each were alone
(engines split at special tokens before pre-tokenising), and the output splits
back into one id array per probe at the separator's id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from verify.unicode_tables import tables as ud
from verify.adversarial.unicode.neighbours import NeighbourIndex
from verify.adversarial.unicode.pattern_contexts import FOR_STABLE, FOR_UNASSIGNED, features, structural_contexts
from verify.adversarial.unicode.contexts import CONTEXTS, Context, whitespace_like_mask

NEIGHBOUR_LEFT, NEIGHBOUR_RIGHT = "vocab-left", "vocab-right"


CHANGING, STABLE, UNASSIGNED = 0, 1, 2


@lru_cache(maxsize=1)
def tiers():
    """Per code point: CHANGING, STABLE or UNASSIGNED (see the module docstring)."""
    import numpy as np

    tables = [ud.category_table(v) for v in ud.versions()]
    pua, surrogate = ud.CATEGORY_INDEX["Co"], ud.CATEGORY_INDEX["Cs"]
    assigned = np.zeros(ud.N_CP, dtype=bool)
    changing = np.zeros(ud.N_CP, dtype=bool)
    for table in tables:
        assigned |= (table != ud.CN) & (table != pua) & (table != surrogate)
        changing |= table != tables[0]
    changing |= whitespace_like_mask()
    out = np.full(ud.N_CP, UNASSIGNED, dtype=np.uint8)
    out[assigned] = STABLE
    out[changing] = CHANGING
    return out


@dataclass
class ProbeSet:
    vocab: str | None
    contexts: list[Context]  # changing tier
    stable: list[Context]
    cheap: list[Context]  # unassigned tier
    neighbours: NeighbourIndex | None = None
    separator: str | None = None
    features: list[str] = field(default_factory=list)
    _special: re.Pattern | None = None
    _special_chars: frozenset[str] | None = None

    def probes(self, cp: int) -> list[tuple[str, str]]:
        """(context name, probe text) for every probe of ``cp``."""
        cps, names, texts = self.batch([cp])
        return list(zip(names, texts))

    def batch(self, cps: list[int]) -> tuple[list[int], list[str], list[str]]:
        """Every probe of every code point in ``cps``: parallel lists of code point, context
        name and probe text, grouped by context (built a context at a time, which is fast)."""
        tier_of = tiers()
        by_tier: dict[int, list[int]] = {CHANGING: [], STABLE: [], UNASSIGNED: []}
        for cp in cps:
            by_tier[int(tier_of[cp])].append(cp)
        out_cps: list[int] = []
        names: list[str] = []
        texts: list[str] = []
        for tier, members in by_tier.items():
            if not members:
                continue
            chars = [chr(cp) for cp in members]
            for context in self.contexts if tier == CHANGING else self.stable if tier == STABLE else self.cheap:
                parts = context.template.split("{c}")
                if len(parts) == 2:
                    head, tail = parts
                    texts.extend([head + ch + tail for ch in chars])
                else:
                    texts.extend([ch.join(parts) for ch in chars])
                out_cps.extend(members)
                names.extend([context.name] * len(members))
            if self.neighbours is not None and tier != UNASSIGNED:
                per_side = None if tier == CHANGING else 1
                for cp, ch in zip(members, chars):
                    for left in self.neighbours.left(cp)[:per_side]:
                        out_cps.append(cp)
                        names.append(NEIGHBOUR_LEFT)
                        texts.append(left + ch)
                    for right in self.neighbours.right(cp)[:per_side]:
                        out_cps.append(cp)
                        names.append(NEIGHBOUR_RIGHT)
                        texts.append(ch + right)
        return out_cps, names, texts

    def joinable(self, text: str) -> bool:
        """Whether ``text`` may be joined with the separator: it holds no special-token literal."""
        return self._special is None or not self._special.search(text)

    def may_hold_special(self, cp: int) -> bool:
        """Whether a probe of ``cp`` could hold a special-token literal (only then is it checked)."""
        return self._special_chars is not None and chr(cp) in self._special_chars

    def context_list(self) -> list[Context]:
        seen = {c.name: c for c in [*self.contexts, *self.stable, *self.cheap]}
        if self.neighbours is not None:
            seen[NEIGHBOUR_LEFT] = Context(NEIGHBOUR_LEFT, "<left neighbour>{c}",
                                           "after a text that a vocabulary entry joins to its first bytes")
            seen[NEIGHBOUR_RIGHT] = Context(NEIGHBOUR_RIGHT, "{c}<right neighbour>",
                                            "before a text that a vocabulary entry joins to its last bytes")
        return list(seen.values())

    def describe(self) -> dict[str, Any]:
        return {"vocabulary": self.vocab, "pattern_features": self.features,
                "contexts": [{"name": c.name, "template": c.template, "why": c.why} for c in self.context_list()],
                "stable_tier": [c.name for c in self.stable], "unassigned_tier": [c.name for c in self.cheap],
                "separator": self.separator}


def generic_probe_set() -> ProbeSet:
    return ProbeSet(None, list(CONTEXTS), list(CONTEXTS), list(CONTEXTS))


@lru_cache(maxsize=8)
def probe_set(vocab: str | None) -> ProbeSet:
    """The probes for a reference vocabulary (a known name or a file), generic when none
    (built once per process: the neighbour index reads every vocabulary entry)."""
    if not vocab:
        return generic_probe_set()
    from verify.vocab.inspect import vocabulary_view

    try:
        view = vocabulary_view(vocab)
    except Exception:  # not a vocabulary this harness can read (a plugin's own): generic probes
        return generic_probe_set()
    return probe_set_for_view(view)


# anchors for a fixed-range split, preferred where they fall in a sub-range: frequent single tokens
RANGE_ANCHORS = "中の日アカ"


def range_contexts(ranges) -> list[Context]:
    """Contexts for a split on fixed code point ranges (DeepSeek's ``[一-龥぀-ゟ゠-ヿ]+``): the
    code point between two characters of each sub-range, so one inside the range joins them
    into one isolated run and one outside (an engine that implements the range as a script
    property, say) splits it -- no Unicode table answers this, only the engine's range does."""
    out: list[Context] = []
    for regex in ranges:
        for n, (lo, hi) in enumerate(re.findall(r"(.)-(.)", regex)):
            a, b = ord(lo), ord(hi)
            anchor = next((ch for ch in RANGE_ANCHORS if a <= ord(ch) <= b), chr(a + (b - a) // 2))
            out.append(Context(f"range-{n}-{anchor}", f"{anchor}{{c}}{anchor}",
                               f"is it inside the fixed range {lo}-{hi} of the split {regex!r}: joined "
                               f"with {anchor} on both sides into one run, or split from them"))
    return out


def probe_set_for_view(view) -> ProbeSet:
    feats = features(p.regex for p in view.patterns)
    # No pre-tokenizer pattern (SentencePiece): only spaces split the text; ask about those.
    contexts = structural_contexts(feats) if view.patterns else \
        [c for c in CONTEXTS if c.name in ("alone", "in-word", "run", "spaced", "space-before-letter", "spaces-before")]
    ranged = range_contexts(view.isolated_ranges)
    contexts = [*contexts, *ranged]
    by_name = {c.name: c for c in contexts}
    stable = [by_name[n] for n in FOR_STABLE if n in by_name] + ranged
    cheap = [by_name[n] for n in FOR_UNASSIGNED if n in by_name]
    specials = sorted(view.special, key=len, reverse=True)
    # Entries holding a special-token literal are no neighbours: a probe is then special-free
    # unless its own code point is a character of some special token (checked probe by probe).
    skip: frozenset[bytes] = frozenset()
    if specials:
        literal = re.compile(b"|".join(re.escape(s.encode()) for s in specials))
        shortest = min(len(s.encode()) for s in specials)
        skip = frozenset(t for t in view.tokens if len(t) >= shortest and literal.search(t))
    neighbours = NeighbourIndex(view.tokens, skip) if view.kind != "sentencepiece" else None
    separator = next((s for s in specials if s.startswith("<") and len(s) > 4), None)
    special_re = re.compile("|".join(re.escape(s) for s in specials)) if specials else None
    special_chars = frozenset("".join(specials)) if specials else None
    return ProbeSet(view.name, contexts, stable, cheap, neighbours, separator, sorted(feats.names), special_re,
                    special_chars)
