"""Regression cases: loading, validation, replay statuses, and the `verify recheck` gate.

Hermetic: the engines are planted ``python:`` plugins (byte-level identity and
variants with a known bug), the cases are written to tmp folders."""

import importlib.util
import json

import pytest

from conftest import REPO, run_cli
from verify.adversarial.regressions import EnginePool, ids_record, load_cases, replay
from verify.errors import ConfigError

PLANTED = '''
class Engine:
    def __init__(self, fn):
        self.fn = fn
    def encode_batch(self, texts):
        return [self.fn(t) for t in texts]

def _bytes(t):
    return list(t.encode())

def _drops_x(t):                      # the known bug: "~" vanishes
    return [b for b in t.encode() if b != ord("~")]

def _doubles_x(t):                    # a different bug on the same input
    return [b for b in t.encode() for _ in range(2 if b == ord("~") else 1)]

def _upper(t):                        # a "reference" that changed behaviour
    return list(t.upper().encode())

def _raises(t):
    if "~" in t:
        raise OverflowError("too many ~")
    return list(t.encode())

def reference():
    return Engine(_bytes)

def fixed_engine():
    return Engine(_bytes)

def buggy():
    return Engine(_drops_x)

def other_bug():
    return Engine(_doubles_x)

def changed_reference():
    return Engine(_upper)

def raises():
    return Engine(_raises)
'''

TEXT = "a ~ b"  # "~" is in no fingerprint probe: the isolated worker encodes those at load
EXPECTED = list(TEXT.encode())
DROPPED = [b for b in EXPECTED if b != ord("~")]


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "planted_regress.py").write_text(PLANTED)
    return "python:planted_regress"


def case_doc(planted, factory, **over):
    doc = {
        "schema": "verify.regression/1", "id": f"case-{factory}", "title": "~ is dropped",
        "engine": f"{planted}:{factory}", "reference": f"{planted}:reference",
        "engine_version": "planted==0", "reference_version": "planted==0", "vocab": "bytes",
        "vocab_sha256": None, "input": [[TEXT, False]], "expected": EXPECTED, "actual": DROPPED,
        "status": "open", "found": "2026-11-29", "upstream": None, "notes": "",
    }
    doc.update(over)
    return doc


def write_cases(folder, docs):
    folder.mkdir(parents=True, exist_ok=True)
    for doc in docs:
        (folder / f"{doc['id']}.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


def replay_one(folder):
    (case,) = load_cases(folder)
    pool = EnginePool(isolate=False)
    try:
        return replay(case, pool.get(case.reference), pool.get(case.engine))
    finally:
        pool.close()


@pytest.mark.parametrize("engine, over, status, same, as_recorded", [
    ("buggy", {}, "still-diverges", True, True),
    ("other_bug", {}, "still-diverges", False, False),
    ("fixed_engine", {}, "fixed", None, False),
    ("fixed_engine", {"status": "fixed"}, "fixed", None, True),
    ("buggy", {"status": "fixed"}, "still-diverges", True, False),  # a fixed bug came back
    ("buggy", {"reference": "python:planted_regress:changed_reference"}, "reference-changed", None, False),
    ("not_a_factory", {}, "engine-unavailable", None, False),
    ("raises", {}, "error", None, False),
    ("raises", {"actual": None, "error": {"type": "OverflowError", "message": "too many ~"}},
     "still-diverges", True, True),
    ("buggy", {"actual": None, "error": {"type": "OverflowError", "message": "m"}}, "still-diverges", False, False),
])
def test_replay_status(tmp_path, planted, engine, over, status, same, as_recorded):
    result = replay_one(write_cases(tmp_path / "cases", [case_doc(planted, engine, **over)]))
    assert result.status == status, result.detail
    assert result.same_actual is same
    assert result.as_recorded is as_recorded


def test_unavailable_package_is_a_status_not_a_crash(tmp_path, planted, monkeypatch):
    from verify.engines import registry
    from verify.engines.registry_entry import AdapterEntry

    table = dict(registry.adapters())
    table["notinstalled"] = AdapterEntry("notinstalled", "nowhere:Engine", "no_such_module_xyz",
                                         "pip install no-such-package", "planted")
    monkeypatch.setattr(registry, "adapters", lambda: table)
    doc = case_doc(planted, "buggy", engine="notinstalled:cl100k_base")
    result = replay_one(write_cases(tmp_path / "cases", [doc]))
    assert result.status == "engine-unavailable", result.detail
    assert "EngineUnavailableError" in result.detail and "pip install no-such-package" in result.detail


def test_engines_are_built_once_per_spec(tmp_path, planted, monkeypatch):
    import verify.engines as engines_mod

    built = []
    real = engines_mod.build_engine
    monkeypatch.setattr(engines_mod, "build_engine", lambda spec: built.append(spec) or real(spec))
    docs = [case_doc(planted, "buggy", id=f"c{i}") for i in range(3)]
    cases = load_cases(write_cases(tmp_path / "cases", docs))
    pool = EnginePool(isolate=False)
    try:
        results = [replay(c, pool.get(c.reference), pool.get(c.engine)) for c in cases]
    finally:
        pool.close()
    assert [r.status for r in results] == ["still-diverges"] * 3
    assert sorted(built) == sorted({f"{planted}:reference", f"{planted}:buggy"})


def test_input_generator_and_digest_ids(tmp_path, planted):
    text = "a~" * 700
    doc = case_doc(planted, "buggy", input_generator={"kind": "repeat", "text": "a~", "count": 700},
                   expected=ids_record(list(text.encode()), literal_limit=10),
                   actual=ids_record([b for b in text.encode() if b != ord("~")], literal_limit=10))
    del doc["input"]
    assert isinstance(doc["expected"], dict) and doc["expected"]["len"] == 1400
    result = replay_one(write_cases(tmp_path / "cases", [doc]))
    assert (result.status, result.same_actual) == ("still-diverges", True)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("expected"), "missing 'expected'"),
    (lambda d: d.update(schema="verify.regression/0"), "schema"),
    (lambda d: d.update(input=[["text"]]), "'input'"),
    (lambda d: d.update(input_generator={"kind": "repeat", "text": "a", "count": 2}), "exactly one"),
    (lambda d: d.update(expected=[1, "2"]), "'expected'"),
    (lambda d: d.update(actual=None), "'error'"),
    (lambda d: d.update(status="wontfix"), "'status'"),
])
def test_malformed_case_names_the_file(tmp_path, planted, mutate, message):
    doc = case_doc(planted, "buggy")
    mutate(doc)
    folder = write_cases(tmp_path / "cases", [doc])
    with pytest.raises(ConfigError, match=message) as info:
        load_cases(folder)
    assert f"{doc['id']}.json" in str(info.value)


