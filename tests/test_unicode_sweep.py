"""The Unicode-table sweep: data tables, planted engines, report files."""

from __future__ import annotations

import json
import unicodedata

import numpy as np
import pytest

from verify.unicode_tables import tables as ud
from verify.adversarial.unicode.attribution import attribute
from verify.adversarial.unicode.contexts import CONTEXTS, code_points
from verify.adversarial.unicode.sweep import sweep, sweep_many
from verify.engines.base import TOKEN_DTYPE, Adapter, Capabilities
from verify.executors.local import LocalExecutor
from verify.reports.unicode import write_unicode_report

# --------------------------------------------------------------------------- toy engine

OTHER, LETTER, NUMBER, SPACE, NEWLINE = range(5)
# Python's str.isspace set: Unicode White_Space plus U+001C..U+001F.
ISSPACE = [cp for cp in range(0x3001) if chr(cp).isspace()]


def class_table(version: str | None = None, *, space_excludes: tuple[int, ...] = ()) -> np.ndarray:
    """Toy pre-tokenizer classes from one Unicode version's categories: a code
    point unassigned in that version is Cn, hence OTHER."""
    cats = ud.category_table(version)
    names = np.asarray(ud.CATEGORIES)
    major = np.asarray([c[0] for c in names])[cats]
    table = np.full(ud.N_CP, OTHER, dtype=np.uint32)
    table[major == "L"] = LETTER
    table[major == "N"] = NUMBER
    table[[cp for cp in ISSPACE if cp not in space_excludes]] = SPACE
    table[[0x0A, 0x0D]] = NEWLINE
    return table


class ToyEngine(Adapter):
    """A byte-level toy tokenizer: pieces are maximal runs of one class (letter,
    number, whitespace, newline, other); every UTF-8 byte becomes one token whose
    id is ``byte + 256 * class`` of its piece, so a class change changes the ids.
    Vectorised over the whole batch, so a full sweep takes seconds."""

    adapter_name = "toy"
    capabilities = Capabilities(special_tokens=False)

    def __init__(self, target: str, table: np.ndarray, unicode_version: str | None = None):
        super().__init__(target, spec=f"toy:{target}")
        self.table = table
        if unicode_version is not None:
            self.capabilities = Capabilities(special_tokens=False, unicode_version=unicode_version)

    def encode_texts(self, texts, allow_special):
        joined = "".join(texts)
        cps = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        lens = 1 + (cps >= 0x80) + (cps >= 0x800) + (cps >= 0x10000)
        ids = np.frombuffer(joined.encode("utf-8"), dtype=np.uint8).astype(TOKEN_DTYPE)
        ids += 256 * np.repeat(self.table[cps], lens)
        char_bounds = np.cumsum([len(t) for t in texts])
        byte_cum = np.concatenate(([0], np.cumsum(lens)))
        return np.split(ids, byte_cum[char_bounds][:-1])


def toy(version: str | None = None, **kw) -> LocalExecutor:
    """A ToyEngine on one Unicode version's classes, as the executor the sweep takes."""
    declared = kw.pop("declare", None)
    excl = kw.pop("space_excludes", ())
    name = f"{version or 'current'}" + ("-nofs" if excl else "")
    return LocalExecutor(ToyEngine(name, class_table(version, space_excludes=excl), declared))


class Failing(ToyEngine):
    def encode_texts(self, texts, allow_special):
        if any("\u2603" in t for t in texts):
            raise RuntimeError("snowman")
        return super().encode_texts(texts, allow_special)


class ContractionFold(ToyEngine):
    """Differs only where an apostrophe is followed by U+017F (folds to 's')."""

    def encode_texts(self, texts, allow_special):
        out = super().encode_texts(texts, allow_special)
        return [np.append(ids, 9999).astype(TOKEN_DTYPE) if "'\u017f" in t else ids for t, ids in zip(texts, out)]


# CJK extensions B..I and the plane-3 blocks: letters added in 13.0, 14.0, 15.0,
# 15.1, 17.0 (and more), enough to tell those versions apart, in a fast sweep.
CJK_EXT = dict(start=0x2A000, stop=0x32400)

# --------------------------------------------------------------------------- unicode_data


