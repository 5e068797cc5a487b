"""Signatures of findings, their keys, clusters and tags."""

import pytest

from verify.classify import cluster, load_tags, script, signature, signature_key, tags_for
from verify.errors import ConfigError


def ids_record(text, offset, engine="planted:x", sample_id="s"):
    return {"kind": "ids", "engine": engine, "reference": "fake:bytes", "sample_id": sample_id,
            "char_offset": offset, "input": [[text, False]]}


def test_signature_of_a_space_to_letter_difference():
    text = "hello \u65e5\u672c"
    sig = signature(ids_record(text, 6), text)
    assert sig["category"] == ["Zs", "Lo"] and sig["script"] == ["Common", "Han"]
    assert sig["transition"] == "space|letter" and sig["flags"] == []
    assert signature_key(sig) == "ids/Zs+Lo/Common+Han/space|letter"


@pytest.mark.parametrize("ch, want", [("a", "Latin"), ("\u0436", "Cyrillic"), ("\u05d0", "Hebrew"),
                                      ("\u0663", "Arabic"), ("\ud55c", "Hangul"), ("\u3042", "Hiragana"),
                                      ("\u0301", "Inherited"), ("7", "Common"), ("!", "Common"),
                                      ("\U00010300", "Old_Italic"), ("\ue000", "Unknown")])
def test_script_from_names(ch, want):
    assert script(ch) == want


def test_transitions_and_edges():
    text = "abc123"
    assert signature(ids_record(text, 3), text)["transition"] == "letter|digit"
    assert signature(ids_record(text, 0), text)["transition"] == "start|letter"
    sig = signature(ids_record(text, 6), text)
    assert sig["transition"] == "digit|end" and signature_key(sig) == "ids/Nd+-/Common+-/digit|end"


def test_flags():
    spaces = "x" + " " * 1500 + "y"
    assert "long-run" in signature(ids_record(spaces, 1501), spaces)["flags"]
    assert "long-run" not in signature(ids_record("x   y", 4), "x   y")["flags"]
    special = "user text <|endoftext|> more"
    assert "special" in signature(ids_record(special, 10), special)["flags"]
    assert "special" in signature(ids_record("[INST] hi", 7), "[INST] hi")["flags"]
    big = "ab" * 60_000
    assert "long-input" in signature(ids_record(big, 5), big)["flags"]
    nfd = "cafe\u0301 au lait"
    assert "nfc" in signature(ids_record(nfd, 4), nfd)["flags"]
    assert "nfc" not in signature(ids_record("caf\u00e9", 3), "caf\u00e9")["flags"]
    key = signature_key(signature(ids_record(" " * 1200 + "<|sep|>" + "\u00e9" * 120_000, 1199),
                                  " " * 1200 + "<|sep|>" + "\u00e9" * 120_000))
    assert key.endswith("/special/long-run/long-input")


def test_failure_signatures_carry_kind_type_and_signal():
    crash = {"kind": "crash", "error": {"type": "WorkerDied", "message": "killed by SIGSEGV; stderr: ..."}}
    assert signature_key(signature(crash, "abc")) == "crash/WorkerDied/SIGSEGV"
    error = {"kind": "error", "error": {"type": "ValueError", "message": "bad"}}
    assert signature_key(signature(error, "x" * 200_000)) == "error/ValueError/long-input"
    assert signature_key(signature({"kind": "ids", "char_offset": None}, "abc")) == "ids/unlocated"


def test_clusters_group_same_signatures_and_separate_different_ones():
    records = [
        ids_record("ab 12", 3, sample_id="a"),      # space|digit
        ids_record("xyz 99", 4, sample_id="b"),     # space|digit: same cluster
        ids_record("ab\u65e5", 2, sample_id="c"),   # letter|letter, different scripts
        ids_record("ab 12", 3, engine="planted:other", sample_id="d"),  # same signature, other engine
    ]
    clusters = cluster(records)
    assert [(c.engine, c.count, c.sample_ids) for c in clusters] == [
        ("planted:x", 2, ["a", "b"]), ("planted:x", 1, ["c"]), ("planted:other", 1, ["d"])]
    assert clusters[0].key == clusters[2].key != clusters[1].key
    assert clusters[0].members == [0, 1]


def test_a_tags_row_tags_a_cluster(tmp_path):
    path = tmp_path / "tags.toml"
    path.write_text('[[tag]]\nengine = "^planted:x$"\nsignature = "space\\\\|digit"\ntag = "digits after space"\n'
                    'link = "https://example.invalid/issue/1"\n')
    rules = load_tags(path)
    clusters = cluster([ids_record("ab 12", 3), ids_record("ab\u65e5", 2),
                        ids_record("ab 12", 3, engine="planted:other")], rules)
    assert clusters[0].tags == ["digits after space"] and clusters[0].links == ["https://example.invalid/issue/1"]
    assert clusters[1].tags == [] and clusters[2].tags == []
    assert tags_for("planted:x", "ids/Zs+Nd/Common+Common/space|digit", rules)[0] == ["digits after space"]


def test_bad_tags_file_is_a_config_error(tmp_path):
    path = tmp_path / "tags.toml"
    path.write_text('[[tag]]\nsignature = "("\ntag = "x"\n')
    with pytest.raises(ConfigError, match="bad 'signature' regex"):
        load_tags(path)
    assert load_tags(tmp_path / "missing.toml") == []


def test_the_shipped_tags_file_loads():
    rules = load_tags()
    assert rules, "adversarial/tags.toml loaded no rules"
    assert all(rule.tag for rule in rules)