def test_invalid_json_and_duplicate_ids(tmp_path, planted):
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "broken.json").write_text("{not json")
    with pytest.raises(ConfigError, match="broken.json.*invalid JSON"):
        load_cases(folder)
    (folder / "broken.json").unlink()
    write_cases(folder, [case_doc(planted, "buggy", id="same")])
    (folder / "second.json").write_text(json.dumps(case_doc(planted, "buggy", id="same")))
    with pytest.raises(ConfigError, match="already used"):
        load_cases(folder)


# --- the command ---------------------------------------------------------------

def test_recheck_all_as_recorded_exits_0(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [
        case_doc(planted, "buggy"),
        case_doc(planted, "fixed_engine", status="fixed"),
        case_doc(planted, "raises", actual=None, error={"type": "OverflowError", "message": "too many ~"}),
    ])
    out = tmp_path / "out"
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 4  # one per case + the summary
    report = json.loads((out / "recheck.json").read_text())
    assert report["changed"] == [] and report["as_recorded"] == 3
    assert {r["status"] for r in report["results"]} == {"still-diverges", "fixed"}


def test_recheck_reports_a_fix_loudly_and_exits_1(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [case_doc(planted, "buggy"), case_doc(planted, "fixed_engine")])
    out = tmp_path / "out"
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(out), "--in-process")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FIXED" in proc.stdout and "case-fixed_engine" in proc.stdout
    report = json.loads((out / "recheck.json").read_text())
    assert report["newly_fixed"] == ["case-fixed_engine"] and report["changed"] == ["case-fixed_engine"]


def test_recheck_reference_change_and_unavailable(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [
        case_doc(planted, "buggy", reference=f"{planted}:changed_reference"),
        case_doc(planted, "missing_factory"),
    ])
    out = tmp_path / "out"
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(out))
    assert proc.returncode == 1
    statuses = {r["id"]: r["status"] for r in json.loads((out / "recheck.json").read_text())["results"]}
    assert statuses == {"case-buggy": "reference-changed", "case-missing_factory": "engine-unavailable"}


def test_recheck_allow_unavailable_and_engine_filter(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [case_doc(planted, "buggy"), case_doc(planted, "missing_factory")])
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o1"), "--allow-unavailable")
    assert proc.returncode == 0, proc.stdout
    report = json.loads((tmp_path / "o1" / "recheck.json").read_text())
    assert (report["as_recorded"], report["skipped"]) == (1, 1)  # the unavailable case is not "as recorded"
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o2"),
                   "--engine", f"{planted}:buggy")
    assert proc.returncode == 0 and "missing_factory" not in proc.stdout
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o3"), "--engine", "nomatch:x")
    assert proc.returncode == 2


def test_recheck_that_replays_nothing_does_not_pass(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [case_doc(planted, "missing_factory")])
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o"), "--allow-unavailable")
    assert proc.returncode == 1 and "nothing was checked" in proc.stderr


def test_recheck_malformed_case_is_one_line_exit_2(tmp_path, planted):
    doc = case_doc(planted, "buggy")
    del doc["engine"]
    folder = write_cases(tmp_path / "cases", [doc])
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "case-buggy.json" in proc.stderr
    assert "missing 'engine'" in proc.stderr


# --- the real cases ------------------------------------------------------------

REAL_CASES = REPO / "adversarial" / "regressions"


def test_real_cases_are_well_formed_and_small():
    cases = load_cases(REAL_CASES)
    assert cases, "adversarial/regressions/ holds no cases"
    for case in cases:
        assert case.path.stat().st_size < 100_000, case.path
        assert case.path.stem == case.id


@pytest.mark.slow
def test_real_cases_replay_as_recorded():
    from verify.engines.registry import adapters, parse_spec

    pool = EnginePool(isolate=False)
    checked = 0
    try:
        for case in load_cases(REAL_CASES):
            entry = adapters().get(parse_spec(case.engine).adapter)
            if entry is None or not entry.installed() or (
                    entry.requires and importlib.util.find_spec(entry.requires) is None):
                continue
            result = replay(case, pool.get(case.reference), pool.get(case.engine))
            assert result.as_recorded, (case.id, result.status, result.detail)
            checked += 1
    finally:
        pool.close()
    if not checked:
        pytest.skip("no engine package of the regression cases is installed")
