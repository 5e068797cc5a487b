"""Regression cases: loading, validation, replay statuses, and the `verify recheck` gate.

Hermetic: the engines are planted ``python:`` plugins (byte-level identity and
variants with a known bug), the cases are written to tmp folders. ``replay`` takes
executors from a ``verify.executors.pool.EnginePool`` (or the line ``try_get``
gives for an engine that cannot start)."""

import importlib.util
import json

import pytest

from conftest import REPO, run_cli
from verify.adversarial.regressions.cases import ids_record, ids_sha256, load_cases, replay, replay_all
from verify.errors import ConfigError
from verify.executors.pool import EngineOptions, EnginePool
from verify.keys import input_key

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

def hangs():
    import time

    class Hangs(Engine):
        def encode_batch(self, texts):
            if any("~" in t for t in texts):
                time.sleep(60)
            return super().encode_batch(texts)
    return Hangs(_bytes)

class SpecialReference(Engine):
    """Honours allow_special (declared): segments encoded as bytes, specials or not."""
    supports_special = True
    def encode_segments(self, segments):
        return [b for text, _ in segments for b in text.encode()]

def special_reference():
    return SpecialReference(_bytes)
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


def replay_one(folder, **options):
    (case,) = load_cases(folder)
    with EnginePool(EngineOptions(**{"isolate": False, **options})) as pool:
        return replay(case, pool.try_get(case.reference), pool.try_get(case.engine))


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
    doc = result.to_json()
    assert doc["input_key"] == input_key([(TEXT, False)]) == result.case.input_key
    assert doc["status"] == status and doc["as_recorded"] is as_recorded


def test_replay_in_isolated_workers_and_a_hang_is_an_error(tmp_path, planted):
    folder = write_cases(tmp_path / "a", [case_doc(planted, "buggy")])
    assert replay_one(folder, isolate=True).as_recorded
    result = replay_one(write_cases(tmp_path / "b", [case_doc(planted, "hangs")]), isolate=True, timeout_s=2)
    assert result.status == "error" and result.error["kind"] == "timeout", result.detail


def test_an_engine_that_cannot_honour_allow_special_is_unavailable(tmp_path, planted):
    doc = case_doc(planted, "buggy", input=[[TEXT, True]], reference=f"{planted}:special_reference")
    result = replay_one(write_cases(tmp_path / "cases", [doc]))
    assert result.status == "engine-unavailable" and "allow_special" in result.detail, result.detail
    assert not result.as_recorded
    doc = case_doc(planted, "buggy", input=[[TEXT, True]])  # the reference cannot either
    result = replay_one(write_cases(tmp_path / "ref", [doc]))
    assert result.status == "engine-unavailable" and result.detail.startswith("reference "), result.detail


