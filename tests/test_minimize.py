"""The minimiser: bounded, deterministic, and small results even from megabyte inputs."""

import random
import time
import unicodedata

import numpy as np
import pytest

from verify.executors import LocalExecutor
from verify.minimize import char_rank, minimize, simpler_chars
from verify.sample import Sample
from verify.triage import still_fails

from planted import FastBytes, RaisesOn, ZeroesPattern

PATTERN = "Zq\u00e9"  # the planted bug: a short pattern anywhere in the text


def document(n: int, seed: int = 7, at: float = 0.61) -> str:
    rng = random.Random(seed)
    alphabet = "abcdefghij klmnopqrstuvwxyz\u00e9\u65e5\u672c\n0123456789.,"
    text = "".join(rng.choice(alphabet) for _ in range(n))
    pos = int(n * at)
    return text[:pos] + PATTERN + text[pos:]


def ids_predicate():
    return still_fails("ids", LocalExecutor(FastBytes()), LocalExecutor(ZeroesPattern(PATTERN)))


def test_a_divergence_buried_in_a_megabyte_shrinks_to_a_few_characters():
    sample = Sample.plain("big", document(1 << 20))
    predicate = ids_predicate()
    assert predicate(sample)
    start = time.monotonic()
    result = minimize(sample, predicate)
    assert time.monotonic() - start < 5
    assert result.reproduced and not result.stopped_on_budget
    assert result.chars <= 40
    assert result.sample.text == PATTERN  # 1-minimal: nothing can be removed or simplified
    assert result.calls < 200


def test_minimisation_is_deterministic():
    sample = Sample.plain("d", document(20_000, seed=3))
    first, second = minimize(sample, ids_predicate()), minimize(sample, ids_predicate())
    assert first.sample == second.sample and first.calls == second.calls


def test_no_candidate_is_tested_twice():
    seen = []

    def predicate(s):
        key = tuple((seg.text, seg.allow_special) for seg in s.segments)
        seen.append(key)
        return "xy" in s.text

    minimize(Sample.plain("s", "aaxybbxycc" * 3), predicate)
    assert len(seen) == len(set(seen))


def test_simplification_prefers_ascii():
    letter = minimize(Sample.plain("l", "\u65e5\u672c\u8a9e!"), lambda s: any(c.isalpha() for c in s.text))
    assert letter.sample.text == "a"
    digit = minimize(Sample.plain("d", "\u0663\u0664"), lambda s: any(unicodedata.category(c) == "Nd" for c in s.text))
    assert digit.sample.text == "0"
    # when ASCII does not do, a smaller code point of the same category does
    han = minimize(Sample.plain("h", "\u8a9e"), lambda s: any(unicodedata.category(c) == "Lo" and ord(c) > 0x3000
                                                          for c in s.text))
    (ch,) = han.sample.text
    assert unicodedata.category(ch) == "Lo" and 0x3000 < ord(ch) < 0x8A9E


def test_simpler_chars_are_strictly_simpler():
    for ch in ["a", "0", " ", "b", "\u00e9", "\u65e5", "\U0001f600", "\u0301"]:
        options = simpler_chars(ch)
        assert all(char_rank(o) < char_rank(ch) for o in options)
        assert list(options) == sorted(options, key=char_rank)
    assert simpler_chars("a") == ()


def test_segments_are_dropped_and_merged():
    sample = Sample.from_segments("chat", [("hello ", False), ("<|sep|>", True), ("wor", False), ("ld BUG", False)])

    def predicate(s):
        return "BUG" in "".join(seg.text for seg in s.segments if not seg.allow_special)

    result = minimize(sample, predicate)
    assert [(seg.text, seg.allow_special) for seg in result.sample.segments] == [("BUG", False)]

    kept_special = minimize(sample, lambda s: any(seg.allow_special for seg in s.segments) and "BUG" in s.text)
    assert [seg.allow_special for seg in kept_special.sample.segments] == [True, False]
    assert kept_special.chars == 3


def test_a_crash_kind_finding_minimises_with_a_kind_predicate():
    class Crashes:  # an executor whose engine "crashes" on a trigger (as the isolated executor reports it)
        spec = "planted:crashes"

        def encode(self, samples):
            from verify.findings import Failure
            return [Failure("crash", "WorkerDied", "killed by SIGSEGV") if "BOOM" in s.text else np.zeros(1, np.uint32)
                    for s in samples]

    predicate = still_fails("crash", None, Crashes(), "WorkerDied")
    result = minimize(Sample.plain("c", "lots of text before BOOM and after " * 50), predicate)
    assert result.sample.text == "BOOM"
    # a different kind of failure does not count
    errors = LocalExecutor(RaisesOn("BOOM"))
    assert not still_fails("crash", None, errors)(Sample.plain("e", "BOOM"))
    assert still_fails("error", None, errors, "ValueError")(Sample.plain("e", "BOOM"))


def test_predicate_exceptions_count_as_not_failing():
    def predicate(s):
        if len(s.text) < 6:
            raise RuntimeError("flaky")
        return "needle" in s.text

    result = minimize(Sample.plain("p", "hay needle hay"), predicate)
    assert result.sample.text == "needle"


def test_budget_and_call_limits_stop_the_search():
    sample = Sample.plain("b", document(50_000))
    limited = minimize(sample, ids_predicate(), max_calls=5)
    assert limited.calls == 5 and limited.stopped_on_budget and limited.reproduced
    assert limited.chars < 50_000 + len(PATTERN)  # still the best found so far

    def slow(s):
        time.sleep(0.01)
        return PATTERN in s.text

    timed = minimize(sample, slow, budget_s=0.1)
    assert timed.stopped_on_budget and timed.seconds < 1


def test_a_sample_that_does_not_fail_comes_back_unchanged():
    sample = Sample.plain("ok", "fine text")
    result = minimize(sample, lambda s: False)
    assert not result.reproduced and result.sample == sample and result.calls == 1


@pytest.mark.parametrize("at", [0.0, 0.5, 0.999])
def test_pattern_position_does_not_matter(at):
    result = minimize(Sample.plain("p", document(100_000, at=at)), ids_predicate())
    assert result.sample.text == PATTERN
