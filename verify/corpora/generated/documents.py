"""Documents of the generated corpus: regular, chat / FIM and long documents, and the public API.

``generate`` / ``generate_one`` build samples from per-document RNGs; ``describe``
records what is needed to rebuild a run.
"""

from __future__ import annotations

import random
from typing import Callable, Iterator

from verify.corpora.generated.kinds import _KIND_WEIGHTS, KINDS
from verify.corpora.generated.kinds_code import CODE_TEMPLATES, _code_snippet, kind_code
from verify.corpora.generated.kinds_text import (ASCII_WHITESPACE, COMBINING_MARKS, SPECIAL_TOKEN_LITERALS,
                                                 UNICODE_SPACES, _digits)
from verify.corpora.generated.scripts import HAN, SCRIPTS, Gen
from verify.sample import Sample, Segment

GENERATOR_VERSION = 1

LONG_DOCUMENT_MIN_CHARS = 120_000

CHAT_FRACTION = 0.05
CRLF_FRACTION = 0.07


def _mixed_text(g: Gen, parts: int | None = None) -> str:
    rng = g.rng
    n = parts or rng.choices((1, 2, 3, 4, 6, 8), weights=(30, 22, 18, 12, 12, 6))[0]
    kinds = rng.choices(KINDS, weights=_KIND_WEIGHTS, k=n)
    out = [kinds[0].make(g)]
    for kind in kinds[1:]:
        out.append(rng.choice(("\n\n", "\n\n", "\n", " ", "", "\n\n\n", "\t")))
        out.append(kind.make(g))
    return "".join(out)


def _user_text(g: Gen) -> str:
    text = _mixed_text(g, g.rng.randint(1, 2))
    if g.rng.random() < 0.3:  # a user pasting a special-token literal: must stay ordinary text
        text += " " + g.rng.choice(SPECIAL_TOKEN_LITERALS) + " " + g.sentence()
    return text


def _chat_segments(g: Gen) -> list[Segment]:
    """A chat / FIM / packed-documents sample: markers may be special, content never is."""
    rng = g.rng
    special, plain = (lambda t: Segment(t, True)), (lambda t: Segment(t, False))
    style = rng.choice(("chatml", "llama2", "llama3", "fim", "packed"))
    segs: list[Segment] = []
    if style == "chatml":
        for role in ("system", "user", "assistant")[: rng.randint(2, 3)]:
            segs += [special("<|im_start|>"), plain(f"{role}\n"), plain(_user_text(g)), special("<|im_end|>"),
                     plain("\n")]
    elif style == "llama2":
        segs += [special("<s>"), plain("[INST] <<SYS>>\n" + g.sentence() + "\n<</SYS>>\n\n"),
                 plain(_user_text(g) + " [/INST] "), plain(_user_text(g)), special("</s>")]
    elif style == "llama3":
        segs.append(special("<|begin_of_text|>"))
        for role in ("system", "user", "assistant")[: rng.randint(2, 3)]:
            segs += [special("<|start_header_id|>"), plain(role), special("<|end_header_id|>"),
                     plain("\n\n" + _user_text(g)), special("<|eot_id|>")]
    elif style == "fim":
        code = kind_code(g)
        a, b = sorted(rng.sample(range(len(code) + 1), 2))
        segs += [special("<|fim_prefix|>"), plain(code[:a]), special("<|fim_suffix|>"), plain(code[b:]),
                 special("<|fim_middle|>"), plain(code[a:b])]
    else:
        for _ in range(rng.randint(2, 4)):
            segs += [plain(_user_text(g)), special("<|endoftext|>" * rng.choice((1, 1, 2)))]
    return segs


def _regular_document(g: Gen) -> list[Segment]:
    rng = g.rng
    if rng.random() < CHAT_FRACTION:
        return _chat_segments(g)
    text = _mixed_text(g)
    if rng.random() < CRLF_FRACTION:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return [Segment(text, False)]


def _long_mixed(g: Gen, target: int) -> str:
    out, size = [], 0
    while size < target:
        piece = _mixed_text(g, 8)
        out.append(piece)
        size += len(piece) + 2
    return "\n\n".join(out)


