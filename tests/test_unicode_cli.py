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
    assert result["mismatched"] == [[0x2603, 0x2603]]
