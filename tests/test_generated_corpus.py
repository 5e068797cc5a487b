"""The embedded generated corpus: deterministic, self-reproducing, and covering every content class."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from verify.corpora import generated
from verify.sample import Sample

ROOT = Path(__file__).resolve().parents[1]


def digest(samples) -> str:
    h = hashlib.sha256()
    for s in samples:
        h.update(json.dumps(s.to_json(), ensure_ascii=True).encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


@pytest.fixture(scope="module")
def default_run() -> list[Sample]:
    return list(generated.generate())


def test_same_seed_same_samples():
    assert list(generated.generate(7, 200, 1)) == list(generated.generate(7, 200, 1))


@pytest.mark.parametrize("hashseed", ["0", "12345"])
def test_identical_across_processes(hashseed):
    code = ("import hashlib, json\n"
            "from verify.corpora import generated\n"
            "h = hashlib.sha256()\n"
            "for s in generated.generate(3, 150, 1):\n"
            "    h.update(json.dumps(s.to_json(), ensure_ascii=True).encode('ascii')); h.update(b'\\n')\n"
            "print(h.hexdigest())\n")
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == digest(generated.generate(3, 150, 1))


def test_different_seeds_differ():
    a = [s.text for s in generated.generate(0, 50, 0)]
    b = [s.text for s in generated.generate(1, 50, 0)]
    assert sum(x != y for x, y in zip(a, b)) > 45


def test_ids_and_count(default_run):
    assert len(default_run) == 2003
    assert [s.id for s in default_run] == [f"generated:0:{i}" for i in range(2003)]
    assert generated.parse_sample_id("generated:0:17") == (0, 17)
    with pytest.raises(ValueError):
        generated.parse_sample_id("file.txt:17")


def test_generate_one_matches_stream(default_run):
    indices = [0, 1, 2, 99, 1000, 2002, *generated.long_document_indices(2000, 3)]
    for i in indices:
        assert generated.generate_one(0, i) == default_run[i]
    small = list(generated.generate(5, 40, 2))
    for i in range(len(small)):
        assert generated.generate_one(5, i, documents=40, long_documents=2) == small[i]
    with pytest.raises(IndexError):
        generated.generate_one(0, 2003)


def test_regular_documents_do_not_depend_on_run_length():
    longs = set(generated.long_document_indices(100, 2)) | set(generated.long_document_indices(2000, 3))
    for i in range(100):
        if i not in longs:
            assert generated.generate_one(4, i, 100, 2) == generated.generate_one(4, i, 2000, 3)


def test_every_text_is_valid_utf8(default_run):
    for s in default_run:
        for seg in s.segments:
            seg.text.encode("utf-8")  # raises on a lone surrogate


def test_long_documents(default_run):
    long_ids = {default_run[i].id for i in generated.long_document_indices(2000, 3)}
    over = {s.id for s in default_run if len(s.text) > 100_000}
    assert long_ids <= over and len(over) >= 3
    for ld in (0, 4):  # 4 cycles through every long-document kind
        assert sum(len(s.text) > 100_000 for s in generated.generate(2, 10, ld)) >= ld


def test_size_is_in_range(default_run):
    chars = sum(len(s.text) for s in default_run)
    assert 1_500_000 < chars < 4_500_000


def test_describe():
    d = generated.describe(9, 100, 2)
    json.dumps(d)
    assert d["seed"] == 9 and d["documents"] == 100 and d["long_documents"] == 2
    assert d["long_document_indices"] == generated.long_document_indices(100, 2)
    assert "kind" not in d and "name" not in d  # the source adds its own
    assert len(d["scripts"]) >= 12


def test_tables_hold_only_assigned_characters():
    tables = {
        "scripts": "".join(generated._vocabulary(0, s.name)[0][i] for s in generated.SCRIPTS for i in range(300)),
        "emoji": generated.EMOJI + generated.EMOJI_PEOPLE + generated.EMOJI_OBJECTS + generated.TEXT_DEFAULT_EMOJI,
        "marks": generated.COMBINING_MARKS + generated.SYMBOL_MARKS + generated.SCRIPT_MARKS,
    }
    for name, chars in tables.items():
        bad = sorted({f"U+{ord(c):04X}" for c in chars if unicodedata.category(c) == "Cn"})
        assert not bad, f"{name}: unassigned {bad[:10]}"


def _char_in(lo: int, hi: int):
    pattern = re.compile(f"[{chr(lo)}-{chr(hi)}]")
    return lambda text: pattern.search(text) is not None


ZWJ_SEQUENCE = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF][\U0001F3FB-\U0001F3FF\ufe0f]?\u200d"
                          "[\U0001F300-\U0001FAFF\u2600-\u27BF]")
CONTENT_CLASSES = {
    "cyrillic": _char_in(0x0430, 0x044F),
    "greek": _char_in(0x03B1, 0x03C9),
    "arabic": _char_in(0x0621, 0x064A),
    "hebrew": _char_in(0x05D0, 0x05EA),
    "devanagari": _char_in(0x0915, 0x0939),
    "bengali": _char_in(0x0995, 0x09B9),
    "thai": _char_in(0x0E01, 0x0E2E),
    "cjk": _char_in(0x4E00, 0x9FFF),
    "kana": _char_in(0x3041, 0x30FA),
    "hangul": _char_in(0xAC00, 0xD7A3),
    "georgian": _char_in(0x10D0, 0x10F0),
    "armenian": _char_in(0x0561, 0x0586),
    "tamil": _char_in(0x0B95, 0x0BB9),
    "ethiopic": _char_in(0x1200, 0x1248),
    "vietnamese": lambda t: "ệ" in t or "ự" in t or "ở" in t,
    "emoji_zwj": lambda t: ZWJ_SEQUENCE.search(t) is not None,
    "skin_tone": _char_in(0x1F3FB, 0x1F3FF),
    "flag": lambda t: re.search("[\U0001F1E6-\U0001F1FF]{2}", t) is not None,
    "keycap": lambda t: "\ufe0f\u20e3" in t,
    "vs16": lambda t: "\u2764\ufe0f" in t or "\u263a\ufe0f" in t,
    "stacked_combining": lambda t: re.search("[\u0300-\u036f]{3}", t) is not None,
    "crlf": lambda t: "\r\n" in t,
    "control": lambda t: re.search("[\x00-\x08\x0e-\x1f\x7f\x80-\x9f]", t) is not None,
    "nul": lambda t: "\x00" in t,
    "ideographic_space": lambda t: "\u3000" in t,
    "nbsp": lambda t: "\u00a0" in t,
    "zwsp": lambda t: "\u200b" in t,
    "bom": lambda t: "\ufeff" in t,
    "line_separator": lambda t: "\u2028" in t,
    "tabs": lambda t: "\t\t" in t,
    "many_newlines": lambda t: "\n" * 10 in t,
    "long_spaces": lambda t: " " * 50 in t,
    "digit_run_20": lambda t: re.search(r"\d{20}", t, re.ASCII) is not None,
    "uuid": lambda t: re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", t) is not None,
    "thousands": lambda t: re.search(r"\d,\d{3},\d{3}", t) is not None,
    "python": lambda t: "def " in t and "return" in t,
    "rust": lambda t: "pub fn " in t,
    "javascript": lambda t: "const " in t and "=>" in t,
    "c": lambda t: "#include <stdio.h>" in t,
    "json": lambda t: t.lstrip().startswith("{\"") or "\": {" in t,
    "upper_contraction": lambda t: re.search(r"[A-Z]'(T|S|RE|VE|M|LL|D)\b", t) is not None,
    "mixed_case_contraction": lambda t: re.search(r"[a-z]'(Ll|lL|Re|rE|Ve|vE)\b", t) is not None,
}


def test_stream_covers_every_content_class(default_run):
    missing = set(CONTENT_CLASSES)
    for s in default_run:
        text = s.text
        missing -= {name for name in missing if CONTENT_CLASSES[name](text)}
        if not missing:
            break
    assert not missing, f"content classes never generated: {sorted(missing)}"


def test_special_literals_as_plain_text_and_as_specials(default_run):
    plain_literal = any("<|endoftext|>" in seg.text for s in default_run for seg in s.segments
                        if not seg.allow_special)
    assert plain_literal
    segmented = [s for s in default_run if len(s.segments) > 1]
    assert any(seg.allow_special for s in segmented for seg in s.segments)
    # The user-text segments of chat samples sometimes carry literals too.
    assert any(not seg.allow_special and "<|" in seg.text for s in segmented for seg in s.segments)
    fraction = sum(not s.is_plain for s in default_run) / len(default_run)
    assert 0.02 < fraction < 0.10
    for s in segmented:
        for seg in s.segments:
            if seg.allow_special:
                assert re.fullmatch(r"(<\|?[a-z_/]+\|?>)+", seg.text), seg.text


# sha256 over every sample of the run, in order: the id, then each segment's allow_special flag and
# text, all length-prefixed (see ``_pinned_digest``). Computed from the unsplit generator module.
DEFAULT_CORPUS_SHA256 = "aac113d365c94c718daa0330c150cdb2e22c1a493fe7f1cec81871cf1d710a78"  # generate(0, 2000, 3)
SMOKE_CORPUS_SHA256 = "6ba8a80f5bb4185f4e852c07d0d634cae17651fef73acec6555fcdaa2250841a"  # generate(1, 200, 0)


def _pinned_digest(samples) -> str:
    h = hashlib.sha256()
    for s in samples:
        sid = s.id.encode("utf-8")
        h.update(b"S%d:" % len(sid))
        h.update(sid)
        h.update(b"N%d;" % len(s.segments))
        for seg in s.segments:
            text = seg.text.encode("utf-8", "surrogatepass")
            h.update(b"A1" if seg.allow_special else b"A0")
            h.update(b"T%d:" % len(text))
            h.update(text)
    return h.hexdigest()


@pytest.mark.parametrize("args, expected", [((0, 2000, 3), DEFAULT_CORPUS_SHA256),
                                            ((1, 200, 0), SMOKE_CORPUS_SHA256)], ids=["default", "smoke"])
def test_corpus_output_is_pinned(args, expected):
    got = _pinned_digest(generated.generate(*args))
    assert got == expected, (
        f"the default corpus changed: generate{args} now hashes to {got}, expected {expected}; "
        "if intended, bump GENERATOR_VERSION and update the digest")
