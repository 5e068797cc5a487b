"""Stress samples: the shapes a serving stack drives engines with, generated deterministically.

Two shapes, each sample described by a compact *recipe* (a small JSON-able dict,
stored in a finding's ``stress`` field) from which ``from_recipe`` rebuilds the
exact sample, so a finding on a 400,000-character input stays replayable from a
few bytes (the finding writer stores the input itself as well):

  big-batch  ``BIG_BATCH_SIZES`` very short samples (0..12 characters) in ONE call, the way a
             server batches requests. Sample ``i`` of a batch is the ``i % DISTINCT``-th text of
             ``short_texts(seed)``: recipe ``{"shape": "big-batch", "size": N, "seed": S, "index": I}``.
  threshold  one input that crosses a chunking threshold (``CUTS``: the legacy tiktoken
             wrapper's 400,000-character encode calls and its 25,000-character runs of
             whitespace or of non-whitespace) with a probe character at cut-1, cut or cut+1.
             The text is ``unit`` tiled from ``phase`` to ``length`` characters with the
             ``width`` characters from ``at`` replaced by the probe: recipe ``{"shape": "threshold",
             "cut": C, "unit": U, "phase": P, "at": A, "width": W, "probe": "U+XXXX", "length": L}``.

Probes (``PROBES``) are every whitespace-like code point (``unicode.contexts.WHITESPACE_LIKE``)
and every control character: U+0000-U+001F, U+007F-U+009F, U+2028/9, U+FEFF, U+200B,
U+180E. Units (``UNITS``) are chosen so that the cut falls inside a run of one class
("a", " ", "123") or inside a pre-token (" a" or " the quick" from phase 1: the cut
separates a space from its word). ``threshold_plan`` yields the inputs in priority tiers (``tier_of``): at the
25,000 cut every probe alone at each of cut-1, cut, cut+1; at the 400,000 cut the
whitespace-like probes alone at each position, and the other controls at all three
positions at once (``width`` 3: 55 inputs instead of 165, 22 M characters instead of
66 M). A time-bounded run covers the most likely bugs first; nothing holds more than
one large input at a time.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Iterator

from verify.adversarial.fuzz.strategies import ALPHABETS
from verify.adversarial.unicode.contexts import WHITESPACE_LIKE
from verify.sample import Sample

# Documented chunking thresholds: characters -> who documents it.
CUTS: dict[int, str] = {
    25_000: "legacy tiktoken wrapper (Kimi): runs of whitespace or of non-whitespace are split "
            "after 25,000 characters",
    400_000: "legacy tiktoken wrapper (Kimi): at most 400,000 characters per tiktoken encode call",
}
OFFSETS = (-1, 0, 1)  # the probe at cut-1, cut, cut+1
TAIL = 64  # characters after the probe, so the input crosses the cut
# Units tiled up to the cut, with the phases the tiling starts at.
UNITS: dict[int, tuple[tuple[str, int], ...]] = {
    25_000: (("a", 0), (" ", 0), (" a", 1), ("123", 0)),
    400_000: ((" the quick", 1),),  # words: five times cheaper to encode than " a"
}

CONTROLS = (*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0xFEFF, 0x200B, 0x180E)
WHITESPACE_PROBES = tuple(sorted({cp for a, b in WHITESPACE_LIKE for cp in range(a, b + 1)}))
PROBES = tuple(sorted(set(WHITESPACE_PROBES) | set(CONTROLS)))
OTHER_PROBES = tuple(cp for cp in PROBES if cp not in set(WHITESPACE_PROBES))

BIG_BATCH_SIZES = (16_384, 100_000)
DISTINCT = 16_384  # distinct texts behind a big batch (a larger batch repeats them in order)
BATCH_SEED = 0
SHORT_MAX = 12


@dataclass(frozen=True)
class Threshold:
    """One threshold input: ``unit`` tiled from ``phase`` to ``length`` characters, probe at ``at``."""

    cut: int
    unit: str
    phase: int
    at: int
    probe: int
    length: int
    width: int = 1  # characters from ``at`` replaced by the probe

    def base(self, length: int | None = None) -> str:
        n = self.length if length is None else length
        reps = (n + self.phase) // len(self.unit) + 2
        return (self.unit * reps)[self.phase:self.phase + n]

    def text(self) -> str:
        tiled = self.base()
        return tiled[:self.at] + chr(self.probe) * self.width + tiled[self.at + self.width:]

    def recipe(self) -> dict:
        doc = asdict(self)
        doc["probe"] = f"U+{self.probe:04X}"
        return {"shape": "threshold", **doc}

    @property
    def sample_id(self) -> str:
        return (f"stress:cut{self.cut}:unit={self.unit.encode('unicode_escape').decode()}:phase{self.phase}:"
                f"at{self.at}:U+{self.probe:04X}" + (f"x{self.width}" if self.width != 1 else ""))

    def sample(self) -> Sample:
        return Sample.plain(self.sample_id, self.text())

    @property
    def tier(self) -> int:
        return tier_of(self.cut, self.probe)


def tier_of(cut: int, probe: int) -> int:
    """0: 25k cut, whitespace-like probe; 1: 25k, control; 2: 400k, whitespace-like; 3: 400k, control."""
    return (2 if cut >= max(CUTS) else 0) + (0 if probe in WHITESPACE_PROBES else 1)


def thresholds(cut: int, probes: tuple[int, ...], together: bool = False) -> Iterator[Threshold]:
    """The probes at cut-1, cut, cut+1: one input per position, or (``together``) one input
    with the probe at all three."""
    for unit, phase in UNITS.get(cut, ((" a", 1), ("a", 0))):
        if together:
            for probe in probes:
                at = cut + OFFSETS[0]
                yield Threshold(cut, unit, phase, at, probe, at + len(OFFSETS) + TAIL, len(OFFSETS))
            continue
        for delta in OFFSETS:
            for probe in probes:
                at = cut + delta
                yield Threshold(cut, unit, phase, at, probe, at + 1 + TAIL)


def threshold_plan(cuts: tuple[int, ...] | None = None) -> Iterator[Threshold]:
    """Every threshold input, in priority tiers (see ``tier_of``)."""
    cuts = tuple(sorted(CUTS)) if cuts is None else tuple(sorted(cuts))
    small = [c for c in cuts if c < max(CUTS)]
    large = [c for c in cuts if c >= max(CUTS)]
    for group, probes, together in ((small, WHITESPACE_PROBES, False), (small, OTHER_PROBES, False),
                                    (large, WHITESPACE_PROBES, False), (large, OTHER_PROBES, True)):
        for cut in group:
            yield from thresholds(cut, probes, together)


def plan_size(cuts: tuple[int, ...] | None = None) -> dict[str, int]:
    """Inputs and characters in the plan (without building any text)."""
    n = chars = 0
    for t in threshold_plan(cuts):
        n += 1
        chars += t.length
    return {"inputs": n, "chars": chars}


# --- big batches -----------------------------------------------------------------------

_POOL = (ALPHABETS["latin_lower"] * 3 + ALPHABETS["latin_upper"] + ALPHABETS["digits"] * 2 + ALPHABETS["punct"]
         + " " * 12 + "\n\t" + "".join(map(chr, PROBES)) + ALPHABETS["latin_accented"] + ALPHABETS["cyrillic"]
         + ALPHABETS["cjk"] + ALPHABETS["hangul"] + ALPHABETS["arabic"] + ALPHABETS["devanagari"]
         + ALPHABETS["emoji"] + ALPHABETS["marks"] + ALPHABETS["apostrophes"] + ALPHABETS["zwj"])


def short_texts(seed: int = BATCH_SEED, count: int = DISTINCT) -> list[str]:
    """``count`` short texts (0..SHORT_MAX characters), the same for the same seed."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        n = 0 if i % 997 == 0 else rng.randint(1, SHORT_MAX)
        out.append("".join(rng.choice(_POOL) for _ in range(n)))
    return out