def _long_run(g: Gen, target: int) -> str:
    rng = g.rng
    roll = rng.randrange(8)
    if roll == 0:
        return " " * target
    if roll == 1:
        return _digits(rng, target)
    if roll == 2:
        return "\n" * target
    if roll == 3:
        return "".join(rng.choices(ASCII_WHITESPACE + UNICODE_SPACES, k=target))
    if roll == 4:
        return rng.choice("a\u4e00\u0e01x") * target
    if roll == 5:
        return "".join(rng.choices(HAN, k=target))
    if roll == 6:
        return "\U0001F600" * (target // 2) + "\U0001F44D\U0001F3FD" * (target // 4)
    return "".join(rng.choices(COMBINING_MARKS, k=target))


def _long_code(g: Gen, target: int) -> str:
    language = g.rng.choice(tuple(CODE_TEMPLATES))
    out, size = [], 0
    while size < target:
        piece = _code_snippet(g, language)
        out.append(piece)
        size += len(piece) + 1
    return "\n".join(out)


LONG_KINDS: tuple[tuple[str, Callable[[Gen, int], str]], ...] = (
    ("long_mixed", _long_mixed),
    ("long_run", _long_run),
    ("long_code", _long_code),
)


def _long_document(g: Gen, ordinal: int) -> list[Segment]:
    _, make = LONG_KINDS[ordinal % len(LONG_KINDS)]
    lo = LONG_DOCUMENT_MIN_CHARS
    target = g.rng.randint(lo, 300_000 if make is _long_run else 200_000)
    return [Segment(make(g, target), False)]


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def long_document_indices(documents: int = 2000, long_documents: int = 3) -> list[int]:
    """Indices of the long documents, evenly spread through the ``documents + long_documents`` run."""
    total = documents + long_documents
    return [((k + 1) * total) // (long_documents + 1) for k in range(long_documents)]


def generate_one(seed: int, index: int, documents: int = 2000, long_documents: int = 3) -> Sample:
    """Document ``index`` of ``generate(seed, documents, long_documents)``, built on its own.

    Only whether ``index`` is a long document depends on ``documents`` / ``long_documents``
    (both recorded by ``describe``); every other document depends on ``seed`` and ``index`` alone."""
    total = documents + long_documents
    if not 0 <= index < total:
        raise IndexError(f"generated document index {index} out of range 0..{total - 1} "
                         f"(documents={documents}, long_documents={long_documents})")
    g = Gen(seed, random.Random(f"{seed}:{index}"))
    longs = long_document_indices(documents, long_documents)
    segments = _long_document(g, longs.index(index)) if index in longs else _regular_document(g)
    return Sample(sample_id(seed, index), tuple(segments))


def generate(seed: int = 0, documents: int = 2000, long_documents: int = 3) -> Iterator[Sample]:
    for index in range(documents + long_documents):
        yield generate_one(seed, index, documents, long_documents)


def sample_id(seed: int, index: int) -> str:
    return f"generated:{seed}:{index}"


def parse_sample_id(value: str) -> tuple[int, int]:
    """``"generated:SEED:INDEX"`` -> ``(seed, index)``; ValueError for anything else."""
    prefix, _, rest = value.partition(":")
    seed, _, index = rest.partition(":")
    if prefix != "generated" or not seed.lstrip("-").isdigit() or not index.isdigit():
        raise ValueError(f"not a generated-corpus sample id: {value!r}")
    return int(seed), int(index)


def describe(seed: int = 0, documents: int = 2000, long_documents: int = 3) -> dict:
    """Everything needed to regenerate the run, for the run manifest."""
    return {
        "generator": "verify.corpora.generated",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "documents": documents,
        "long_documents": long_documents,
        "total_documents": documents + long_documents,
        "long_document_indices": long_document_indices(documents, long_documents),
        "id_format": "generated:{seed}:{index}",
        "content_kinds": {k.name: k.weight for k in KINDS},
        "scripts": [s.name for s in SCRIPTS],
        "chat_fraction": CHAT_FRACTION,
    }
