"""`verify unicode` end to end: a planted engine whose whitespace class includes
U+180E (as Unicode < 6.3 and PCRE2 do) is reported with exactly that code point."""

import json

from conftest import run_cli

PLANTED = r"""
import itertools


class Engine:
    # Splits into whitespace / non-whitespace runs; each run is a length id then its bytes.
    # ``extra`` adds code points to the whitespace class.
    def __init__(self, extra):
        self.extra = extra

    def is_space(self, c):
        return c.isspace() or c in self.extra

    def encode_batch(self, texts):
        out = []
        for text in texts:
            ids = []
            for _, run in itertools.groupby(text, key=self.is_space):
                chunk = "".join(run).encode()
                ids += [1000 + len(chunk), *chunk]
            out.append(ids)
        return out


def reference():
    return Engine("")


def u180e_is_space():
    return Engine("\u180e")


def same_as_reference():
    return Engine("")
"""


def test_sweep_lists_the_whitespace_code_point_exactly(tmp_path, plugin_dir):
    (plugin_dir / "ws_engines.py").write_text(PLANTED)
    out = tmp_path / "out"
    proc = run_cli("unicode", "--reference", "python:ws_engines:reference", "--candidate",
                   "python:ws_engines:u180e_is_space", "--start", "1800", "--stop", "1900", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    report = json.loads((out / "unicode.json").read_text())
    (result,) = report["candidates"].values()
    assert result["count"] == 1 and result["mismatched"] == [[0x180E, 0x180E]]
    assert result["whitespace"] == [[0x180E, 0x180E]]
    assert "MONGOLIAN VOWEL SEPARATOR" in (out / "unicode.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["reference"]["spec"] == "python:ws_engines:reference"
    assert [c["spec"] for c in manifest["candidates"]] == ["python:ws_engines:u180e_is_space"]
    counts = manifest["counts"]
    assert counts["samples"] == 0x100 and counts["diverged"] == 1 and counts["verified"] == 0xFF
    assert manifest["unicode"]["python:ws_engines:u180e_is_space"]["count"] == 1
    assert manifest["engine_notes"]["python:ws_engines:reference"]["isolated"] is True
    assert "FAIL" in (out / "summary.md").read_text()


def test_a_clean_candidate_passes(tmp_path, plugin_dir):
    (plugin_dir / "ws_engines.py").write_text(PLANTED)
    out = tmp_path / "out"
    proc = run_cli("unicode", "--reference", "python:ws_engines:reference", "--candidate",
                   "python:ws_engines:same_as_reference", "--start", "1800", "--stop", "1900", "--out", str(out),
                   "--in-process")
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads((out / "unicode.json").read_text())["candidates"].values()
    assert result["count"] == 0 and result["mismatched"] == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["verified"] == manifest["counts"]["samples"] == 0x100
    assert manifest["engine_notes"]["python:ws_engines:reference"]["isolated"] is False
    assert "PASS" in (out / "summary.md").read_text()


def test_bad_range_is_a_usage_error(tmp_path):
    proc = run_cli("unicode", "--start", "2000", "--stop", "1000", "--out", str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


CRASHER = r"""
import ctypes

import ws_engines


class Engine(ws_engines.Engine):
    def encode_batch(self, texts):
        if any("\u2603" in t for t in texts):
            ctypes.string_at(0)  # segfault
        return super().encode_batch(texts)


def make():
    return Engine("")
"""


def test_an_engine_that_segfaults_on_one_code_point_does_not_end_the_sweep(tmp_path, plugin_dir):
    (plugin_dir / "ws_engines.py").write_text(PLANTED)
    (plugin_dir / "crash_engine.py").write_text(CRASHER)
    out = tmp_path / "out"
    proc = run_cli("unicode", "--reference", "python:ws_engines:reference", "--candidate", "python:crash_engine:make",
                   "--start", "2600", "--stop", "2700", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    (result,) = json.loads((out / "unicode.json").read_text())["candidates"].values()
    assert result["mismatched"] == [[0x2603, 0x2603]] and result["errors"] == [[0x2603, 0x2603]]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["error"] == 1 and manifest["counts"]["verified"] == 0xFF
    assert manifest["engine_notes"]["python:crash_engine:make"]["worker_restarts"] >= 1


def test_a_swept_in_engine_that_does_not_load_is_reported_not_fatal(tmp_path, plugin_dir, monkeypatch, capsys):
    import verify.engines.catalogue
    from verify.cli import main

    (plugin_dir / "ws_engines.py").write_text(PLANTED)
    swept = ["python:ws_engines:same_as_reference", "python:no_such_engine_module:make"]
    monkeypatch.setattr(verify.engines.catalogue, "expand_candidates", lambda ref, cands: (swept, set(swept)))
    out = tmp_path / "out"
    code = main(["unicode", "--reference", "python:ws_engines:reference", "--candidate", "all", "--in-process",
                 "--start", "1800", "--stop", "1900", "--out", str(out)])
    assert code == 0
    assert "python:no_such_engine_module:make: not loaded" in capsys.readouterr().err
    assert list(json.loads((out / "unicode.json").read_text())["candidates"]) == [swept[0]]
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["spec"] for c in manifest["candidates"]] == [swept[0]]
    assert "no_such_engine_module" in manifest["engine_notes"][swept[1]]["not_loaded"]
    assert "not loaded" in (out / "summary.md").read_text()
