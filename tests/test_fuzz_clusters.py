"""One bug must not hide another: `verify fuzz` counts but masks findings of clusters it
has already found, that an allowlist accepts or that adversarial/tags.toml names, keeps
searching, and writes one shrunk reproducer per new cluster (one per cause)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from conftest import run_cli
from verify.adversarial.fuzz.clusters import ClusterBook, cluster_key
from verify.adversarial.fuzz.hunt import DEFAULT_MAX_FINDINGS, EXAMPLES_ENV, fuzz
from verify.allowlist import Allowlist, load_allowlist, parse_allowlist
from verify.classify import load_tags
from verify.errors import ConfigError
from verify.executors.pool import EngineOptions
from verify.findings import Finding
from verify.sample import Sample

IN_PROCESS = EngineOptions(isolate=False)
REFERENCE = "tiktoken:cl100k_base"

PLANTED = '''
import re
_enc = None

def _encoding():
    global _enc
    if _enc is None:
        from verify.engines import build_engine
        _enc = build_engine("tiktoken:cl100k_base").encoding
    return _enc

class TwoBugs:
    """cl100k with two planted bugs. Frequent: every '<' is encoded as if it were the
    fullwidth '\\uff1c' (special-token look-alikes, HTML, code: many examples hit it).
    Rare: a run of 4 or more ASCII digits whose length is not a multiple of 3 is grouped
    from the right ('1234' -> '1', '234' instead of '123', '4')."""
    def __init__(self, lt=True, digits=True):
        self.lt, self.digits = lt, digits
    def encode_batch(self, texts):
        enc = _encoding()
        out = []
        for text in texts:
            ids = enc.encode_ordinary(text.replace("<", "\\uff1c") if self.lt else text)
            out.append(self._regroup(enc, ids) if self.digits else ids)
        return out
    @staticmethod
    def _regroup(enc, ids):
        out, run = [], []
        def flush():
            digits = b"".join(enc.decode_single_token_bytes(i) for i in run)
            if len(digits) >= 4 and len(digits) % 3:
                head = len(digits) % 3
                groups = [digits[:head]] + [digits[j:j + 3] for j in range(head, len(digits), 3)]
                out.extend(enc.encode_single_token(g) for g in groups)
            else:
                out.extend(run)
            run.clear()
        for i in ids:
            piece = enc.decode_single_token_bytes(i)
            if piece.isascii() and piece.isdigit():
                run.append(i)
                continue
            if run:
                flush()
            out.append(i)
        if run:
            flush()
        return out

def two_bugs():
    return TwoBugs()
'''


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "fuzz_two_bugs.py").write_text(PLANTED)
    return "python:fuzz_two_bugs:two_bugs"


def records(out):
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text(encoding="utf-8").splitlines()]


def _text(record) -> str:
    return "".join(t for t, _ in record["input"])


def _digit_bug(text: str) -> bool:
    return any(len(run) >= 4 and len(run) % 3 for run in re.findall(r"[0-9]+", text))


def _by_cluster(manifest) -> dict[str, dict]:
    return {c["cluster"]: c for c in manifest["fuzz"]["clusters"]}


def test_a_frequent_bug_does_not_hide_a_rare_one_within_the_default_budget(tmp_path, planted, monkeypatch):
    monkeypatch.delenv(EXAMPLES_ENV, raising=False)  # the default budget of examples, as a user gets it
    out = tmp_path / "out"
    # The time cap is raised so that the examples, not the machine's load, end the search: on a
    # loaded 2-core CI machine the default 60 s cap cut it before the frequent bug was met again.
    result = fuzz(REFERENCE, [planted], out_dir=out, database_dir=tmp_path / "db", engine=IN_PROCESS,
                  stress=False, budget_s=900)
    found = records(out)
    lt = [r for r in found if "<" in _text(r)]
    digits = [r for r in found if _digit_bug(_text(r)) and "<" not in _text(r)]
    assert lt and digits, [_text(r) for r in found]
    assert len(lt) + len(digits) == len(found), [_text(r) for r in found]  # nothing but the two bugs
    assert len(found) <= 4, [_text(r) for r in found]  # one reproducer per cause, not per surrounding
    for record in (lt[0], digits[0]):  # each shrunk to a small reproducer of its own
        assert record["kind"] == "ids" and record["engine"] == planted and len(_text(record)) <= 8, record
    clusters = _by_cluster(result.manifest)
    frequent = next(c for c in clusters.values() if c.get("finding_key") == lt[0]["finding_key"])
    assert frequent["status"] == "found" and frequent["masked"] > 1 and frequent["hits"] > frequent["masked"] - 1
    minimized = [c["minimized"][0][0] for c in clusters.values() if c["status"] == "found" and c.get("minimized")]
    assert "<" in minimized and any(_digit_bug(m) for m in minimized), minimized  # each bug's own cause
    same = [c for c in clusters.values() if c["status"] == "same-cause"]
    assert same and all(c["masked"] == c["hits"] and c["same_as"] in clusters for c in same)
    counts = result.manifest["counts"]
    assert counts["findings"] == len(found) and counts["diverged"] > len(found)  # masked samples still count
    assert result.manifest["fuzz"]["max_findings"] == DEFAULT_MAX_FINDINGS
    assert sum(r["examples"] for r in result.manifest["fuzz"]["rounds"]) <= result.manifest["fuzz"]["max_examples"]


def test_an_allowlisted_cluster_is_counted_not_written_and_another_bug_is_still_found(tmp_path, planted):
    allow = tmp_path / "allow.toml"
    allow.write_text('[[allow]]\nengine = "fuzz_two_bugs"\ncluster = "\\\\|digit"\n'
                     'reason = "known: digit runs grouped from the right"\nexpires = 2999-01-01\n'
                     '[[allow]]\nengine = ""\ncluster = ""\nreason = "expired: matches nothing"\n'
                     'expires = 2000-01-01\n')
    out = tmp_path / "out"
    result = fuzz(REFERENCE, [planted], out_dir=out, database_dir=None, engine=IN_PROCESS, stress=False,
                  max_examples=800, allowlist=load_allowlist(allow), tags=[])
    found = records(out)
    assert found and all("<" in _text(r) for r in found), [_text(r) for r in found]
    allowed = [c for c in result.clusters if c["status"] == "allowlist"]
    assert allowed and all(re.search(r"\|digit", c["cluster"]) for c in allowed)
    assert all(c["masked"] == c["hits"] >= 1 and c["reason"].startswith("known") for c in allowed)
    assert sum(c["hits"] for c in allowed) > 1  # the digit bug was met, counted, and not written
    listed = result.manifest["fuzz"]["allowlist"]
    assert len(listed["rules"]) == 1 and len(listed["expired"]) == 1


def test_a_known_tags_toml_rule_masks_its_cluster_but_a_hint_row_does_not(tmp_path, planted):
    tags = tmp_path / "tags.toml"
    tags.write_text('[[tag]]\nengine = "fuzz_two_bugs"\nsignature = "Sm|symbol"\ntag = "known: < as fullwidth"\n'
                    'link = "https://example.invalid/issue/1"\nknown = true\n'
                    '[[tag]]\nengine = ""\nsignature = ""\ntag = "hint: matches everything"\n')
    out = tmp_path / "out"
    result = fuzz(REFERENCE, [planted], out_dir=out, database_dir=None, engine=IN_PROCESS, stress=False,
                  max_examples=800, tags=load_tags(tags))
    found = records(out)
    assert any(_digit_bug(_text(r)) for r in found), [_text(r) for r in found]  # the other bug is found
    tagged = [c for c in result.clusters if c["status"] == "tags"]
    assert tagged and all(c["tags"] == ["known: < as fullwidth"] and c["masked"] == c["hits"] for c in tagged)
    assert not any(re.search("Sm|symbol", _by_key(result, r)) for r in found)


def _by_key(result, record) -> str:
    return next(c["cluster"] for c in result.clusters if c.get("finding_key") == record["finding_key"])


def test_cli_allowlist_prints_what_it_masked_and_rejects_a_bad_file(tmp_path, planted):
    allow = tmp_path / "allow.toml"
    allow.write_text('[[allow]]\ncluster = ""\nreason = "everything is known"\n')
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--reference", REFERENCE, "--candidate", planted, "--out", str(out), "--in-process",
                   "--database", str(tmp_path / "db"), "--allowlist", str(allow), "--no-stress",
                   env={EXAMPLES_ENV: "150"})
    assert proc.returncode == 0, proc.stdout + proc.stderr  # every cluster accepted: nothing to report
    assert records(out) == [] and re.search(r"0 findings, \d+ masked in \d+ known clusters", proc.stdout)
    allow.write_text('[[allow]]\ncluster = "("\nreason = "x"\n')
    proc = run_cli("fuzz", "--reference", REFERENCE, "--candidate", planted, "--out", str(out),
                   "--allowlist", str(allow))
    assert proc.returncode == 2 and "bad 'cluster' regex" in proc.stderr


# --- the pieces -----------------------------------------------------------------------

def test_allowlist_rows_need_a_reason_known_keys_and_valid_dates():
    today = dt.date(2026, 6, 1)
    doc = {"allow": [{"engine": "a", "cluster": "^ids/", "reason": "r", "expires": dt.date(2026, 6, 1)},
                     {"cluster": "x", "reason": "old", "expires": "2026-05-31"}]}
    allow = parse_allowlist(doc, today=today)
    assert [r.reason for r in allow.rules] == ["r"] and [r.reason for r in allow.expired] == ["old"]
    assert allow.match("engine-a", "ids/Zs+Ll") is not None and allow.match("b", "ids/Zs") is None
    for bad, message in [({"allow": [{"cluster": "x"}]}, "reason"),
                         ({"allow": [{"cluster": "x", "reason": "r", "tag": "t"}]}, "unknown key"),
                         ({"allow": [{"reason": "r", "expires": "soon"}]}, "expires"),
                         ({"tag": []}, "unknown top-level")]:
        with pytest.raises(ConfigError, match=message):
            parse_allowlist(bad, today=today)


def _finding(text: str, offset: int, engine: str = "e") -> Finding:
    return Finding(engine, "ref", Sample.plain(f"s{text}", text), "ids", "fuzz", {"char_offset": offset})


def test_cluster_book_counts_masked_hits_and_folds_a_known_cause():
    book = ClusterBook(Allowlist(), [])
    first, again, elsewhere = _finding("a<", 1), _finding("b<", 1), _finding(" <", 1)
    assert cluster_key(first) == cluster_key(again) != cluster_key(elsewhere)
    assert book.observe([first]) == [first]
    entry = book.add(first, {"finding_key": "k1"}, "hypothesis", ("cause-lt", [["<", False]]))
    assert book.observe([again, again]) == [] and entry.hits == 3 and entry.masked == 2
    assert book.observe([elsewhere]) == [elsewhere]
    folded = book.fold(elsewhere, ("cause-lt", [["<", False]]), book.same_cause(elsewhere, ("cause-lt", [])))
    assert folded.status == "same-cause" and folded.same_as == entry.key and book.known(elsewhere)
    assert book.found("e") == 1 and book.masked("e") == 3
    other_engine = _finding("a<", 1, engine="f")
    assert book.observe([other_engine]) == [other_engine]  # clusters are per engine
    stress_only = Finding("e", "ref", Sample.plain("x", "y"), "ids", "fuzz-stress",
                          {"char_offset": 0, "stress": {"only": "big-batch"}})
    assert cluster_key(stress_only) == "ids/stress-only/big-batch"
