"""Causes, not symptoms: a minimised reproducer explained, and one key per cause (verify.causes).

No engine runs here: the ``Probe`` answers what explaining asks (does a run one unit shorter
agree?) from a rule the test states."""

from __future__ import annotations

import random

from verify.causes import Probe, explain, merge_length, shape


def block(text: str, **located) -> dict:
    return {"input": [[text, False]], **located}


def agrees_below(threshold_bytes: int) -> Probe:
    """A probe for an engine that differs on runs of at least ``threshold_bytes`` UTF-8 bytes."""
    return Probe(agree=lambda segments: len(segments[0][0].encode()) < threshold_bytes)


def test_one_length_threshold_is_one_cause_across_character_classes():
    n = random.randint(300, 5000)  # the threshold, in bytes
    probe = agrees_below(n)
    wide = -(-n // 3)  # the fewest 3-byte characters reaching n bytes
    reproducers = ["a" * n, "A" * n, "." * n, "\t" * n, "\u3000" * wide]
    causes = [("riptoken", explain("ids", None, block(text), probe)) for text in reproducers]
    assert all(c.kind == "length" for _, c in causes)
    merged = merge_length(causes)
    keys = {merged[i].key for i in range(len(causes))}
    assert keys == {f"ids/length/bytes>={n}"}, keys  # the wide run joins by bytes, so the measure is bytes
    assert "5 character classes" in merged[0].name


def test_a_character_threshold_is_named_in_characters():
    n = random.randint(20_000, 30_000)
    probe = Probe(agree=lambda segments: len(segments[0][0]) < n)
    causes = [("e", explain("ids", None, block(ch * n), probe)) for ch in ("1", " ", "\u00e9")]
    merged = merge_length(causes)
    assert {merged[i].key for i in range(3)} == {f"ids/length/chars>={n}"}


def test_two_thresholds_stay_two_causes():
    causes = [("tokie", explain("ids", None, block(" " * 82), agrees_below(82))),
              ("tokie", explain("ids", None, block("\n" * 34), agrees_below(34)))]
    merged = merge_length(causes)
    assert merged[0].key != merged[1].key


def test_a_character_at_a_threshold_is_one_cause_whatever_the_character():
    n = random.randint(20_000, 30_000)
    # an engine that differs when a character other than the run's sits at n characters or beyond
    probe = Probe(agree=lambda segments: len(segments[0][0]) < n or len(set(segments[0][0])) == 1)
    reproducers = ["1" * (n - 4) + "\x1c" + "1" * 3, "1" * (n - 3) + "\x85" + "1" * 2, " " * (n - 2) + "\u2028" + " "]
    causes = [("b", explain("ids", None, block(t), probe)) for t in reproducers]
    assert all(c.kind == "cut" for _, c in causes)
    merged = merge_length(causes)
    assert {merged[i].key for i in range(3)} == {f"ids/cut/chars>={n}"}


def test_other_characters_in_a_long_reproducer_are_incidental_when_the_plain_run_differs_too():
    """riptoken's one rule (a piece of at least N bytes): the minimiser keeps whatever characters
    make the piece N bytes long -- a NUL near the end, slashes among dashes -- but the plain run
    as long differs too, so it is the run's threshold, one cause with the plain runs."""
    n = random.randint(300, 5000)
    probe = agrees_below(n)
    reproducers = ["a" * n, "." * (n - 5) + "\x00" + "." * 4, ("//" + "-" * 112) * (n // 114) + "-" * (n % 114),
                   "!" * (n - 15) + "/" + "!" * 10 + "\x00" + "!" * 3]
    causes = [("riptoken", explain("ids", None, block(t), probe)) for t in reproducers]
    assert [c.kind for _, c in causes] == ["length"] * 4, [c.key for _, c in causes]
    merged = merge_length(causes)
    assert {merged[i].key for i in range(4)} == {f"ids/length/>={n}"}


def test_a_threshold_one_character_off_does_not_rename_the_rest():
    """``'"'×(n+1)`` joins the n-byte threshold through the wide runs (the fewest 3-byte characters
    reaching n bytes make n+2), but the others' bound names the cause."""
    n = 3 * random.randint(100, 1600) + 1
    probe = agrees_below(n)
    wide = -(-n // 3)
    causes = [("r", explain("ids", None, block(t), probe)) for t in ("a" * n, "\u3000" * wide, "\u200b" * wide)]
    causes.append(("r", explain("ids", None, block('"' * (n + 1)), agrees_below(n + 1))))
    merged = merge_length(causes)
    assert {merged[i].key for i in range(4)} == {f"ids/length/bytes>={n}"}


def test_a_run_that_differs_one_shorter_is_no_threshold():
    cause = explain("ids", None, block("a" * 500), Probe(agree=lambda segments: False))
    assert cause.kind == "reproducer"


def test_contraction_special_and_unicode_causes_are_named_as_such():
    contraction = [explain("ids", None, block(ws + "'s", char_offset=1), Probe()) for ws in ("\n", "\t", "\u3000")]
    assert {c.key for c in contraction} == {"ids/contraction/after:space"}
    special = explain("ids", None, {"input": [["x <|endoftext|> y", False]], "actual": {"pieces": ["<|endoftext|>"]},
                                    "expected": {"pieces": ["<", "|"]}}, Probe(specials=("<|endoftext|>",)))
    assert special.key == "ids/special/plain:as-special"
    assert explain("ids", None, block("\u180e$a"), Probe()).key == "ids/unicode/whitespace@definition"


def test_unexplained_reproducers_never_share_a_key():
    a = explain("ids", None, block("a-"), Probe())
    b = explain("ids", None, block("a "), Probe())
    assert a.kind == b.kind == "reproducer" and a.key != b.key
    assert a.key == explain("ids", None, block("a-"), Probe()).key  # the same bug tomorrow: the same key
    # a letter and its combining mark is no mystery: NFC composes them
    assert explain("ids", None, block("a\u0300"), Probe()).key == "ids/unicode/nfc@normalization"


def test_one_rule_on_every_whitespace_character_is_one_cause():
    """An engine that drops a trailing whitespace piece: each finding shrinks to its own
    whitespace character (the minimiser keeps its characters), and all are one cause."""
    def dropped(ch: str) -> dict:
        return block(ch, expected={"start": 0, "ids": [ord(ch)], "pieces": [ch]},
                     actual={"start": 0, "ids": [], "pieces": []})

    keys = {explain("ids", None, dropped(ch), Probe()).key for ch in (" ", "\t", "\n", "\x0c")}
    assert keys == {"ids/reproducer/space/drops"}
    added = block(" ", expected={"start": 0, "ids": [], "pieces": []}, actual={"start": 0, "ids": [5], "pieces": ["x"]})
    assert explain("ids", None, added, Probe()).key == "ids/reproducer/space/adds"  # what it does names it too
    assert explain("ids", None, dropped("a"), Probe()).key != explain("ids", None, dropped(" "), Probe()).key


def test_an_unminimised_finding_is_its_own_cluster():
    a = explain("ids", None, None, Probe(), symptom="ids/unlocated", input_key="0" * 32)
    b = explain("ids", None, None, Probe(), symptom="ids/unlocated", input_key="1" * 32)
    assert a.kind == "unminimised" and a.key != b.key


def test_a_failure_keeps_its_kind_and_type_in_the_key():
    probe = agrees_below(40)
    cause = explain("error", "PanicException", {"input": [["1" * 40, False]], "error": {"type": "PanicException"}},
                    probe)
    assert cause.key.startswith("error/PanicException/length/")


def test_shapes_are_short():
    assert shape(" " * 4096 + "a") == "space*·letter"
    assert shape("The quick brown fox jumps over the lazy dog.").startswith("mixed(")
