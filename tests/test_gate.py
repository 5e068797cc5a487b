"""`verify gate`: a suite over a planted candidate fails; allowlisting its cluster makes it
pass; an expired entry fails it again; a new cluster on the same engine fails it although
the first is allowlisted; stale entries are reported; the baseline lists new, fixed and
unchanged clusters; JUnit validates against the JUnit XML schema; a bad suite is exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from record_types import run_folder_conforms
from verify.cli import main

XSD = Path(__file__).with_name("junit.xsd")

PLUGIN = '''
import os
from tokenizers import Tokenizer

class Engine:
    """The tiny reference tokenizer with the bugs $GATE_PLANT names: 'ß' sets the token that
    holds it to id 0; '€' sets the first token of any text holding it to 1; ' ' sets the last
    token of any text holding a space to 0."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True
        self.bugs = os.environ.get("GATE_PLANT", "")
    def encode_batch(self, texts):
        out = []
        for text, enc in zip(texts, self.tok.encode_batch(list(texts), add_special_tokens=False)):
            ids = list(enc.ids)
            if "\\u00df" in self.bugs and "\\u00df" in text and ids:
                at = text.index("\\u00df")
                ids[next(i for i, (a, b) in enumerate(enc.offsets) if a <= at < b)] = 0
            if "\\u20ac" in self.bugs and "\\u20ac" in text and ids:
                ids[0] = 1
            if " " in self.bugs and " " in text and ids:
                ids[-1] = 0
            if "slow" in self.bugs:  # far longer than any deadline a test gives
                import time
                time.sleep(120)
            out.append(ids)
        return out

def planted():
    return Engine()
'''

CORPUS = [
    {"id": "plain-1", "text": "the quick tokenizer splits words"},
    {"id": "eszett", "text": "die Straße ist lang \x1b\u202e\u0000 und breit"},
    {"id": "euro", "text": "€5 kostet es heute"},
    {"id": "plain-2", "text": "another line with words"},
]

SUITE = '''
[gate]
name = "planted"
reference = "{reference}"
candidates = ["python:gate_plugin:planted"]
allowlist = "allowlist.toml"
in_process = true
workers = 1
minimize_budget = 5

[[check]]
name = "slice"
kind = "corpus"
corpus = "corpus.jsonl"

