"""`verify fuzz`: the hypothesis differential fuzzer finds planted bugs within its
default budget and shrinks them, reports nothing for identical engines, turns an
exception into an `error` finding, and its strategies cover every hostile class
without ever producing a surrogate. (Masking by cluster: test_fuzz_clusters.py;
the stress phase: test_stress.py.)"""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.errors import NoSuchExample

from conftest import run_cli
from verify.adversarial.fuzz import strategies as S
from verify.adversarial.fuzz.hunt import EXAMPLES_ENV, fuzz
from verify.errors import UsageError
from verify.executors.pool import EngineOptions

IN_PROCESS = EngineOptions(isolate=False)

PLANTED = '''
import re

class DigitGroups:
    """Byte ids, except that runs of ASCII digits become one id per group of at most n."""
    def __init__(self, n, trigger=None):
        self.n, self.trigger = n, trigger
        self.pattern = re.compile(r"[0-9]{1,%d}|[^0-9]" % n)
    def encode_batch(self, texts):
        out = []
        for text in texts:
            if self.trigger and self.trigger in text:
                raise ValueError("planted failure")
            ids = []
            for m in self.pattern.finditer(text):
                s = m.group()
                if s.isascii() and s.isdigit():
                    ids.append(10_000_000 + int("1" + s))
                else:
                    ids.extend(s.encode())
            out.append(ids)
        return out

def groups3():
    return DigitGroups(3)

def groups4():
    return DigitGroups(4)

def raises_on_mvs():
    return DigitGroups(3, "\\u180e")
'''


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "fuzz_planted.py").write_text(PLANTED)
    return "python:fuzz_planted"


def records(out):
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text(encoding="utf-8").splitlines()]


def test_finds_digit_grouping_bug_within_default_budget_and_shrinks_it(tmp_path, planted, monkeypatch):
    monkeypatch.delenv(EXAMPLES_ENV, raising=False)  # the default budget, as a user gets it
    out = tmp_path / "out"
    result = fuzz(f"{planted}:groups3", [f"{planted}:groups4"], out_dir=out, database_dir=tmp_path / "db",
                  engine=IN_PROCESS, max_findings=1, stress=False)  # the search's default budget
    (record,) = records(out)
    assert record["kind"] == "ids" and record["source"] == "fuzz"
    assert record["engine"] == f"{planted}:groups4" and record["reference"] == f"{planted}:groups3"
    ((text, allow_special),) = record["input"]
    assert len(text) < 10 and not allow_special
    assert any(len(run) >= 4 for run in _ascii_digit_runs(text)), text
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["findings"] == 1 and counts["samples"] >= 1
    assert counts["verified"] + counts["diverged"] == counts["samples"]
    assert manifest["fuzz"]["rounds"][0]["ended"] == "finding"
    assert "FAIL" in (out / "summary.md").read_text()
    assert result.found


def _ascii_digit_runs(text: str) -> list[str]:
    return re.findall(r"[0-9]+", text)


def test_the_database_replays_a_found_example_first(tmp_path, planted):
    db = tmp_path / "db"
    first = fuzz(f"{planted}:groups3", [f"{planted}:groups4"], out_dir=tmp_path / "a", database_dir=db,
                 engine=IN_PROCESS, max_findings=1, max_examples=500, stress=False)
    assert first.found and any(db.rglob("*"))
    again = fuzz(f"{planted}:groups3", [f"{planted}:groups4"], out_dir=tmp_path / "b", database_dir=db,
                 engine=IN_PROCESS, max_findings=1, max_examples=500, stress=False)
    assert again.rounds[0].examples == 1
    assert again.findings[0]["input"] == first.findings[0]["input"]


def test_an_exception_on_a_rare_character_is_an_error_finding(tmp_path, planted, monkeypatch):
    monkeypatch.delenv(EXAMPLES_ENV, raising=False)
    out = tmp_path / "out"
    fuzz(f"{planted}:groups3", [f"{planted}:raises_on_mvs"], out_dir=out, database_dir=tmp_path / "db",
         engine=IN_PROCESS, max_findings=1)
    (record,) = records(out)
    assert record["kind"] == "error" and record["error"]["type"] == "ValueError"
    assert record["input"] == [["\u180e", False]]


