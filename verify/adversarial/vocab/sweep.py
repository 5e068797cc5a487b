"""The vocabulary sweep: every token of the reference's vocabulary as text, through the
reference and every candidate (``verify vocab sweep``).

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

Everything is deterministic for one vocabulary, ``limit`` and ``seed``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from verify.adversarial.vocab.texts import TokenText, Vocabulary, token_texts
from verify.comparison import Side, compare_batch
from verify.counts import Counts
from verify.findings import FindingWriter
from verify.outcome import is_ids
from verify.sample import Sample, Segment

PARTS = ("tokens", "pairs", "special")
DEFAULT_PAIRS = 1  # random partners per token, besides the class partners
DEFAULT_BATCH = 2048
DEFAULT_MAX_FINDINGS = 1000  # written per candidate and part; the counts still count every sample


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
    def build(cls, vocab: Vocabulary, *, limit: int | None = None, seed: int = 0,
              pairs: int = DEFAULT_PAIRS) -> "SweepPlan":
        ids = sorted(vocab.tokens)[:limit]
        all_texts = token_texts(vocab.tokens)
        texts = {i: all_texts[i] for i in ids if all_texts[i] is not None}
        return cls(vocab, texts, [i for i in ids if all_texts[i] is None], limit, seed, pairs,
                   token_contexts(vocab.vocab_name))

    def templates(self) -> list[tuple[str, str]]:
        return [("alone", "{c}")] + [(n, t) for n, t in self.contexts if t != "{c}"]


def token_samples(plan: SweepPlan) -> Iterator[Sample]:
    templates = plan.templates()
    for i, tt in plan.texts.items():
        for name, template in templates:
            yield Sample(f"token:{i}/{name}", (Segment(template.replace("{c}", tt.text)),))


def pair_ids(plan: SweepPlan) -> list[tuple[int, int]]:
    """The swept pairs (deterministic for the plan's seed), without repeats, in order."""
    ids = np.fromiter(plan.texts, dtype=np.int64, count=len(plan.texts))
    if not ids.size:
        return []
    texts = [plan.texts[int(i)].text for i in ids]
    first = np.array([char_class(t[0]) for t in texts])
    last = [char_class(t[-1]) for t in texts]
    rng = np.random.default_rng(plan.seed)
    random = rng.integers(0, ids.size, size=(ids.size, plan.pairs))
    by_class = {c: ids[first == c] for c in FOLLOWERS}
    drawn = {c: rng.integers(0, max(1, members.size), size=ids.size) for c, members in by_class.items()}
    seen: set[tuple[int, int]] = set()
    out: list[tuple[int, int]] = []
    for n, a in enumerate(ids.tolist()):
        partners = [int(ids[j]) for j in random[n]]
        partners += [int(by_class[c][drawn[c][n]]) for c in FOLLOWERS[last[n]] if by_class[c].size]
        for b in partners:
            if (a, b) not in seen:
                seen.add((a, b))
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


def special_samples(plan: SweepPlan) -> Iterator[Sample]:
    added = sorted(plan.vocab.added.items(), key=lambda item: item[1])
    for n, (text, i) in enumerate(added):
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


def part_samples(plan: SweepPlan, part: str) -> Iterator[Sample]:
    return {"tokens": token_samples, "pairs": pair_samples, "special": special_samples}[part](plan)


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


def run_sweep(plan: SweepPlan, executors: Sequence, writer: FindingWriter, counts: Counts, *,
              parts: Sequence[str] = PARTS, batch_size: int = DEFAULT_BATCH,
              max_findings: int = DEFAULT_MAX_FINDINGS, progress: Callable[[Counts], None] | None = None,
              source_prefix: str = "vocab-sweep") -> dict[str, PartStats]:
    """Every part's samples through ``executors`` (the reference first), in batches; findings
    go to ``writer`` (at most ``max_findings`` per candidate and part), counts into ``counts``."""
    from verify.batches import batched

    sides = [Side(ex.spec, ex.token_bytes) for ex in executors]
    stats: dict[str, PartStats] = {}
    for part in parts:
        st = stats[part] = PartStats()
        started = time.monotonic()
        written: dict[str, int] = {}
        source = f"{source_prefix}/{part}"
        for samples, outcomes in _pipelined(executors, batched(part_samples(plan, part), batch_size)):
            delta, findings = compare_batch(samples, outcomes, sides, source)
            counts.add(delta)
            st.samples += delta.samples
            st.agreed += delta.states["verified"]
            st.findings += len(findings)
            for finding in findings:
                if written.get(finding.engine, 0) < max_findings:
                    written[finding.engine] = written.get(finding.engine, 0) + 1
                    writer.write(finding)
                else:
                    st.not_written += 1
            if part == "pairs":
                st.split_at_join += _split_at_join(samples, outcomes[0])
            if progress is not None:
                progress(counts)
        st.seconds = time.monotonic() - started
    return stats


def _pipelined(executors: Sequence, batches: Iterable[list[Sample]]) -> Iterator[tuple[list[Sample], list[list]]]:
    """``(batch, outcomes per executor)``, the next batch submitted before the current one is
    handed out: isolated workers encode it while the caller compares this one."""
    pending: list[Sample] | None = None
    for samples in batches:
        outcomes = [ex.collect() for ex in executors] if pending is not None else None
        for ex in executors:
            ex.submit(samples)
        if pending is not None:
            yield pending, outcomes
        pending = samples
    if pending is not None:
        yield pending, [ex.collect() for ex in executors]


def _split_at_join(samples: Sequence[Sample], reference: Sequence[object]) -> int:
    n = 0
    for sample, ids in zip(samples, reference):
        if is_ids(ids) and ids.size == 2:
            a, _, b = sample.id.removeprefix("pair:").partition("+")
            n += int(ids[0]) == int(a) and int(ids[1]) == int(b)
    return n


def describe_plan(plan: SweepPlan, stats: dict[str, PartStats]) -> list[dict]:
    """The manifest's ``sources``: the vocabulary, and what each part swept."""
    joined = sum(1 for t in plan.texts.values() if t.joined)
    vocab = {"name": f"vocabulary of {plan.vocab.spec}", "kind": "vocabulary", **plan.vocab.describe(),
             "swept_ids": len(plan.texts) + len(plan.unreachable), "limit": plan.limit,
             "token_texts": len(plan.texts), "joined_with_neighbours": joined,
             "unreachable": len(plan.unreachable), "unreachable_ids": plan.unreachable[:300]}
    sources = [vocab]
    if "tokens" in stats:
        sources.append({"name": "vocab-sweep/tokens", "kind": "vocab-sweep", "token_texts": len(plan.texts),
                        "contexts": [n for n, _ in plan.templates()], **stats["tokens"].as_dict()})
    if "pairs" in stats:
        sources.append({"name": "vocab-sweep/pairs", "kind": "vocab-sweep", "seed": plan.seed,
                        "random_partners": plan.pairs, "class_followers": {k: list(v) for k, v in FOLLOWERS.items()},
                        "pairs": stats["pairs"].samples, **stats["pairs"].as_dict()})
    if "special" in stats:
        sources.append({"name": "vocab-sweep/special", "kind": "vocab-sweep", "added_tokens": len(plan.vocab.added),
                        "special_tokens": len(plan.vocab.special), "variants": stats["special"].samples,
                        **stats["special"].as_dict()})
    return sources
