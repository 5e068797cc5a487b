"""The self-test's own inputs, derived from the generated corpus and written under OUT so
the normal pipeline reads them like any corpus:

- ``unicode_corpus``: the corpus slice's documents with code points of the planted
  table fault's changed class spliced in, each inside one of the Unicode sweep's probe
  contexts (most documents of a general corpus hold none of them, and a class flip can
  only show where such a code point sits);
- ``session_traces``: agent-like sessions (``verify.trace/1``), each turn appending one
  document of the slice, for the history fault.

Everything is a function of the samples and the seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from verify.adversarial.unicode.contexts import CONTEXTS
from verify.sample import Sample, Segment

SPLICES_PER_DOCUMENT = 3
MAX_TURN_CHARS = 4000  # long documents are no agent turn


def changed_code_points(vocab: str, unicode_fault: str) -> np.ndarray:
    """Code points (surrogates excluded) whose class differs in the planted table."""
    from verify.engines.planted.unicode_tables import TableFault

    cls, _, table = unicode_fault.partition("@")
    changed = TableFault(vocab, cls, table).changed()
    return changed[(changed < 0xD800) | (changed > 0xDFFF)]


def unicode_corpus(samples: Iterable[Sample], code_points: np.ndarray, seed: int) -> list[Sample]:
    out = []
    for sample in samples:
        rng = random.Random(f"selftest-unicode:{seed}:{sample.id}")
        segments = list(sample.segments)
        plain = [i for i, s in enumerate(segments) if not s.allow_special]
        for _ in range(SPLICES_PER_DOCUMENT if plain and code_points.size else 0):
            i = rng.choice(plain)
            text = segments[i].text
            at = rng.randint(0, len(text))
            char = chr(int(code_points[rng.randrange(code_points.size)]))
            context = rng.choice(CONTEXTS).template.replace("{c}", char)
            segments[i] = Segment(text[:at] + context + text[at:], False)
        out.append(Sample(f"{sample.id}+unicode", tuple(segments)))
    return out


def write_corpus(path: Path, samples: Sequence[Sample]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for s in samples:
            fh.write(json.dumps({"id": s.id, "segments": [[t, a] for t, a in s.segments]}, ensure_ascii=False) + "\n")
    return path


def write_session_traces(path: Path, samples: Iterable[Sample], sessions: int, turns: int, seed: int) -> Path:
    """``sessions`` sessions of ``turns`` turns, turn t of session j appending the next
    short document of ``samples``."""
    short = (s for s in samples if sum(len(seg.text) for seg in s.segments) <= MAX_TURN_CHARS)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for j in range(sessions):
            for t in range(turns):
                sample = next(short, None)
                if sample is None:
                    return path
                fh.write(json.dumps({"schema": "verify.trace/1", "session": f"selftest:{seed}:{j}", "turn": t,
                                     "segments": [[x, a] for x, a in sample.segments]}, ensure_ascii=False) + "\n")
    return path
