"""The vocabulary sweep: every token of the reference's vocabulary as text, through the
reference and every candidate (``verify vocab sweep``; run as a hunt by
``verify.adversarial.vocab.hunt``, each shard a range of one part).

Three parts, each a stream of samples compared with ``compare_batch``:

  tokens   every ordinary token's text (``texts.token_texts``) alone and in each of
           ``token_contexts()`` (sample ids ``token:ID/CONTEXT``)
  pairs    adjacent token pairs ``text(a) + text(b)``: for every token, ``pairs`` partners
           drawn by a seeded RNG plus one partner of each character class that makes the
           joint text cross a pre-tokenizer boundary (a letter token then a digit token, a
           space token before a letter ...); sample ids ``pair:A+B``
  special  every added/special token with allow_special False and True, its near-misses
           (a character changed, case changed, truncated, doubled, among spaces, newlines or
           letters) and mixed segments; sample ids ``special:ID/VARIANT/plain|allow``

Every part is addressed by position (``start``/``stop``): the swept token texts in id order
(tokens; pairs by their first token), the added tokens in id order (special). Everything is
deterministic for one vocabulary, ``limit`` and ``seed``, so any range gives the same
samples whichever process builds it.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Iterator, Sequence

import numpy as np

from verify.adversarial.vocab.texts import TokenText, Vocabulary, token_texts
from verify.comparison import CachedTokenBytes, Side, compare_batch
from verify.counts import Counts
from verify.findings import Finding
from verify.outcome import is_ids
from verify.sample import Sample, Segment

PARTS = ("tokens", "pairs", "special")
DEFAULT_PAIRS = 1  # random partners per token, besides the class partners
DEFAULT_BATCH = 2048
DEFAULT_MAX_FINDINGS = 1000  # written per candidate and part; the counts still count every sample
SOURCE_PREFIX = "vocab-sweep"


def token_contexts(vocab: str | None = None) -> tuple[tuple[str, str], ...]:
    """``(name, template)`` pairs, ``{c}`` marking the token text: where each token is put.
    The contexts the Unicode sweep derives from the vocabulary's own patterns (its
    structural contexts: every class question the pattern asks), generic ones without."""
    from verify.adversarial.unicode.probes import probe_set

    return tuple((c.name, c.template) for c in probe_set(vocab).contexts)


# --- character classes for the pair partners ------------------------------------------

def char_class(c: str) -> str:
    if c in "\r\n":
        return "newline"
    if c.isspace():
        return "space"
    if c.isalpha():
        return "letter"
    if c.isnumeric():
        return "digit"
    if c.isascii() and c.isprintable():
        return "punct"
    return "other"


# What to put after a token ending in a character of a class, so that the joint text
# asks the pre-tokenizer where one piece ends: letter|digit, letter|punct, space|letter ...
FOLLOWERS: dict[str, tuple[str, ...]] = {
    "letter": ("digit", "punct", "space", "letter"),
    "digit": ("digit", "letter", "punct"),
    "space": ("letter", "digit", "punct", "newline"),
    "newline": ("space", "letter", "newline"),
    "punct": ("letter", "punct", "newline", "digit"),
    "other": ("letter", "other", "space"),
}


# --- the samples ------------------------------------------------------------------------

@dataclass
class SweepPlan:
    """What one sweep covers: the vocabulary, the texts of the swept ids (``limit``: the first N ids),
    the ids no text can contain, and how pairs and contexts are chosen."""

    vocab: Vocabulary
    texts: dict[int, TokenText]  # swept ids that have a text, in id order
    unreachable: list[int]
    limit: int | None = None
    seed: int = 0
    pairs: int = DEFAULT_PAIRS
    contexts: tuple[tuple[str, str], ...] = ()

    @classmethod
    def build(cls, vocab: Vocabulary, *, limit: int | None = None, seed: int = 0, pairs: int = DEFAULT_PAIRS,
              contexts: Sequence[Sequence[str]] | None = None) -> "SweepPlan":
        """``contexts``: the token contexts when already known (a hunt's workers get them from the
        plan), else derived from the vocabulary (``token_contexts``)."""
        ids = sorted(vocab.tokens)[:limit]
        all_texts = token_texts(vocab.tokens)
        texts = {i: all_texts[i] for i in ids if all_texts[i] is not None}
        contexts = token_contexts(vocab.vocab_name) if contexts is None else tuple((n, t) for n, t in contexts)
        return cls(vocab, texts, [i for i in ids if all_texts[i] is None], limit, seed, pairs, contexts)

    def templates(self) -> list[tuple[str, str]]:
        return [("alone", "{c}")] + [(n, t) for n, t in self.contexts if t != "{c}"]

    @cached_property
    def text_ids(self) -> list[int]:
        """The swept ids that have a text, in id order: what token and pair positions index."""
        return list(self.texts)

    @cached_property
    def added_by_id(self) -> list[tuple[str, int]]:
        """The added/special tokens in id order: what special positions index."""
        return sorted(self.vocab.added.items(), key=lambda item: item[1])


def token_samples(plan: SweepPlan, start: int = 0, stop: int | None = None) -> Iterator[Sample]:
    """Every context of the tokens at positions ``[start, stop)`` of ``plan.text_ids``."""
    templates = plan.templates()
    for i in plan.text_ids[start:stop]:
        text = plan.texts[i].text
        for name, template in templates:
            yield Sample(f"token:{i}/{name}", (Segment(template.replace("{c}", text)),))


@dataclass
class PairDraws:
    """The seeded draws behind every swept token's partners, drawn for all tokens at once (the
    same draws, in the same order, whichever range is asked for)."""

    ids: np.ndarray
    last: list[str]  # the class of each token's last character
    random: np.ndarray  # (tokens, pairs) positions of the random partners
    by_class: dict[str, np.ndarray]  # class -> the ids of the tokens starting with one
    drawn: dict[str, np.ndarray]  # class -> per token, a position in by_class[class]


def pair_draws(plan: SweepPlan) -> PairDraws:
    ids = np.fromiter(plan.text_ids, dtype=np.int64, count=len(plan.text_ids))
    texts = [plan.texts[i].text for i in plan.text_ids]
    first = np.array([char_class(t[0]) for t in texts]) if texts else np.array([], dtype=str)
    rng = np.random.default_rng(plan.seed)
    random = rng.integers(0, max(1, ids.size), size=(ids.size, plan.pairs))
    by_class = {c: ids[first == c] for c in FOLLOWERS}
    drawn = {c: rng.integers(0, max(1, members.size), size=ids.size) for c, members in by_class.items()}
    return PairDraws(ids, [char_class(t[-1]) for t in texts], random, by_class, drawn)


def pair_ids(plan: SweepPlan, start: int = 0, stop: int | None = None,
             draws: PairDraws | None = None) -> list[tuple[int, int]]:
    """The swept pairs whose first token is at positions ``[start, stop)`` of ``plan.text_ids``
    (deterministic for the plan's seed), without repeats, in order: consecutive ranges give
    consecutive slices of the whole list."""
    d = draws or pair_draws(plan)
    out: list[tuple[int, int]] = []
    ids = d.ids.tolist()
    for n in range(start, len(ids) if stop is None else min(stop, len(ids))):
        a = ids[n]
        partners = [ids[j] for j in d.random[n].tolist()]
        partners += [int(d.by_class[c][d.drawn[c][n]]) for c in FOLLOWERS[d.last[n]] if d.by_class[c].size]
        seen: set[int] = set()  # a pair always starts with ``a``: repeats are only among its partners
        for b in partners:
            if b not in seen:
                seen.add(b)
                out.append((a, b))
    return out


def pair_samples(plan: SweepPlan, pairs: Sequence[tuple[int, int]] | None = None) -> Iterator[Sample]:
    for a, b in pair_ids(plan) if pairs is None else pairs:
        yield Sample(f"pair:{a}+{b}", (Segment(plan.texts[a].text + plan.texts[b].text),))


def near_misses(text: str) -> list[tuple[str, str]]:
    """``(variant, text)``: the token itself and texts that are almost it."""
    mid = len(text) // 2
    changed = text[:mid] + ("_" if text[mid] != "_" else "-") + text[mid + 1:] if text else text
    out = [("exact", text), ("changed", changed), ("case", text.swapcase()), ("truncated-end", text[:-1]),
           ("truncated-start", text[1:]), ("half", text[:mid]), ("doubled", text + text),
           ("spaced", f" {text} "), ("space-before", f" {text}"), ("newlines", f"\n{text}\n"),
           ("in-word", f"a{text}b"), ("in-digits", f"1{text}2")]
    seen: set[str] = set()
    return [(v, t) for v, t in out if t and not (t in seen or seen.add(t))]


def special_samples(plan: SweepPlan, start: int = 0, stop: int | None = None) -> Iterator[Sample]:
    """The variants of the added tokens at positions ``[start, stop)`` of ``plan.added_by_id``."""
    added = plan.added_by_id
    for n in range(start, len(added) if stop is None else min(stop, len(added))):
        text, i = added[n]
        for variant, variant_text in near_misses(text):
            for allow in (False, True):
                yield Sample(f"special:{i}/{variant}/{'allow' if allow else 'plain'}", (Segment(variant_text, allow),))
        yield Sample(f"special:{i}/allow-then-plain", (Segment(text, True), Segment(text, False)))
        yield Sample(f"special:{i}/plain-then-allow", (Segment(text, False), Segment(text, True)))
        yield Sample(f"special:{i}/between-text", (Segment("a "), Segment(text, True), Segment(" b")))
        if n + 1 < len(added):  # two added tokens back to back, by id order
            following, j = added[n + 1]
            for allow in (False, True):
                yield Sample(f"special:{i}+{j}/{'allow' if allow else 'plain'}", (Segment(text + following, allow),))


def part_samples(plan: SweepPlan, part: str, start: int = 0, stop: int | None = None,
                 draws: PairDraws | None = None) -> Iterator[Sample]:
    """The samples of one part over a range of its positions (see the module docstring)."""
    if part == "tokens":
        return token_samples(plan, start, stop)
    if part == "pairs":
        return pair_samples(plan, pair_ids(plan, start, stop, draws))
    if part == "special":
        return special_samples(plan, start, stop)
    raise ValueError(f"unknown part {part!r}")


# --- running it ------------------------------------------------------------------------

@dataclass
class PartStats:
    samples: int = 0
    agreed: int = 0
    findings: int = 0  # found (written or not)
    not_written: int = 0  # over max_findings
    seconds: float = 0.0
    split_at_join: int = 0  # pairs: the reference encodes text(a)+text(b) as exactly [a, b]

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}

    def add(self, doc: dict) -> "PartStats":
        """Add the ``as_dict`` of another range's statistics (shards merge by addition)."""
        for name, value in doc.items():
            setattr(self, name, getattr(self, name) + value)
        return self


@dataclass
class PartSweep:
    """What one range of a part gave: its counts, the findings kept (at most ``max_findings``
    per engine, in order), its statistics and how many findings each engine had in all."""

    counts: Counts = field(default_factory=Counts)
    findings: list[Finding] = field(default_factory=list)
    stats: PartStats = field(default_factory=PartStats)
    found: dict[str, int] = field(default_factory=dict)  # engine -> findings, written or not


def sweep_samples(samples: Iterable[Sample], executors: Sequence, part: str, *, batch_size: int = DEFAULT_BATCH,
                  max_findings: int = DEFAULT_MAX_FINDINGS) -> PartSweep:
    """``samples`` (of one part) through ``executors`` (the reference first), in batches: the
    next batch encodes while this one is compared, and the reference encodes each batch once
    for all candidates. Memory is bounded by ``max_findings`` per engine, whatever is found."""
    from verify.batches import pipelined

    sides = [Side(ex.spec, CachedTokenBytes(ex)) for ex in executors]
    source = f"{SOURCE_PREFIX}/{part}"
    swept = PartSweep()
    st = swept.stats
    started = time.monotonic()
    for batch, outcomes in pipelined(executors, _chunks(samples, batch_size)):
        delta = agreed_counts(batch, outcomes, [s.spec for s in sides])
        findings: list[Finding] = []
        if delta is None:  # something differs or failed: the full comparison, sample by sample
            delta, findings = compare_batch(batch, outcomes, sides, source)
        swept.counts.add(delta)
        st.samples += delta.samples
        st.agreed += delta.states["verified"]
        st.findings += len(findings)
        for finding in findings:
            n = swept.found.get(finding.engine, 0)
            swept.found[finding.engine] = n + 1
            if n < max_findings:
                swept.findings.append(finding)
            else:
                st.not_written += 1
        if part == "pairs":
            st.split_at_join += _split_at_join(batch, outcomes[0])
    st.seconds = time.monotonic() - started
    swept.counts.findings = len(swept.findings)
    return swept


def _chunks(samples: Iterable[Sample], size: int) -> Iterator[list[Sample]]:
    """Consecutive samples, ``size`` at a time (vocabulary samples are short: no size guard)."""
    it = iter(samples)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def agreed_counts(samples: Sequence[Sample], outcomes: Sequence[Sequence[object]], specs: Sequence[str]) -> Counts | None:
    """The counts ``compare_batch`` gives a batch on which every engine returned ids and every
    candidate's equal the reference's, checked with one array comparison per candidate; None
    when anything differs or failed (the caller then compares sample by sample)."""
    reference = outcomes[0]
    if not all(is_ids(o) and o.ndim == 1 for o in reference):
        return None
    lengths = [o.size for o in reference]
    joined = np.concatenate(reference) if reference else np.zeros(0, dtype=np.uint32)
    for other in outcomes[1:]:
        if not all(is_ids(o) and o.ndim == 1 for o in other) or [o.size for o in other] != lengths:
            return None
        if not np.array_equal(joined, np.concatenate(other) if other else joined[:0]):
            return None
    n = len(samples)
    texts = [seg.text for sample in samples for seg in sample.segments]
    counts = Counts(samples=n, chars=sum(map(len, texts)), bytes=len("".join(texts).encode("utf-8")),
                    tokens=sum(lengths))
    counts.states["verified"] = n
    for spec in specs:
        counts.engine(spec)["verified"] = n
    return counts


def _split_at_join(samples: Sequence[Sample], reference: Sequence[object]) -> int:
    n = 0
    for sample, ids in zip(samples, reference):
        if is_ids(ids) and ids.size == 2:
            a, _, b = sample.id.removeprefix("pair:").partition("+")
            n += int(ids[0]) == int(a) and int(ids[1]) == int(b)
    return n


# --- what the manifest says was swept ----------------------------------------------------

def describe_vocabulary(plan: SweepPlan) -> dict:
    """The manifest's first source: the vocabulary and the swept ids."""
    joined = sum(1 for t in plan.texts.values() if t.joined)
    return {"name": f"vocabulary of {plan.vocab.spec}", "kind": "vocabulary", **plan.vocab.describe(),
            "swept_ids": len(plan.texts) + len(plan.unreachable), "limit": plan.limit,
            "token_texts": len(plan.texts), "joined_with_neighbours": joined,
            "unreachable": len(plan.unreachable), "unreachable_ids": plan.unreachable[:300]}


def part_sources(vocabulary: dict, stats: dict[str, PartStats], *, contexts: Sequence[str], seed: int,
                 pairs: int) -> list[dict]:
    """The manifest's sources after the vocabulary: what each part swept (``vocabulary``: the
    ``describe_vocabulary`` source; ``contexts``: the template names, ``alone`` first)."""
    sources = []
    if "tokens" in stats:
        sources.append({"name": f"{SOURCE_PREFIX}/tokens", "kind": "vocab-sweep", "token_texts": vocabulary["token_texts"],
                        "contexts": list(contexts), **stats["tokens"].as_dict()})
    if "pairs" in stats:
        sources.append({"name": f"{SOURCE_PREFIX}/pairs", "kind": "vocab-sweep", "seed": seed,
                        "random_partners": pairs, "class_followers": {k: list(v) for k, v in FOLLOWERS.items()},
                        "pairs": stats["pairs"].samples, **stats["pairs"].as_dict()})
    if "special" in stats:
        sources.append({"name": f"{SOURCE_PREFIX}/special", "kind": "vocab-sweep", "added_tokens": vocabulary["added"],
                        "special_tokens": vocabulary["special"], "variants": stats["special"].samples,
                        **stats["special"].as_dict()})
    return sources

