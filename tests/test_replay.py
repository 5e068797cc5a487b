"""Session replay: every turn of a stateful engine equals the reference's from-scratch
encode; findings name the session and turn and shrink to a short (prefix, append)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

PLUGINS = '''
import os
from tokenizers import Tokenizer

TOK = Tokenizer.from_file(PATH)
TOK.encode_special_tokens = True

def enc(text):
    return list(TOK.encode(text, add_special_tokens=False).ids)

class Concat:
    """Wrong by design: the append's ids appended to the old ones."""
    def __init__(self): self.ids = []
    def append(self, text):
        self.ids += enc(text)
        return list(self.ids)

class LongMemory:
    """Correct until the transcript passes 200 characters; from then on it keeps the
    old ids and encodes only the append (a history-dependent bug)."""
    def __init__(self): self.text, self.ids = "", []
    def append(self, text):
        if len(self.text) + len(text) <= 200:
            self.text += text
            self.ids = enc(self.text)
        else:
            self.text += text
            self.ids = self.ids + enc(text)
        return list(self.ids)

class Correct:
    def __init__(self): self.text = ""
    def append(self, text):
        self.text += text
        if os.environ.get("CRASH_ON") and os.environ["CRASH_ON"] in self.text:
            os.abort()
        return enc(self.text)

class Engine:
    def __init__(self, cls): self.cls = cls
    def open_session(self, state=None): return self.cls()