def test_unicode_data_versions_and_lookups():
    vs = ud.versions()
    assert vs == sorted(vs, key=ud.version_key)
    for v in ("11.0.0", "13.0.0", "14.0.0", "15.0.0", "15.1.0", "16.0.0", "17.0.0"):
        assert v in vs
    assert ud.DATA_PATH.stat().st_size < 200_000
    assert ud.category(0x41) == "Lu" and ud.category(0x50000) == "Cn" and ud.category(0xD800) == "Cs"
    assert ud.category(0x1FAE8, "14.0.0") == "Cn" and ud.category(0x1FAE8, "15.0.0") == "So"
    assert ud.assigned_in(0x1FAE8) == "15.0.0"
    assert ud.assigned_in(0x41) == vs[0]
    assert ud.assigned_in(0x50000) is None
    assert ud.name(0x1FAE8) == "SHAKING FACE"
    assert len(ud.changed("15.0.0", "15.1.0")) == 627
    assert ud.normalize_version("Unicode 15.1") == "15.1.0" and ud.resolve_version("9") is None
    assert ud.to_ranges([5, 1, 2, 3, 7, 6]) == [[1, 3], [5, 7]]


def test_unicode_data_matches_runtime_unicodedata():
    v = unicodedata.unidata_version
    if v not in ud.versions():
        pytest.skip(f"runtime Unicode {v} not in the table")
    table = ud.category_table(v)
    idx = ud.CATEGORY_INDEX
    step = 7  # a sample; the builder checks every code point
    assert all(table[cp] == idx[unicodedata.category(chr(cp))] for cp in range(0, ud.N_CP, step))


# --------------------------------------------------------------------------- sweeps


def test_identical_engines_agree():
    r = sweep(toy(), toy(), start=0, stop=0x3000)
    assert r.count == 0 and r.mismatched == [] and r.unicode_version is None and r.ok
    assert r.code_points == 0x3000 and r.probes == 0x3000 * len(CONTEXTS)


def test_surrogates_are_skipped():
    cps = code_points(0xD700, 0xE100)
    assert cps.size == 0xE100 - 0xD700 - 0x800 and not ((cps >= 0xD800) & (cps <= 0xDFFF)).any()


@pytest.mark.parametrize("declare", [True, False])
def test_old_tables_are_named(declare):
    x = "15.0.0"
    ref = toy(declare=ud.newest() if declare else None)
    cand = toy(x)
    r = sweep(ref, cand, **CJK_EXT)
    expected = np.flatnonzero((class_table(x) != class_table())[CJK_EXT["start"]:CJK_EXT["stop"]])
    expected += CJK_EXT["start"]
    assert r.count == expected.size > 500
    assert r.mismatched == ud.to_ranges(expected)
    assert r.unicode_version == x
    assert r.reference_unicode_version == ud.newest()
    assert r.explained == 1.0 and r.whitespace == [] and r.unexplained == []
    assert "in-word" in r.by_context and "prefix" in r.by_context


def test_other_versions_are_told_apart():
    ref = toy(declare="16.0.0")
    for x in ("12.1.0", "14.0.0", "15.0.0"):
        ref.engine.table = class_table("16.0.0")
        r = sweep(ref, toy(x), **CJK_EXT)
        assert r.unicode_version == x, (x, r.scores)


def test_whitespace_definition_is_listed_exactly():
    ref = toy()
    cand = toy(space_excludes=(0x1C, 0x1D, 0x1E, 0x1F))
    r = sweep(ref, cand, start=0, stop=0x10000)
    assert r.mismatched == [[0x1C, 0x1F]]
    assert r.whitespace == [[28, 31]]
    assert r.unicode_version is None and r.unexplained == []


def test_one_executor_as_reference_and_candidate():
    ex = toy()
    r = sweep(ex, ex, start=0x2600, stop=0x2700)
    assert r.ok and r.code_points == 0x100 and r.reference == r.candidate == "toy:current"


def test_packing_matches_probe_by_probe():
    ref, cand = toy(), toy("14.0.0")
    packed = sweep(ref, cand, start=0x1E000, stop=0x20000)
    single = sweep(ref, cand, start=0x1E000, stop=0x20000, pack=1)
    assert packed.mismatched == single.mismatched and packed.count > 0


def test_context_dependent_difference_is_localised():
    ref = toy()
    cand = LocalExecutor(ContractionFold("fold", class_table()))
    r = sweep(ref, cand, start=0, stop=0x1000)
    assert r.mismatched == [[0x17F, 0x17F]]
    assert r.contexts_of[0x17F] == ["contraction"]
    assert r.pack_only == []


def test_engine_errors_are_mismatches():
    ref = toy()
    cand = LocalExecutor(Failing("failing", class_table()))
    r = sweep(ref, cand, start=0x2600, stop=0x2700)
    assert r.mismatched == [[0x2603, 0x2603]] and r.errors == [[0x2603, 0x2603]]