[[check]]
kind = "recheck"
'''


@pytest.fixture
def gate(tmp_path, plugin_dir, tiny_tokenizer_json, tiny_spec, monkeypatch, capsys):
    """Writes the plugin, corpus and suite; ``gate(plant, rows, out, *args)`` runs
    ``verify gate`` in this process with bugs ``plant`` and allowlist ``rows``."""
    (plugin_dir / "gate_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(reference=tiny_spec))

    def run(plant: str, rows: list[dict], out: str, *args: str) -> tuple[int, dict]:
        monkeypatch.setenv("GATE_PLANT", plant)
        write_allowlist(tmp_path / "allowlist.toml", rows)
        code = main(["gate", str(suite), "--out", str(tmp_path / out), *args])
        capsys.readouterr()
        path = tmp_path / out / "gate.json"
        return code, json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    run.dir = tmp_path
    return run


def write_allowlist(path: Path, rows: list[dict]) -> None:
    lines = []
    for row in rows:
        lines.append("[[allow]]")
        lines += [f"{k} = {v}" if k == "expires" else f"{k} = {json.dumps(v)}" for k, v in row.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def by_status(doc: dict) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for c in doc["clusters"]:
        found.setdefault(c["status"], []).append(c["key"])
    return found


def only_key(doc: dict) -> str:
    (key,) = [c["key"] for c in doc["clusters"]]
    return key


def test_planted_bug_fails_allowlisting_passes_expiry_and_a_second_cluster_fail_again(gate):
    code, doc = gate("ß", [], "night-1")
    assert code == 1 and doc["schema"] == "verify.gate/1" and doc["verdict"] == "fail"
    run_folder_conforms(gate.dir / "night-1")  # gate.json and every check's committed files, as typed
    key = only_key(doc)
    (cluster,) = doc["clusters"]
    assert cluster["status"] == "new" and cluster["engine"] == "python:gate_plugin:planted" and cluster["size"] == 1
    assert "ß" in "".join(t for t, _ in cluster["reproducer"]) and cluster["first_difference"]["token_index"] is not None
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["slice"]["status"] == "fail" and checks["slice"]["counts"]["diverged"] == 1
    # a check whose capability is not there is reported as skipped, never as passed
    assert checks["recheck"]["status"] == "skipped" and "no regression case" in checks["recheck"]["note"]

    allow = {"engine": "gate_plugin", "key": key, "reason": "known: eszett", "link": "https://example.org/1",
             "expires": "2999-12-31"}
    code, doc = gate("ß", [allow], "night-2")
    assert code == 0 and doc["verdict"] == "pass", doc["reasons"]
    assert by_status(doc) == {"allowlisted": [key]}
    assert [(e["status"], e["matched"], e["link"]) for e in doc["allowlist"]] == [("matched", [key], allow["link"])]
    assert {c["name"]: c["status"] for c in doc["checks"]} == {"slice": "pass", "recheck": "skipped"}

    code, doc = gate("ß", [{**allow, "expires": "2020-01-01"}], "night-3")
    assert code == 1 and by_status(doc) == {"expired": [key]}
    assert [e["status"] for e in doc["allowlist"]] == ["expired"]

    code, doc = gate("ß€", [allow], "night-4")  # the same engine, a second bug
    assert code == 1 and doc["verdict"] == "fail"
    found = by_status(doc)
    assert found["allowlisted"] == [key] and len(found["new"]) == 1 and found["new"][0] != key
    assert {c["engine"] for c in doc["clusters"]} == {"python:gate_plugin:planted"}

    stale = {"key": "ids/never/seen", "reason": "fixed last week"}
    code, doc = gate("ß", [allow, stale], "night-5")
    assert code == 0
    assert [(e["key"], e["status"]) for e in doc["allowlist"]] == [(key, "matched"), ("ids/never/seen", "stale")]


def test_junit_is_valid_and_a_failing_cluster_carries_its_reproducer_and_first_token(gate):
    from lxml import etree

    allow = {"key": "ids/never/seen", "reason": "stale", "expires": "2999-12-31"}
    code, doc = gate("ß€", [allow], "night")
    assert code == 1
    tree = etree.parse(str(gate.dir / "night" / "junit.xml"))
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    assert schema.validate(tree), schema.error_log
    root = tree.getroot()
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"planted.checks", "planted.clusters", "planted.allowlist"}
    assert len(suites["planted.checks"].findall("testcase")) == 2
    cases = suites["planted.clusters"].findall("testcase")
    assert {c.get("name") for c in cases} == {c["key"] for c in doc["clusters"]}
    assert int(root.get("failures")) == 3 and int(root.get("skipped")) == 2  # slice + 2 clusters; recheck, stale row
    eszett = next(c for c in doc["clusters"] if "ß" in "".join(t for t, _ in c["reproducer"]))
    failure = next(c for c in cases if c.get("name") == eszett["key"]).find("failure")
    index = eszett["first_difference"]["token_index"]
    assert f"token {index}" in failure.get("message") and "expected" in failure.get("message")
    assert "ß" in failure.text and "reproducer" in failure.text


def test_junit_shows_hostile_reproducers_as_visible_escapes_in_valid_xml(tmp_path):
    from lxml import etree

    from verify.reports.junit import write_junit

    hostile = "a\x00b\x1b[31m\u202egnp.exe\ud800]]></failure><script>x</script>\ufeff"
    cluster = {"key": "ids/Cc+Ll/Common+Latin/control|letter", "engine": "e", "reference": "r", "status": "new",
               "size": 3, "reproducer": [[hostile, False], ["<|endoftext|>", True]], "minimized": True,
               "first_difference": {"token_index": 2, "byte_offset": 2, "char_offset": 2,
                                    "expected": {"start": 0, "ids": [1, 2, 3], "pieces": ["a", "\x00", "b"]},
                                    "actual": {"start": 0, "ids": [1, 2, 9], "pieces": ["a", "\x00", "\u202e"]}},
               "checks": ["c"], "source": "checks/c/clusters.json"}
    doc = {"suite": "s<&>", "started": "2026-12-01T03:00:00+00:00", "seconds": 1.5, "allowlist": [],
           "checks": [{"name": "c", "kind": "corpus", "status": "fail", "seconds": 1.0, "note": "x\x07y",
                       "counts": {"samples": 3}, "clusters": [cluster["key"]], "out": "checks/c"}],
           "clusters": [cluster]}
    path = write_junit(tmp_path / "junit.xml", doc)
    tree = etree.parse(str(path))
    schema = etree.XMLSchema(etree.parse(str(XSD)))
    assert schema.validate(tree), schema.error_log
    failure = tree.find(".//testsuite[@name='s<&>.clusters']/testcase/failure")
    assert failure.get("message").startswith("new cluster, 3 findings: token 2 (byte 2, char 2): expected 3 'b', got 9")
    assert "a\\x00b\\x1b[31m\\u202egnp.exe\\ud800]]></failure><script>x</script>\\ufeff" in failure.text
    assert "[special: <|endoftext|>]" in failure.text
    assert tree.find(".//script") is None and "\u202e" not in path.read_text(encoding="utf-8")


def test_baseline_lists_new_fixed_and_unchanged_clusters_and_throughput(gate):
    gate("ß", [], "monday")
    code, tuesday = gate("ß€", [], "tuesday", "--baseline", str(gate.dir / "monday"))
    assert code == 1
    keys = lambda rows: sorted(r["key"] for r in rows)  # noqa: E731
    eszett = only_key(json.loads((gate.dir / "monday" / "gate.json").read_text()))
    euro = next(c["key"] for c in tuesday["clusters"] if c["key"] != eszett)
    base = tuesday["baseline"]
    assert keys(base["new"]) == [euro] and keys(base["unchanged"]) == [eszett] and base["fixed"] == []
    assert by_status(tuesday) == {"unchanged": [eszett], "new": [euro]}  # not allowlisted: both still fail
    rates = base["throughput"]["slice"]
    assert set(rates) == {"samples_per_s", "mb_per_s"} and rates["samples_per_s"]["before"] > 0

    code, wednesday = gate("€", [], "wednesday", "--baseline", str(gate.dir / "tuesday"))
    base = wednesday["baseline"]
    assert keys(base["fixed"]) == [eszett] and keys(base["unchanged"]) == [euro] and base["new"] == []

    code, _ = gate("€", [], "thursday", "--baseline", str(gate.dir / "no-such-night"))
    assert code == 2 and not (gate.dir / "thursday").exists()


def test_resume_keeps_finished_checks_and_judges_them_again_with_the_edited_allowlist(gate):
    code, doc = gate("ß", [], "night")
    assert code == 1
    key = only_key(doc)
    slice_result = gate.dir / "night" / "checks" / "slice" / "gate-check.json"
    before = slice_result.stat().st_mtime_ns
    recheck_result = gate.dir / "night" / "checks" / "recheck" / "gate-check.json"
    recheck_result.unlink()  # as if the gate had been killed during that check
    code, doc = gate("ß", [{"key": key, "reason": "accepted"}], "night", "--resume")
    assert code == 0 and by_status(doc) == {"allowlisted": [key]}
    assert slice_result.stat().st_mtime_ns == before and recheck_result.is_file()
    slice_result.unlink()  # killed before the corpus check finished: its committed shards are kept
    code, again = gate("ß", [{"key": key, "reason": "accepted"}], "night", "--resume")
    slice_check = next(c for c in again["checks"] if c["name"] == "slice")
    assert code == 0 and "resumed" in slice_check["note"] and slice_check["counts"] == \
        next(c for c in doc["checks"] if c["name"] == "slice")["counts"]
    # a gate that is not resumed never overwrites one: a new attempt, the earlier kept as its baseline;
    # a changed suite does not resume
    code, fresh = gate("ß", [], "night")
    assert code == 1 and fresh["baseline"]["out"] == str(gate.dir / "night" / "attempts" / "1")
    assert (gate.dir / "night" / "attempts" / "1" / "checks" / "slice" / "gate-check.json").is_file()
    suite = gate.dir / "suite.toml"
    suite.write_text(suite.read_text().replace('corpus = "corpus.jsonl"', 'corpus = "corpus.jsonl"\nlimit = 2'))
    code, _ = gate("ß", [], "night", "--resume")
    assert code == 2


def test_a_replay_on_an_engine_without_sessions_runs_and_is_skipped_never_passed(gate):
    turns = [("s1", 0, "hello there"), ("s1", 1, " and more words"), ("s2", 0, "die Straße"), ("s2", 1, " ist lang")]
    (gate.dir / "traces.jsonl").write_text("".join(
        json.dumps({"schema": "verify.trace/1", "session": s, "turn": t, "text": x}) + "\n" for s, t, x in turns))
    suite = gate.dir / "suite.toml"
    text = suite.read_text()
    suite.write_text(text[:text.index("[[check]]")] + "[[check]]\nkind = 'replay'\ntraces = 'traces.jsonl'\n")
    code, doc = gate("", [], "clean")
    (replay,) = doc["checks"]
    assert code == 0 and replay["status"] == "skipped" and "no stateful sessions" in replay["note"]
    assert replay["counts"]["samples"] == 4 and replay["counts"]["verified"] == 4  # it ran what exists
    code, doc = gate("ß", [], "planted")
    assert code == 1 and doc["checks"][0]["status"] == "fail" and by_status(doc).keys() == {"new"}
    suite.write_text(suite.read_text().replace("workers = 1", "workers = 1\nfail_on_skip = true"))
    code, doc = gate("", [], "strict")
    assert code == 1 and any("fail_on_skip" in r for r in doc["reasons"])


def test_a_cluster_the_fuzzer_masks_for_the_allowlist_is_allowlisted_not_stale(gate):
    suite = gate.dir / "suite.toml"
    text = suite.read_text()
    suite.write_text(text[:text.index("[[check]]")] + "[[check]]\nkind = 'fuzz'\nexamples = 40\nseconds = 4\n"
                     "seed = 3\nstress = false\nminimize_budget = 1\n")
    code, doc = gate(" ", [], "found")
    assert code == 1 and doc["clusters"] and {c["status"] for c in doc["clusters"]} == {"new"}
    assert all(c["reproducer"] and " " in "".join(t for t, _ in c["reproducer"]) for c in doc["clusters"])
    code, doc = gate(" ", [{"engine": "gate_plugin", "cluster": "^ids/", "reason": "spaces"}], "masked")
    assert code == 0 and doc["clusters"] and {c["status"] for c in doc["clusters"]} == {"allowlisted"}
    assert [e["status"] for e in doc["allowlist"]] == ["matched"]
    (fuzz,) = doc["checks"]
    assert fuzz["status"] == "pass" and fuzz["counts"]["diverged"] > 0  # counted, masked, judged


@pytest.mark.parametrize("body, message", [
    ("[gate]\nname='x'\nreference='tiktoken-cl100k'\ncandidates=['hf-cl100k']\n[[check]]\nkind='corpus'\n"
     "corpus='smoke'\nsmaple=0.1\n", "unknown key(s) smaple"),
    ("[gate]\nname='x'\nreference='tiktoken-cl100k'\ncandidates=['hf-cl100k']\n[[check]]\nkind='benchmark'\n",
     "unknown kind 'benchmark'"),
    ("[gate]\nname='x'\nreference='tiktoken-cl100k'\ncandidates=['hf-cl100k']\ncolour='red'\n[[check]]\n"
     "kind='fuzz'\n", "unknown key(s) colour"),
    ("[gate]\nname='x'\nreference='tiktoken-cl100k'\ncandidates=['no-such-engine']\n[[check]]\nkind='fuzz'\n",
     "unknown engine 'no-such-engine'"),
    ("[gate]\nname='x'\nreference='tiktoken-cl100k'\ncandidates=['hf-cl100k']\n[[check]]\nkind='fuzz'\n"
     "seconds='soon'\n", "'seconds' must be a number"),
])
def test_a_bad_suite_is_one_line_and_exit_2(tmp_path, capsys, body, message):
    suite = tmp_path / "bad.toml"
    suite.write_text(body)
    assert main(["gate", str(suite), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_the_cli_exit_code_and_the_example_suite_parses(tmp_path):
    from verify.gate.suite import KINDS, load_suite

    suite = load_suite(Path(__file__).resolve().parent.parent / "ci" / "nightly.toml")
    assert set(KINDS) == {c.kind for c in suite.checks} and suite.allowlist.is_file()
    bad = tmp_path / "bad.toml"
    bad.write_text("[gate]\nname = 'x'\n")
    proc = run_cli("gate", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "needs 'reference'" in proc.stderr


def test_two_nights_with_a_baseline_the_second_comment_lists_the_unchanged_failing_cluster(gate):
    gate("ß", [], "night-a")
    code, doc = gate("ß", [], "night-b", "--baseline", str(gate.dir / "night-a"))
    key = only_key(doc)
    assert code == 1 and by_status(doc) == {"unchanged": [key]}  # still failing: the baseline had it too
    text = (gate.dir / "night-b" / "ci-summary.md").read_text(encoding="utf-8")
    assert text.startswith("### verify gate `planted`: **FAIL**")
    assert "#### Failing clusters (1: 1 unchanged)" in text
    reproducer = "".join(t for t, _ in doc["clusters"][0]["reproducer"])
    assert "ß" in reproducer and f"1. **unchanged** **1×** `python:gate_plugin:planted` `{key}` — `{reproducer}`" in text
    assert "- **Unchanged (still failing)** (1):" in text and f"  - `python:gate_plugin:planted` `{key}`" in text
    assert "**Checks**: 2 — 1 failed: `slice`; 1 skipped: `recheck` (`no regression case" in text


def test_a_check_that_checks_nothing_fails_and_says_so(tmp_path):
    from verify.gate.check_run import CheckRun, tally
    from verify.gate.verdict import check_status

    (tmp_path / "manifest.json").write_text(json.dumps({"complete": True, "seconds": 1.0, "counts": {"samples": 0}}))
    run = CheckRun("empty", "corpus", "d")
    tally(run, [tmp_path], allow_skipped=False)
    assert run.problems == ["ran nothing: 0 samples checked (a budget, a limit or a corpus left it empty), "
                            "so it cannot pass"]
    assert check_status(run, set()) == "fail"  # never a silent pass


def test_running_a_suite_again_into_its_out_keeps_the_earlier_gate_as_the_baseline(gate):
    """The README's path: the gate fails, the cluster is accepted in the allowlist, the same
    command runs again into the same --out and passes; the first gate is kept as the baseline."""
    code, doc = gate("\u00df", [], "gate-out")
    assert code == 1
    key = only_key(doc)
    allow = {"engine": "gate_plugin", "key": key, "reason": "known", "expires": "2999-12-31"}
    code, doc = gate("\u00df", [allow], "gate-out")
    assert code == 0 and doc["verdict"] == "pass", doc["reasons"]
    kept = gate.dir / "gate-out" / "attempts" / "1"
    assert json.loads((kept / "gate.json").read_text())["verdict"] == "fail"
    assert doc["baseline"]["out"] == str(kept) and [c["key"] for c in doc["baseline"]["unchanged"]] == [key]
    code, doc = gate("\u00df", [allow], "gate-out")  # a third attempt: the second is its baseline
    assert code == 0 and doc["baseline"]["out"] == str(gate.dir / "gate-out" / "attempts" / "2")


def test_a_gate_out_of_time_fails_and_names_the_checks_its_deadline_cut(gate):
    code, doc = gate("slow", [], "late", "--deadline", "2")
    assert code == 1 and doc["verdict"] == "fail"
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["slice"]["status"] == "fail" and checks["slice"]["cut"]
    assert "--deadline = 2 s" in checks["slice"]["cut"]
    assert checks["recheck"]["cut"].startswith("not started")  # no time was left to start it
    assert any(r.startswith("the deadline cut: slice, recheck") for r in doc["reasons"])