def concat(): return Engine(Concat)
def long_memory(): return Engine(LongMemory)
def correct(): return Engine(Correct)
'''

TURNS = {
    "s-digits": ["count 12", "345 and ", "more"],
    "s-space": ["hello   ", " world", "! done"],
    "s-long": ["word " * 30, "words " * 30, "tail 42"],
    "s-crlf": ["line\r", "\nnext line", " end"],
}


@pytest.fixture
def plugins(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "session_plugins.py").write_text(PLUGINS.replace("PATH", repr(str(tiny_tokenizer_json))))
    return "python:session_plugins"


@pytest.fixture
def traces(tmp_path):
    path = tmp_path / "traces.jsonl"
    lines = [{"schema": "verify.trace/1", "session": sid, "turn": i, "text": text}
             for sid, turns in TURNS.items() for i, text in enumerate(turns)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def replay(tiny_spec, engine, traces, out, *extra):
    return run_cli("replay", "--engine", engine, "--reference", tiny_spec, "--traces", str(traces), "--out", str(out),
                   "--no-progress", "--workers", "1", *extra)


def findings(out):
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines() if line]


def minimized(out):
    return [t["minimized"] for t in map(json.loads, (out / "triage.jsonl").read_text().splitlines()) if t["minimized"]]


def test_a_correct_session_engine_verifies_every_turn(tmp_path, tiny_spec, plugins, traces):
    proc = replay(tiny_spec, f"{plugins}:correct", traces, tmp_path / "ok")
    assert proc.returncode == 0, proc.stderr
    assert "12 turns" in proc.stdout and "12 verified" in proc.stdout


def test_concat_is_found_with_session_and_turn_and_shrinks_to_a_short_pair(tmp_path, tiny_spec, plugins, traces):
    out = tmp_path / "concat"
    proc = replay(tiny_spec, f"{plugins}:concat", traces, out)
    assert proc.returncode == 1, proc.stderr
    records = findings(out)
    assert {r["session"]["id"] for r in records} <= set(TURNS)
    assert all(r["session"]["turn"] >= 1 and r["kind"] == "ids" for r in records)
    assert "s-long" in {r["session"]["id"] for r in records}
    for r in records:  # each finding leads back to its session's turn, prefix and append
        turns, turn = TURNS[r["session"]["id"]], r["session"]["turn"]
        assert r["session"]["prefix_chars"] == sum(map(len, turns[:turn]))
        assert r["session"]["append"] == [[turns[turn], False]]
        assert r["input"] == [["".join(turns[:turn + 1]), False]]
    blocks = minimized(out)
    assert blocks and all(b["session"]["turns"] == 2 and not b["session"]["stateless"] for b in blocks)
    assert min(b["chars"] for b in blocks) <= 4


def test_a_history_dependent_bug_is_found_past_its_length_and_keeps_its_history(tmp_path, tiny_spec, plugins,
                                                                               traces):
    out = tmp_path / "long"
    proc = replay(tiny_spec, f"{plugins}:long_memory", traces, out)
    assert proc.returncode == 1, proc.stderr
    records = findings(out)
    assert [r["session"]["id"] for r in records] == ["s-long"]  # the only session past 200 characters
    assert records[0]["session"]["turn"] == 1
    (block,) = minimized(out)
    prefix = "".join(t for t, _ in block["session"]["prefix"])
    assert not block["session"]["stateless"] and len(prefix) + len("".join(
        t for t, _ in block["session"]["append"])) > 200  # the bug needs the long history
    assert block["token_index"] is not None


def test_a_crash_inside_a_session_names_it_and_the_other_sessions_go_on(tmp_path, tiny_spec, plugins, traces,
                                                                        monkeypatch):
    monkeypatch.setenv("CRASH_ON", "hello    world")  # only s-space turn 1 holds it
    out = tmp_path / "crash"
    proc = replay(tiny_spec, f"{plugins}:correct", traces, out, "--minimize-budget", "0")
    assert proc.returncode == 1, proc.stderr
    (crash,) = findings(out)
    assert crash["kind"] == "crash" and crash["session"]["id"] == "s-space" and crash["session"]["turn"] == 1
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    per = counts["per_engine"][f"{plugins}:correct"]
    assert per["crash"] == 1 and per["skipped"] == 1 and per["verified"] == 10


def test_edit_scripts_find_concat_and_shrink_it(tmp_path, tiny_spec, plugins):
    out = tmp_path / "edits"
    proc = run_cli("replay", "--engine", f"{plugins}:concat", "--reference", tiny_spec, "--edits", "40",
                   "--seed", "1", "--out", str(out), "--in-process")
    assert proc.returncode == 1, proc.stderr
    (record,) = findings(out)
    assert record["session"]["hazards"] and len(record["session"]["turn_chars"]) >= 2
    assert minimized(out)[0]["chars"] <= 4


def test_session_checks_catch_concat_and_pass_a_correct_session(tmp_path, plugins):
    bad = run_cli("check", "--engine", f"{plugins}:concat", "--check", "sessions", "--limit", "8",
                  "--out", str(tmp_path / "c1"), "--in-process")
    assert bad.returncode == 1 and "sessions" in bad.stdout
    good = run_cli("check", "--engine", f"{plugins}:correct", "--check", "sessions", "--limit", "8",
                   "--out", str(tmp_path / "c2"), "--in-process")
    assert good.returncode == 0, good.stdout + good.stderr
    report = json.loads((tmp_path / "c2" / "check.json").read_text())
    assert report["counts"]["checked"]["sessions"] >= 8 * 5


def test_traces_and_edits_together_are_a_usage_error(tmp_path, tiny_spec, plugins, traces):
    proc = run_cli("replay", "--engine", f"{plugins}:concat", "--reference", tiny_spec, "--traces", str(traces),
                   "--edits", "3")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_toktier_sessions_match_from_scratch_encodes_append_and_patch(tmp_path, traces):
    pytest.importorskip("toktier")
    out = tmp_path / "toktier"
    proc = run_cli("replay", "--engine", "toktier:cl100k_base", "--engine", "toktier:cl100k_base?patch=true",
                   "--reference", "tiktoken:cl100k_base", "--traces", str(traces), "--out", str(out),
                   "--no-progress", "--workers", "1", "--in-process")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    notes = json.loads((out / "manifest.json").read_text())["engine_notes"]["toktier:cl100k_base"]
    store = notes["session_store"]  # toktier's own account: a session's first append is a store miss
    assert store["session_appends"] + store["session_misses"] == 12


def test_a_toktier_session_resumed_from_its_state_equals_the_uninterrupted_one(tmp_path):
    pytest.importorskip("toktier")
    proc = run_cli("check", "--engine", "toktier:cl100k_base", "--check", "sessions", "--limit", "4",
                   "--out", str(tmp_path / "c"), "--in-process")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    findings_seen = (tmp_path / "c" / "divergences.jsonl").read_text()
    assert findings_seen == ""
    # splits (3 scripts) + prefixes (2) + resume (1) per sample
    assert json.loads((tmp_path / "c" / "check.json").read_text())["counts"]["checked"]["sessions"] == 4 * 6
