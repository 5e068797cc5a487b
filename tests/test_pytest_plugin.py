"""The pytest plugin in a team's own suite: engines come from ini or command-line options,
a parity test passes on a correct engine, and a failing one prints the divergence record
(first differing token, byte offset, pieces on both sides, decoded with the reference's
vocabulary for an engine that cannot decode) and names every input it could not compare."""

from __future__ import annotations

import pytest

from verify.testing import ParityError, assert_same_ids

pytest_plugins = ["pytester"]

PLANTED_TEXT = 'back  "under" fund'

CORRECT_PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True
    def encode_batch(self, texts):
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

def correct():
    return Engine()
'''

SUITE = '''
from verify.pytest_plugin import assert_same_ids

def test_our_engine_matches(verify_engine, verify_reference):
    assert_same_ids(verify_engine, verify_reference, ["the quick tokenizer", "numbers 12345 and symbols!"])

def test_planted_engine_differs(verify_engine_factory, verify_reference):
    planted = verify_engine_factory(f"faulty:{verify_reference.spec}?kind=boundary&seed=3")
    assert_same_ids(planted, verify_reference, [TEXT])
'''


@pytest.fixture
def suite(pytester, plugin_dir, tiny_tokenizer_json, tiny_spec):
    (plugin_dir / "team_engine.py").write_text(CORRECT_PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    pytester.makeini(f"[pytest]\nverify_reference = {tiny_spec}\nverify_engine = hf:not-a-vocabulary-anywhere\n")
    pytester.makepyfile(test_parity=SUITE.replace("TEXT", repr(PLANTED_TEXT)))
    return pytester


def test_a_parity_test_passes_and_a_planted_difference_fails_with_its_record(suite, tiny_spec):
    with pytest.raises(ParityError) as caught:
        assert_same_ids(f"faulty:{tiny_spec}?kind=boundary&seed=3", tiny_spec, [PLANTED_TEXT])
    record = caught.value.records[0]
    assert record["expected_len"] == record["actual_len"]  # same count, same bytes: only the ids differ
    # the command line overrides the ini file's (broken) engine
    result = suite.runpytest("--verify-engine", "python:team_engine:correct", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        f"*first differing token {record['token_index']} at byte offset {record['byte_offset']}*",
        f"*reference  ids*{record['expected']['ids']}*",
        f"*pieces*{record['expected']['pieces']}*",
        f"*engine     ids*{record['actual']['ids']}*",
        f"*pieces*{record['actual']['pieces']}*",
    ])


def test_a_test_asking_for_an_unconfigured_engine_errors_with_the_reason(pytester, tiny_spec):
    pytester.makeini(f"[pytest]\nverify_reference = {tiny_spec}\n")
    pytester.makepyfile(test_parity=SUITE.replace("TEXT", repr(PLANTED_TEXT)))
    result = pytester.runpytest("-k", "matches", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no engine configured; pass --verify-engine SPEC*"])


BUGGY_PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    """A team's engine (plain text only, no decode) with one bug: after 'ß' it splits the next token."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def encode_batch(self, texts):
        out = []
        for text, enc in zip(texts, self.tok.encode_batch(list(texts), add_special_tokens=False)):
            ids = list(enc.ids)
            if "ß" in text:
                ids = ids[:2] + list(reversed(ids[2:4])) + ids[4:]
            out.append(ids)
        return out

def buggy():
    return Engine()
'''

TEAM_SUITE = '''
from verify.pytest_plugin import assert_same_ids

def test_plain_text(verify_engine, verify_reference):
    assert_same_ids(verify_engine, verify_reference, ["the quick tokenizer", TEXT])

def test_chat_turn(verify_engine, verify_reference):
    assert_same_ids(verify_engine, verify_reference, ["plain and fine", [("<|endoftext|>", True), (" after", False)]])
'''


def test_the_message_shows_both_sides_pieces_and_names_the_inputs_not_compared(pytester, plugin_dir,
                                                                               tiny_tokenizer_json, tiny_spec):
    (plugin_dir / "team_buggy.py").write_text(BUGGY_PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    text = "straße and the quick words"
    with pytest.raises(ParityError) as caught:
        assert_same_ids("python:team_buggy:buggy", tiny_spec, [text])
    (record,) = caught.value.records
    # the plugin cannot decode: its pieces come from the reference's vocabulary, and say so
    assert record["actual"]["pieces"] and record["actual"]["pieces_from"].startswith("decoded with the reference")
    assert record["actual"]["pieces"] != record["expected"]["pieces"]
    with pytest.raises(ParityError) as caught:
        assert_same_ids("python:team_buggy:buggy", tiny_spec, ["fine", [("<|endoftext|>", True), (" x", False)]])
    assert caught.value.records == []
    (skip,) = caught.value.skipped
    assert skip["sample_id"] == "input[1]" and skip["engine"] == "python:team_buggy:buggy"
    assert skip["input"] == [["<|endoftext|>", True], [" x", False]] and "allow_special" in skip["reason"]

    pytester.makeini(f"[pytest]\nverify_reference = {tiny_spec}\nverify_engine = python:team_buggy:buggy\n")
    pytester.makepyfile(test_team=TEAM_SUITE.replace("TEXT", repr(text)))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    shown = "\n".join(result.outlines)  # plain text: fnmatch would read the brackets as classes
    assert f"engine     ids[0:] = {record['actual']['ids']}" in shown
    assert f"pieces   = {record['actual']['pieces']}   (decoded with the reference's vocabulary" in shown
    assert f"pieces   = {record['expected']['pieces']}\n" in shown
    assert "on 0 of 2 input(s); 1 input(s) not compared" in shown
    assert "not compared: input[1]: python:team_buggy:buggy was not asked (" in shown
    assert 'input:     [["<|endoftext|>", true], [" after", false]]' in shown
    assert "remedy:    give the engine special-token support" in shown
