"""Edit scripts aimed at splice certificates: hypothesis search over sessions.

    verify replay --engine SPEC --reference SPEC --edits N [--seed S]

An edit script is a list of appends. The strategy builds a text from *hazard
blocks* -- the places where an incremental tokenizer's splice is unsafe -- and
cuts it inside them, so a turn boundary lands on:

  digits      a digit run cut inside a 3-digit group ("12" | "345")
  lookahead   a whitespace run before a word (``\\s+(?!\\S)``: "a   " | " b")
  contraction "don" | "'t", "we" | "'ll"
  long run    runs longer than the vocabulary's longest token ("=" * 300, spaces, letters)
  crlf        "\\r" | "\\n"
  combining   "e" | U+0301, ZWJ emoji sequences cut at the joiner
  special     a special-token literal as plain text cut in two ("<|endof" | "text|>")

For each candidate the property is the replay's: after every append the session's
ids equal the reference's from-scratch encode of the transcript. A counterexample
is shrunk by hypothesis (fewer appends, shorter blocks) and written as a session
finding (``session.turn_chars`` lets triage shrink it further to a (prefix, append)
pair). What the engine said about the failing splice (``update.notes``: for the
``repair`` engine, its window, widenings and the certificate rules it relied on)
is in the finding's ``session.update``. Truncate-and-append edits need a session
``truncate``, which the session protocol does not have yet: appends only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis import seed as hypothesis_seed

from verify.adversarial.fuzz.hypothesis_internals import without_local_constants
from verify.session_trace import SessionTrace, Turn
from verify.engines.sessions import apply_update
from verify.findings import Finding, describe_divergence
from verify.outcome import Failure, agree, is_ids
from verify.sample import Segment

HAZARDS: dict[str, list[str]] = {
    "digits": ["12345", "2024", "1234567", "99 999", "3.14159"],
    "lookahead": ["a    b", "x\t\t y", "end   \n  next", "word  ", "  lead"],
    "contraction": ["don't", "we'll", "I'M", "they've", "it's"],
    "long run": ["=" * 300, " " * 130, "a" * 260, "-" * 129 + ">", "0" * 40],
    "crlf": ["line\r\nnext", "\r\n\r\n", "a\r\n b"],
    "combining": ["e\u0301t\u00e9", "\U0001F469\u200d\U0001F4BB", "\U0001F44D\U0001F3FD", "\u0915\u094d\u0937"],
    "special": ["<|endoftext|>", "<|im_start|>", "<｜end▁of▁sentence｜>", "[INST]"],
}
GLUE = ["", " ", "\n", "the ", "x", ".", "(", "\u00e9", "\u4e2d"]


@st.composite
def edit_scripts(draw, max_blocks: int = 8):
    """(appends, hazards used): a text of hazard blocks and glue, cut inside the blocks."""
    kinds = draw(st.lists(st.sampled_from(sorted(HAZARDS)), min_size=1, max_size=max_blocks))
    text, cuts, used = "", [], []
    for kind in kinds:
        text += draw(st.sampled_from(GLUE))
        block = draw(st.sampled_from(HAZARDS[kind]))
        inside = draw(st.integers(1, max(1, len(block) - 1)))
        cuts.append(len(text) + inside)
        used.append(kind)
        text += block
    text += draw(st.sampled_from(GLUE))
    extra = draw(st.lists(st.integers(0, len(text)), max_size=3))
    points = sorted({c for c in cuts + extra if 0 < c < len(text)})
    appends = [text[a:b] for a, b in zip([0] + points, points + [len(text)])]
    return appends, used


@dataclass
class SessionFuzzResult:
    examples: int = 0
    findings: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    capped: bool = False  # the time budget ended the search before its examples


class _Found(Exception):
    pass


def first_divergent_turn(reference, executor, appends: list[str], key: str = "fuzz"):
    """(turn, expected, actual, update) of the first append after which the session's ids
    differ from the reference's; ``None`` when every turn agrees (or either side fails:
    failures are not what this search is for)."""
    if isinstance(executor.open_session(key), Failure):
        return None
    try:
        ids = np.zeros(0, dtype=np.uint32)
        for turn, _ in enumerate(appends):
            update = executor.session_append(key, [Segment(appends[turn], False)])
            if isinstance(update, Failure):
                return None
            ids = apply_update(ids, update)
            (expected,) = reference.encode([_trace(appends).transcript(turn)])
            if is_ids(expected) and not agree(expected, ids):
                return turn, expected, ids, update
        return None
    finally:
        executor.close_session(key)


def _trace(appends: list[str], sid: str = "edits") -> SessionTrace:
    return SessionTrace(sid, tuple(Turn(i, (Segment(a, False),)) for i, a in enumerate(appends)))


def fuzz_sessions(reference, executor, writer, *, max_examples: int = 200, seed: int = 0,
                  budget_s: float = 120.0, source: str = "edits") -> SessionFuzzResult:
    """Search edit scripts for one stateful candidate; one shrunk finding at most. ``writer``:
    anything with ``FindingWriter.write`` (a shard's result on the pipeline,
    ``verify.adversarial.fuzz.edits_hunt``)."""
    result = SessionFuzzResult()
    started = time.monotonic()
    failing: list = []

    @settings(max_examples=max_examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
    @given(edit_scripts())
    def prop(script):
        appends, used = script
        if time.monotonic() - started > budget_s and not failing:
            result.capped = True
            return
        result.examples += 1
        found = first_divergent_turn(reference, executor, appends)
        if found is not None:
            failing[:] = [(appends, used, found)]
            raise _Found()

    prop = hypothesis_seed(seed)(prop)  # a reproducible search
    try:
        with without_local_constants():
            prop()
    except _Found:
        pass
    if failing:
        appends, used, (turn, expected, actual, update) = failing[-1]
        trace = _trace(appends[:turn + 1], f"edits:{seed}")
        sample = trace.transcript(turn)
        fields = describe_divergence(sample, expected, actual, reference.token_bytes(expected),
                                     executor.token_bytes(actual))
        fields["session"] = {"id": trace.id, "turn": turn, "turns": turn + 1,
                             "turn_chars": [len(a) for a in appends[:turn + 1]],
                             "prefix_chars": sum(len(a) for a in appends[:turn]),
                             "append": [[appends[turn], False]], "hazards": used,
                             "update": {"replace_from": int(update.replace_from), "notes": update.notes}}
        certificate = update.notes.get("rules") if isinstance(update.notes, dict) else None
        if certificate is not None:
            fields["certificate"] = certificate
        result.findings.append(writer.write(Finding(executor.spec, reference.spec, sample, "ids", source, fields,
                                                    detail=f"edits#{turn}")))
    result.seconds = time.monotonic() - started
    return result