def test_ids_sha256_is_the_keys_digest_of_little_endian_uint32():
    import hashlib
    import struct

    import verify.keys

    ids = [0, 1, 255, 256, 100_000, 2**32 - 1]
    assert ids_sha256 is verify.keys.ids_sha256
    assert ids_sha256(ids) == hashlib.sha256(struct.pack("<6I", *ids)).hexdigest()


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
    docs = [case_doc(planted, "buggy", id=f"c{i}") for i in range(3)] + \
        [case_doc(planted, "missing", id=f"c{i}") for i in (3, 4)]  # an engine that cannot load is tried once
    cases = load_cases(write_cases(tmp_path / "cases", docs))
    seen = []
    with EnginePool(EngineOptions(isolate=False)) as pool:
        results = replay_all(cases, pool, on_result=seen.append)
    assert seen == results and [r.status for r in results[3:]] == ["engine-unavailable"] * 2
    results = results[:3]
    assert [r.status for r in results] == ["still-diverges"] * 3
    assert sorted(built) == sorted({f"{planted}:reference", f"{planted}:buggy", f"{planted}:missing"})


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
    assert all(r["input_key"] == input_key([(TEXT, False)]) for r in report["results"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["counts"]["samples"] == manifest["counts"]["verified"] == 3
    assert manifest["reference"]["spec"] == f"{planted}:reference"
    assert manifest["engine_notes"][f"{planted}:buggy"]["isolated"] is True  # isolated by default
    assert (out / "summary.md").read_text().startswith("# verify recheck: PASS")


def test_recheck_reports_a_fix_loudly_and_exits_1(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [case_doc(planted, "buggy"), case_doc(planted, "fixed_engine")])
    out = tmp_path / "out"
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(out), "--in-process")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "FIXED" in proc.stdout and "case-fixed_engine" in proc.stdout
    report = json.loads((out / "recheck.json").read_text())
    assert report["newly_fixed"] == ["case-fixed_engine"] and report["changed"] == ["case-fixed_engine"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["engine_notes"][f"{planted}:buggy"]["isolated"] is False
    assert (manifest["counts"]["verified"], manifest["counts"]["diverged"]) == (1, 1)
    assert (out / "summary.md").read_text().startswith("# verify recheck: FAIL")


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
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["reference"] is None  # two references: none is "the" reference
    assert manifest["engine_notes"][f"{planted}:missing_factory"]["not_loaded"]
    assert (manifest["counts"]["diverged"], manifest["counts"]["skipped"]) == (1, 1)


def test_recheck_allow_unavailable_and_engine_filter(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", [case_doc(planted, "buggy"), case_doc(planted, "missing_factory")])
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o1"), "--allow-unavailable")
    assert proc.returncode == 0, proc.stdout
    report = json.loads((tmp_path / "o1" / "recheck.json").read_text())
    assert (report["as_recorded"], report["skipped"]) == (1, 1)  # the unavailable case is not "as recorded"
    manifest = json.loads((tmp_path / "o1" / "manifest.json").read_text())
    assert manifest["counts"]["samples"] == manifest["counts"]["verified"] == 1  # not replayed: not counted
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o2"),
                   "--engine", f"{planted}:buggy")
    assert proc.returncode == 0 and "missing_factory" not in proc.stdout
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o3"), "--engine", "nomatch:x")
    assert proc.returncode == 2
    proc = run_cli("recheck", "--cases", str(folder), "--out", str(tmp_path / "o4"), "--timeout", "0")
    assert proc.returncode == 2 and "--timeout" in proc.stderr


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


def _real_case_adapters() -> list[str]:
    from verify.engines.registry import parse_spec

    return sorted({parse_spec(case.engine).adapter for case in load_cases(REAL_CASES)})


@pytest.mark.slow
@pytest.mark.parametrize("adapter", _real_case_adapters())
def test_real_cases_replay_as_recorded(adapter):
    """Every recorded case of one engine package (one test per package, so the workers share them)."""
    from verify.engines.registry import adapters, parse_spec

    entry = adapters().get(adapter)
    if entry is None or not entry.installed() or (entry.requires and importlib.util.find_spec(entry.requires) is None):
        pytest.skip(f"{adapter} is not installed")
    cases = [case for case in load_cases(REAL_CASES) if parse_spec(case.engine).adapter == adapter]
    private = [parse_spec(case.engine).options for case in cases if parse_spec(case.engine).options.get("pip")]
    for options in private:  # a fork in its private environment (?pip=): pip fetches it once from PyPI
        from verify.engines.environments import environment_for
        from verify.errors import ConfigError

        try:
            environment_for(options)
        except ConfigError as exc:
            pytest.skip(f"cannot build the private environment of {options['pip']}: {exc}")
    with EnginePool(EngineOptions(isolate=bool(private))) as pool:  # two builds of one module: two processes
        for case in cases:
            result = replay(case, pool.try_get(case.reference), pool.try_get(case.engine))
            assert result.as_recorded, (case.id, result.status, result.detail)