def big_batch(size: int, seed: int = BATCH_SEED) -> list[Sample]:
    texts = short_texts(seed, min(size, DISTINCT))
    return [Sample.plain(f"stress:batch{size}:seed{seed}:{i}", texts[i % len(texts)]) for i in range(size)]


# --- homogeneous batches of one length family ---------------------------------------------------

# Batches shaped like production traffic of one kind: many inputs of one family and length in ONE
# call (a native batch path that goes wrong only on many long digit runs is found by nothing else).
FAMILY_UNITS = (("digits", "1"), ("letters", "a"), ("spaces", " "), ("newlines", "\n"), ("cjk", "\u4e2d"),
                ("emoji", "\U0001F600"))
FAMILY_LENGTHS = (10, 100, 1000, 10_000)
FAMILY_BATCH_CHARS = 2_000_000  # characters a family batch aims at (its size within the bounds below)
FAMILY_SIZES = (1_000, 100_000)


@dataclass(frozen=True)
class FamilyBatch:
    family: str
    unit: str
    length: int

    @property
    def size(self) -> int:
        lo, hi = FAMILY_SIZES
        return max(lo, min(hi, FAMILY_BATCH_CHARS // self.length))

    def text(self) -> str:
        return self.unit * self.length

    def samples(self) -> list[Sample]:
        text = self.text()
        return [Sample.plain(f"stress:{self.family}x{self.length}:batch{self.size}:{i}", text) for i in range(self.size)]

    def recipe(self, index: int | None = None) -> dict:
        doc = {"shape": "family-batch", "family": self.family, "unit": self.unit, "length": self.length,
               "size": self.size}
        return doc if index is None else {**doc, "index": index}


def family_batches() -> list[FamilyBatch]:
    """Every family at every length, the cheapest (fewest characters) first."""
    out = [FamilyBatch(name, unit, length) for length in FAMILY_LENGTHS for name, unit in FAMILY_UNITS]
    return sorted(out, key=lambda b: (b.size * b.length, FAMILY_LENGTHS.index(b.length)))


def batch_recipe(size: int, seed: int, index: int) -> dict:
    return {"shape": "big-batch", "size": size, "seed": seed, "index": index}


def from_recipe(recipe: dict) -> Sample:
    """The sample a recipe describes (a finding's ``stress`` field)."""
    shape = recipe.get("shape")
    if shape == "big-batch":
        size, seed, index = int(recipe["size"]), int(recipe["seed"]), int(recipe["index"])
        texts = short_texts(seed, min(size, DISTINCT))
        return Sample.plain(f"stress:batch{size}:seed{seed}:{index}", texts[index % len(texts)])
    if shape == "threshold":
        probe = recipe["probe"]
        probe = int(probe[2:], 16) if isinstance(probe, str) else int(probe)
        return Threshold(int(recipe["cut"]), recipe["unit"], int(recipe["phase"]), int(recipe["at"]), probe,
                         int(recipe["length"]), int(recipe.get("width", 1))).sample()
    if shape == "family-batch":
        batch = FamilyBatch(recipe["family"], recipe["unit"], int(recipe["length"]))
        return Sample.plain(f"stress:{batch.family}x{batch.length}:batch{batch.size}:{recipe.get('index', 0)}",
                            batch.text())
    if shape == "state":
        return Sample.plain(f"state:U+{ord(recipe['run']):04X}x{recipe['length']}", recipe["run"] * int(recipe["length"]))
    raise ValueError(f"unknown stress recipe shape {shape!r}")