def test_identical_engines_find_nothing_and_exit_0(tmp_path, planted):
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--reference", f"{planted}:groups3", "--candidate", f"{planted}:groups3?entry=batch",
                   "--out", str(out), "--database", str(tmp_path / "db"), "--no-stress", env={EXAMPLES_ENV: "40"})
    assert proc.returncode == 0, proc.stderr
    assert records(out) == []
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["samples"] == counts["verified"] == 40


def test_cli_exits_1_and_prints_the_reproducer(tmp_path, planted):
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--reference", f"{planted}:groups3", "--candidate", f"{planted}:groups4",
                   "--out", str(out), "--database", str(tmp_path / "db"), "--max-findings", "1", "--seed", "3",
                   "--no-stress")
    assert proc.returncode == 1, proc.stderr
    assert f"ids: {planted}:groups4 on '" in proc.stdout
    assert len(records(out)) == 1


@pytest.mark.parametrize("args, fragment", [
    (["--candidate", "python:fuzz_planted:groups3"], "both the reference and a candidate"),
    (["--candidate", "nosuchadapter:x"], "nosuchadapter"),
    (["--candidate", "python:fuzz_planted:groups4", "--max-examples", "0"], "--max-examples"),
    (["--candidate", "python:fuzz_planted:groups4", "--atheris", "--in-process"], "--atheris"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, planted, args, fragment):
    proc = run_cli("fuzz", "--reference", "python:fuzz_planted:groups3", "--out", str(tmp_path / "o"), *args)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and fragment in proc.stderr


def test_bad_examples_env_is_a_usage_error(tmp_path, planted, monkeypatch):
    monkeypatch.setenv(EXAMPLES_ENV, "many")
    with pytest.raises(UsageError, match=EXAMPLES_ENV):
        fuzz(f"{planted}:groups3", [f"{planted}:groups4"], out_dir=tmp_path, database_dir=None, engine=IN_PROCESS)


# --- strategies -------------------------------------------------------------------

def test_no_alphabet_holds_a_surrogate():
    for name, chars in S.ALPHABETS.items():
        assert chars and not any(unicodedata.category(c) == "Cs" for c in chars), name


@settings(max_examples=300, database=None, suppress_health_check=list(HealthCheck))
@given(S.documents(long_max=S.LONG_RUN_MAX))
def test_documents_never_contain_surrogates(sample):
    for segment in sample.segments:
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in segment.text)
        segment.text.encode("utf-8")  # strict: would raise on a surrogate
    assert sample.id.startswith("fuzz:")


def _has_boundary(text: str, a: str, b: str) -> bool:
    cats = [unicodedata.category(c)[0] for c in text]
    return any(x == a and y == b for x, y in zip(cats, cats[1:]))


def _texts(s) -> list[str]:
    return [s] if isinstance(s, str) else [seg.text for seg in s.segments]


def _text(s) -> str:
    return "".join(_texts(s))


SPECIAL_NAMES = "|".join(re.escape(t[2:-2]) for t in S.SPECIAL_TOKENS)

# class -> (the named strategy that must produce it, predicate on its output)
CLASSES = {
    "letter/digit boundary": (S.category_boundaries, lambda s: _has_boundary(s, "L", "N")),
    "digit/punct boundary": (S.category_boundaries, lambda s: _has_boundary(s, "N", "P")),
    "space/letter boundary": (S.category_boundaries, lambda s: _has_boundary(s, "Z", "L")),
    "letter/mark boundary": (S.category_boundaries, lambda s: _has_boundary(s, "L", "M")),
    "ascii digit run of 20+": (S.digit_groups, lambda s: any(len(r) >= 20 for r in _ascii_digit_runs(s))),
    "digits with a separator": (S.digit_groups, lambda s: re.search("[0-9][,._ '\u2009\u202f][0-9]", s)),
    "other-script digits": (S.digit_groups, lambda s: any(c.isdigit() and not c.isascii() for c in s)),
    "\u2019re contraction": (S.contractions, lambda s: "\u2019re" in s),
    "'Ll contraction": (S.contractions, lambda s: "'Ll" in s),
    "'S contraction": (S.contractions, lambda s: "'S" in s),
    "combining sequence": (S.combining_sequences, lambda s: sum(map(unicodedata.combining, s)) and len(s) >= 3),
    "ZWJ emoji": (S.zwj_emoji, lambda s: re.search("[\U0001F300-\U0001FAFF]\u200d[\U0001F300-\U0001FAFF]", s)),
    "variation selector": (S.variation_selectors,
                           lambda s: re.search("[\ufe00-\ufe0f\U000e0100-\U000e01ef]", s)),
    "bidi control": (S.bidi_controls, lambda s: re.search("[\u202a-\u202e\u2066-\u2069]", s)),
    "exact special literal": (S.special_literals, lambda s: "<|endoftext|>" in s),
    "truncated literal": (S.special_literals, lambda s: any(t[:-1] in s and t not in s for t in S.SPECIAL_TOKENS)),
    "upper-case literal": (S.special_literals, lambda s: re.search("<\\|[A-Z_]+\\|>", s)),
    "fullwidth bars": (S.special_literals, lambda s: re.search(f"<\uff5c({SPECIAL_NAMES})\uff5c>", s)),
    "long run": (S.long_runs, lambda s: len(set(s)) == 1 and len(s) >= 1000),
    "mixed scripts": (S.mixed_scripts,
                      lambda s: len({unicodedata.name(c).split()[0] for c in s if c.isalpha()}) >= 3),
    "anything non-BMP": (S.any_text, lambda s: any(ord(c) > 0xFFFF for c in s)),
    "structural special token": (S.segments, lambda segs: len(segs) >= 2 and any(
        allow and text in S.SPECIAL_TOKENS for text, allow in segs) and any(not allow for _, allow in segs)),
}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_strategies_produce_every_hostile_class(name):
    strategy, predicate = CLASSES[name]
    found = find(strategy(), lambda x: bool(predicate(x)),
                 settings=settings(max_examples=5000, database=None, phases=[Phase.generate], derandomize=True,
                                   suppress_health_check=list(HealthCheck)))
    assert predicate(found)


def test_documents_compose_every_strategy():
    """Every named strategy is reachable from documents(): each has a branch in hostile_text."""
    assert set(S.STRATEGIES) == {"digit_groups", "category_boundaries", "whitespace_runs", "contractions",
                                 "combining_sequences", "zwj_emoji", "variation_selectors", "bidi_controls",
                                 "special_literals", "mixed_scripts", "long_runs", "any_text"}
    found = find(S.documents(), lambda s: len(s.segments) >= 2 and any(seg.allow_special for seg in s.segments),
                 settings=settings(max_examples=2000, database=None, phases=[Phase.generate], derandomize=True,
                                   suppress_health_check=list(HealthCheck)))
    assert found.id.startswith("fuzz:")
    # special=False never yields an allowed segment (the search above shows the same budget finds one
    # when special=True); find(..., lambda s: True) would only see the shrunk, trivially plain example
    with pytest.raises(NoSuchExample):
        find(S.documents(special=False), lambda s: any(seg.allow_special for seg in s.segments),
             settings=settings(max_examples=300, database=None, phases=[Phase.generate], derandomize=True,
                               suppress_health_check=list(HealthCheck)))


def test_whitespace_runs_use_every_listed_space():
    seen: set[str] = set()

    @settings(max_examples=600, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(S.whitespace_runs())
    def collect(text):
        seen.update(text)

    collect()
    listed = S.ALPHABETS["spaces"] + S.ALPHABETS["space_lookalikes"]
    assert set(listed) <= seen, sorted(hex(ord(c)) for c in set(listed) - seen)
    for cp in [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
               0x205F, 0x3000, 0x180E, 0x200B, 0xFEFF, *range(0x1C, 0x20)]:
        assert chr(cp) in listed, hex(cp)


# --- atheris target -----------------------------------------------------------------

def test_atheris_target_raises_with_input_and_both_id_lists(planted):
    pytest.importorskip("atheris")
    from verify.adversarial.fuzz import atheris_target as target

    target.configure(f"{planted}:groups3", [f"{planted}:groups4"])
    target.TestOneInput(b"\x01123")  # decodes to "123": the engines agree
    with pytest.raises(AssertionError) as info:
        target.TestOneInput(b"\x010000")  # decodes to "0000"
    message = str(info.value)
    assert "'0000'" in message and "at token 0" in message
    assert "expected: [10001000, 10000010]" in message and "actual:   [10010000]" in message

    target.configure(f"{planted}:groups3", [f"{planted}:raises_on_mvs"])
    with pytest.raises(AssertionError, match="planted failure"):
        target.TestOneInput(b"\x02" + "\u180e".encode("utf-16-le"))
