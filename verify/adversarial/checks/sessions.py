"""History-dependence checks for stateful engines (``verify check`` on an engine with
``capabilities.sessions``): the ``sessions`` property of ``verify.adversarial.checks.metamorphic``.

For each corpus sample T, with the engine's own from-scratch encode as the baseline
(whatever the right answer is, a session must not depend on how its text arrived):

  splits   T reached through different append scripts -- one append, cuts at hazard
           points (inside digit runs, whitespace runs, between \\r and \\n, before
           combining marks and joiners), fixed 7-character pieces -- gives the ids of
           the from-scratch encode of T
  prefix   T appended after a short and after a long prefix (ending in a paragraph
           break) gives the ids of the from-scratch encode of prefix + T: an engine
           whose answer depends on how much it has seen (a cache keyed by length, a
           repair window that grows with the transcript) shows here
  resume   the session's state saved half way and resumed in a fresh session of the
           same engine, then the rest appended, equals the uninterrupted session

Each violation is one finding with ``check: sessions`` and ``session_check`` naming
the property and the script; the input is the whole transcript.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from verify.engines.sessions import apply_update
from verify.outcome import Failure, agree, is_ids
from verify.sample import Sample, Segment

CHECK = "sessions"
SHORT_PREFIX = "Note:\n\n"
LONG_PREFIX = ("The build log follows; 2 warnings, 0 errors.\n" * 200) + "\n"
_HAZARD = re.compile(r"(?<=\d)(?=\d)|(?<=\s)(?=\s)|(?<=\r)(?=\n)|(?=[\u0300-\u036f\u200d\ufe0f])|(?<=')(?=\w)")
MAX_CHARS = 20_000  # longer samples get the splits check on their first 20k characters


def split_scripts(text: str) -> dict[str, list[str]]:
    """Append scripts that all end in ``text``."""
    cuts = [m.start() for m in _HAZARD.finditer(text)][:64]
    hazard = [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)]) if b > a]
    return {"one append": [text], "hazard cuts": hazard,
            "7-char pieces": [text[i:i + 7] for i in range(0, len(text), 7)]}


def _replay(executor, key: str, pieces: Sequence[str], state: bytes | None = None,
            ids: np.ndarray | None = None):
    """Append ``pieces`` to a fresh (or resumed) session: (ids, state) or a Failure."""
    opened = executor.open_session(key, state)
    if isinstance(opened, Failure):
        return opened
    try:
        ids = np.zeros(0, dtype=np.uint32) if ids is None else ids
        for piece in pieces:
            update = executor.session_append(key, [Segment(piece, False)])
            if isinstance(update, Failure):
                return update
            ids = apply_update(ids, update)
        saved = executor.session_state(key)
        return ids, (saved if isinstance(saved, bytes) else None)
    finally:
        executor.close_session(key)


def check_sessions(checker, sample: Sample, baseline: np.ndarray) -> None:
    """Every session property on one plain sample; findings go through ``checker``."""
    text = sample.text[:MAX_CHARS]
    engine = checker.fresh
    if len(text) < len(sample.text):
        (baseline,) = engine.encode([Sample.plain(sample.id, text)])
        if not is_ids(baseline):
            return
    for name, pieces in split_scripts(text).items():
        _compare(checker, sample, Sample.plain(sample.id, text), baseline, _replay(engine, "check", pieces),
                 {"session_check": "splits", "script": name, "appends": len(pieces)})
    for label, prefix in (("short", SHORT_PREFIX), ("long", LONG_PREFIX)):
        whole = Sample.plain(f"{sample.id}+{label}-prefix", prefix + text)
        (expected,) = engine.encode([whole])
        if not is_ids(expected):
            checker._failed(sample, CHECK, expected, f"{label} prefix")
            continue
        _compare(checker, sample, whole, expected, _replay(engine, "check", [prefix, text]),
                 {"session_check": "prefix", "prefix": label, "prefix_chars": len(prefix)})
    half = len(text) // 2
    first = _replay(engine, "check-a", [text[:half]])
    if isinstance(first, Failure):
        checker._failed(sample, CHECK, first, "resume: first half")
        return
    ids, state = first
    if state is None:
        return  # the engine cannot save a session: nothing to resume
    _compare(checker, sample, Sample.plain(sample.id, text), baseline,
             _replay(engine, "check-b", [text[half:]], state=state, ids=ids),
             {"session_check": "resume", "resumed_at_char": half})


def _compare(checker, sample: Sample, shown: Sample, expected: np.ndarray, result, extra: dict) -> None:
    from verify.findings import describe_divergence

    if isinstance(result, Failure):
        checker._failed(sample, CHECK, result, extra["session_check"])
        return
    ids, _ = result
    checker.counts.checked[CHECK] += 1
    if agree(expected, ids):
        return
    checker.counts.violations[CHECK] += 1
    checker.mark(sample, "diverged")
    fields = describe_divergence(shown, expected, ids, checker.fresh.token_bytes(expected),
                                 checker.fresh.token_bytes(ids))
    detail = f"{CHECK}:{extra['session_check']}:{extra.get('script') or extra.get('prefix') or ''}"
    checker.emit(shown, "ids", CHECK, {**fields, **extra}, detail=detail)