def test_sweep_many_and_report(tmp_path):
    ref = toy(declare=ud.newest())
    results = sweep_many(ref, [toy("15.0.0"), toy(space_excludes=(0x1C, 0x1D, 0x1E, 0x1F))], start=0x2E000, stop=0x32000)
    results[1:] = sweep_many(ref, [toy(space_excludes=(0x1C, 0x1D, 0x1E, 0x1F))], start=0, stop=0x3100)
    json_path, md_path = write_unicode_report(results, tmp_path)
    doc = json.loads(json_path.read_text())
    assert doc["reference"] == "toy:current"
    a, b = doc["candidates"]["toy:15.0.0"], doc["candidates"]["toy:current-nofs"]
    for entry in (a, b):
        assert {"count", "mismatched", "unicode_version", "explained", "whitespace"} <= set(entry)
    assert a["unicode_version"] == "15.0.0" and a["explained"] == 1.0 and a["count"] > 0
    assert b["mismatched"] == [[28, 31]] and b["whitespace"] == [[28, 31]] and b["unicode_version"] is None
    md = md_path.read_text()
    assert "toy:15.0.0" in md and "U+001C..U+001F" in md and "15.0.0" in md
    assert "NAG MUNDARI" in md or "KAWI" in md or "CJK" in md or "LETTER" in md


def test_indistinguishable_versions_are_listed():
    # Between U+10000 and U+20000, 15.0 -> 15.1 changes no letter or number.
    r = sweep(toy(declare=ud.newest()), toy("15.0.0"), start=0x10000, stop=0x20000)
    assert {"15.0.0", "15.1.0"} <= set(r.tied_versions) and r.unicode_version in r.tied_versions


def test_attribution_needs_most_mismatches_explained():
    # Three scattered mismatches that no table change accounts for.
    att = attribute(np.asarray([0x41, 0x5000, 0x50000]))
    assert att["unicode_version"] is None


# --------------------------------------------------------------------------- full range


@pytest.mark.slow
def test_wide_range_toy_sweeps():
    """Planes 0-3 (every plane a known version assigns in) through two planted toys at once."""
    ref = toy()
    results = sweep_many(ref, [toy("15.0.0"), toy(space_excludes=(0x1C, 0x1D, 0x1E, 0x1F))], stop=0x40000)
    a, b = results
    expected = np.flatnonzero((class_table("15.0.0") != class_table())[:0x40000])
    assert a.mismatched == ud.to_ranges(expected)
    assert a.unicode_version == "15.0.0" and a.explained == 1.0
    assert b.mismatched == [[28, 31]] and b.whitespace == [[28, 31]] and b.unicode_version is None
    assert a.code_points == 0x40000 - 0x800


class RegexModuleBPE(Adapter):
    """A Python reimplementation of tiktoken: the ``regex`` module's pre-tokenizer
    (its own, newer Unicode tables) + tiktoken's BPE of each piece."""

    adapter_name = "pyregex"
    capabilities = Capabilities(special_tokens=False)

    def __init__(self, encoding):
        import regex

        super().__init__(encoding.name, spec=f"pyregex:{encoding.name}")
        self.encoding, self.pattern, self.cache = encoding, regex.compile(encoding._pat_str), {}

    def encode_texts(self, texts, allow_special):
        out = []
        for text in texts:
            ids: list[int] = []
            for piece in self.pattern.findall(text):
                if piece not in self.cache:
                    self.cache[piece] = self.encoding._encode_single_piece(piece)
                ids.extend(self.cache[piece])
            out.append(np.asarray(ids, dtype=TOKEN_DTYPE))
        return out


@pytest.mark.slow
def test_real_regex_module_vs_tiktoken_o200k():
    """The ``regex`` module (Unicode 18 tables in 2026.11) against tiktoken
    (Unicode 16 letter/number classes in 0.14) on o200k_base: where o200k has
    merges such as b"\\x95\\n\\n", a class difference shows. Plane 1 holds 17.0
    and 18.0 additions."""
    from verify.engines.registry import build_engine

    tk = build_engine("tiktoken:o200k_base")
    r = sweep(LocalExecutor(tk), LocalExecutor(RegexModuleBPE(tk.encoding)), start=0x10000, stop=0x20000)
    if r.count == 0:
        pytest.skip("tiktoken and the regex module now agree on plane 1")
    assert r.unicode_version is not None and r.explained >= 0.9, (r.mismatched[:10], r.scores)
    assert r.whitespace == [] and r.errors == []


def test_code_points_where_both_engines_fail_are_reported_not_passed():
    from verify.engines.fake import FakeEngine

    def fails_on_snowman(text, allow_special):
        if "\u2603" in text:
            raise ValueError("planted")
        return list(text.encode())

    result = sweep(LocalExecutor(FakeEngine(encode=fails_on_snowman, spec="fake:a")),
                   LocalExecutor(FakeEngine(encode=fails_on_snowman, spec="fake:b")), start=0x2600, stop=0x2700)
    assert not result.ok
    assert result.mismatched == [[0x2603, 0x2603]] and result.errors == [[0x2603, 0x2603]]
