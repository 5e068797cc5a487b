"""`verify shadow`: production shadow records (verify.shadow/1) re-encoded by the reference.

Production records are generated here with tiktoken's cl100k_base through the example
producer (verify.shadow_producer), with corruptions planted in a known subset: a
substituted id, a dropped id, a digest-only record whose digest is wrong, a session whose
turn 3 is wrong. The command must report exactly those (by request id), count the rest
confirmed, count bad records, leave no production text under OUT with --redact, and
de-duplicate against known clusters and an allowlist.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from verify.cli import main
from verify.session_trace import coalesce
from verify.sample import Sample, Segment
from verify.shadow.schema import FIELDS
from verify.shadow_producer import ShadowSampler, shadow_record

REFERENCE = "tiktoken:cl100k_base"
WORDS = ("alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega 123 4567 89 café naïve déjà "
         "日本語 русский ελληνικά don't x+y=z {json: [1, 2]} <|endoftext|>").split()
TEMPLATE = "\n<|im_start|>user\n"

CL100K = '''
_enc = None

def _encoding():
    global _enc
    if _enc is None:
        from verify.engines import build_engine
        _enc = build_engine("tiktoken:cl100k_base").encoding
    return _enc
'''  # a plugin's cl100k_base encoding, built once

LT_BUG = CL100K + '''
class LtBug:
    """cl100k as a buggy production build: every '<' is encoded as the fullwidth '\\uff1c'."""
    def encode_batch(self, texts):
        return [_encoding().encode_ordinary(t.replace("<", "\\uff1c")) for t in texts]

def make():
    return LtBug()
'''


@pytest.fixture(scope="module")
def cl100k():
    from verify.engines import build_engine

    return build_engine(REFERENCE)


def _text(rng: random.Random, tag: str) -> str:
    """Long and unique: a request tag and 50 random words."""
    return f"{tag} says: " + " ".join(rng.choice(WORDS) for _ in range(50)) + f" (end of {tag})"


def _encode(enc, segments) -> list[int]:
    return [int(i) for i in enc.encode_batch([Sample.from_segments("p", segments)])[0]]


class Production:
    """Shadow records as a serving stack would write them, and what was planted."""

    def __init__(self, enc):
        self.enc, self.sha = enc, enc.identity().vocab_sha256
        self.records: list[dict] = []
        self.texts: list[str] = []
        self.corrupt: set[str] = set()
        self.reference_ids: dict[str, list[int]] = {}

    def add(self, rid, segments, ids, *, corrupt=False, digest_only=False, session=None, name="cl100k-prod",
            version="1.4.2", second=0):
        inp = segments[0][0] if len(segments) == 1 and not segments[0][1] else segments
        self.records.append(shadow_record(rid, name, version, self.sha, inp, ids, digest_only=digest_only,
                                          session=session, timestamp=f"2026-03-01T12:{second // 60:02d}:"
                                                                     f"{second % 60:02d}Z"))
        self.texts.append("".join(t for t, _ in segments))
        if corrupt:
            self.corrupt.add(rid)

    def write(self, path: Path, extra_lines=()) -> Path:
        lines = [json.dumps(r, ensure_ascii=False) for r in self.records] + list(extra_lines)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


BAD_LINES = [
    "{this is not json",
    json.dumps({"request_id": "bad-no-tokenizer", "timestamp": "2026-03-01T12:00:00Z", "text": "hello",
                "ids": [15339]}),
    json.dumps({"request_id": "bad-both", "timestamp": "2026-03-01T12:00:00Z", "text": "a", "segments": [["a", False]],
                "tokenizer": {"name": "t", "version": "1", "vocab_sha256": None}, "ids": [64]}),
    json.dumps({"request_id": "bad-ids", "timestamp": "2026-03-01T12:00:00Z", "text": "a",
                "tokenizer": {"name": "t", "version": "1", "vocab_sha256": None}, "ids": ["64"]}),
]


def planted(enc, seed: int = 7, plant: bool = True) -> Production:
    """21 records, 4 of them corrupted (none when not ``plant``)."""
    rng = random.Random(seed)
    prod = Production(enc)
    for i in range(12):
        rid = f"req-{i:02d}"
        segments = [(TEMPLATE, True), (_text(rng, rid), False)] if i == 9 else [(_text(rng, rid), False)]
        ids = _encode(enc, segments)
        prod.reference_ids[rid] = list(ids)
        if not plant:
            pass
        elif i == 2:
            ids[10] = (ids[10] + 1) % 100_000  # a substituted id
        elif i == 5:
            del ids[20]  # a dropped id
        elif i == 7:
            ids[3] = (ids[3] + 7) % 100_000  # recorded as a digest only, of the wrong ids
        prod.add(rid, segments, ids, corrupt=plant and i in (2, 5, 7), digest_only=i in (7, 8), version="1.4.2" if i < 6
                 else "1.5.0", second=i)
    # Two sessions, turns recorded out of order and interleaved; s1's turn 3 is wrong.
    turns = {s: [[(TEMPLATE, True), (_text(rng, f"{s}-t{t}"), False)] for t in range(5 if s == "s1" else 4)]
             for s in ("s1", "s2")}
    order = [("s1", 0), ("s2", 0), ("s1", 2), ("s1", 1), ("s2", 1), ("s1", 3), ("s2", 3), ("s2", 2), ("s1", 4)]
    for s, t in order:
        transcript = coalesce(Segment(a, b) for turn in turns[s][:t + 1] for a, b in turn)
        ids = _encode(enc, transcript)
        if plant and (s, t) == ("s1", 3):
            ids[-5] = (ids[-5] + 1) % 100_000
        prod.add(f"{s}-t{t}", turns[s][t], ids, corrupt=plant and (s, t) == ("s1", 3), session=(s, t), digest_only=t == 4,
                 second=30 + t)
    return prod


def _run(*args) -> int:
    return main(["shadow", *map(str, args)])


def _findings(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text(encoding="utf-8").splitlines()]


def _report(out: Path) -> dict:
    return json.loads((out / "shadow.json").read_text(encoding="utf-8"))


def test_reports_exactly_the_corrupted_records(cl100k, tmp_path, capsys):
    prod = planted(cl100k)
    path = prod.write(tmp_path / "shadow.jsonl", BAD_LINES)
    out = tmp_path / "out"
    assert _run(path, "--reference", REFERENCE, "--out", out) == 1  # isolated engines, as by default
    findings = _findings(out)
    mismatched = {f["sample_id"] for f in findings if f["kind"] == "ids"}
    assert mismatched == prod.corrupt == {"req-02", "req-05", "req-07", "s1-t3"}
    report = _report(out)
    assert report["verdict"] == "fail"
    assert report["counts"]["records"] == len(prod.records) == 21
    assert report["counts"]["confirmed"] == 21 - 4 and report["counts"]["mismatched"] == 4
    assert {r["request_id"] for r in report["mismatched_requests"]} == prod.corrupt
    bad = [f for f in findings if f["kind"] == "bad-input"]
    assert report["counts"]["bad_records"] == len(bad) == 4
    assert {b["position"] for b in report["bad_records"]} == {f"{path}:{n}" for n in range(22, 26)}
    assert all(b["reason"] for b in report["bad_records"])

    by_id = {f["sample_id"]: f for f in findings if f["kind"] == "ids"}
    digest = by_id["req-07"]  # only a digest: says so, carries the reference's ids and both lengths
    assert digest["shadow"]["recorded"] == "digest" and digest["token_index"] is None
    assert digest["shadow"]["reference"]["ids"] == prod.reference_ids["req-07"]
    assert digest["expected_len"] == digest["actual_len"] == len(prod.reference_ids["req-07"])
    assert by_id["req-02"]["token_index"] == 10 and by_id["req-05"]["token_index"] == 20
    session = by_id["s1-t3"]["session"]  # replayed as a session: the finding names it and its turn
    assert (session["id"], session["turn"], session["turns"]) == ("s1", 3, 4)
    assert by_id["s1-t3"]["expected_len"] == by_id["s1-t3"]["actual_len"]

    markdown = (out / "shadow.md").read_text(encoding="utf-8")
    assert markdown.startswith("# verify shadow: FAIL — 4 of 21 records mismatched")
    for rid in prod.corrupt:
        assert f"`{rid}`" in markdown
    assert "1.4.2" in markdown and "1.5.0" in markdown and "2026-03-01T12:00:02Z" in markdown
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["verified"] == 17 and manifest["shadow"]["verdict"] == "fail"
    assert "17 confirmed, 4 mismatched" in capsys.readouterr().out


def test_all_confirmed_exits_0_jsonl_and_parquet(cl100k, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    prod = planted(cl100k, plant=False)
    clean = prod.records
    assert _run(prod.write(tmp_path / "clean.jsonl"), "--reference", REFERENCE, "--out", tmp_path / "a",
                "--in-process") == 0
    assert _report(tmp_path / "a")["counts"]["confirmed"] == len(clean)
    rows = [{**{k: r.get(k) for k in FIELDS},  # every column in every row; segments as list<struct>
             "segments": [{"text": t, "allow_special": a} for t, a in r["segments"]] if "segments" in r else None}
            for r in clean]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "clean.parquet", row_group_size=5)
    assert _run(tmp_path / "clean.parquet", "--reference", REFERENCE, "--out", tmp_path / "b", "--in-process") == 0
    report = _report(tmp_path / "b")
    assert report["verdict"] == "pass" and report["counts"]["confirmed"] == len(clean)
    assert report["counts"]["mismatched"] == report["counts"]["bad_records"] == 0


def test_redact_leaves_no_production_text_under_out(cl100k, tmp_path, plugin_dir):
    (plugin_dir / "shadow_lt_bug.py").write_text(LT_BUG)
    from shadow_lt_bug import make

    prod = planted(cl100k)
    bug = make()
    rng = random.Random(3)
    for i in range(4):  # a second production tokenizer, with a '<' bug that --engine replays here
        text = _text(rng, f"lt-{i}") + " if a<b then c"
        prod.add(f"lt-{i}", [(text, False)], bug.encode_batch([text])[0], corrupt=True, digest_only=i % 2 == 1,
                 name="cl100k-lt", version="2.0", second=50 + i)
    path = prod.write(tmp_path / "shadow.jsonl", BAD_LINES)
    out = tmp_path / "out"
    assert _run(path, "--reference", REFERENCE, "--out", out, "--redact", "--in-process",
                "--engine", "cl100k-lt=python:shadow_lt_bug:make", "--minimize-budget", "20") == 1
    assert {f["sample_id"] for f in _findings(out) if f["kind"] == "ids"} == prod.corrupt

    files = [p for p in out.rglob("*") if p.is_file()]
    assert {"divergences.jsonl", "triage.jsonl", "clusters.json", "manifest.json", "summary.md", "shadow.json",
            "shadow.md"} <= {p.name for p in files}
    assert not (out / "inputs").exists()
    forms = []
    for text in prod.texts + [json.loads(line).get("text", "") for line in BAD_LINES[1:]]:
        slices = [text] + [text[k:k + 80] for k in range(0, max(1, len(text) - 80), 20)] if len(text) > 80 else [text]
        for s in slices:
            forms += [s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1], ascii(s)[1:-1]]
    forms = [f for f in set(forms) if len(f) >= 5]
    for p in files:
        data = p.read_text(encoding="utf-8")
        leaked = [f for f in forms if f in data]
        assert not leaked, f"{p.name} holds production text: {leaked[0][:60]!r}"
    ids_lists = {json.dumps(ids) for ids in prod.reference_ids.values()}
    for p in files:  # nor all of an input's ids, which spell its text
        assert not any(ids[1:-1] in p.read_text(encoding="utf-8") for ids in ids_lists)

    report = _report(out)
    lt = [c for c in report["clusters"] if c["engine"] == "production:cl100k-lt"]
    assert lt and all(c["reproducer"]["minimized"] for c in lt)  # minimised against the replay, kept
    assert all(len("".join(t for t, _ in c["reproducer"]["input"])) <= 8 and "<" in c["reproducer"]["input"][0][0]
               for c in lt)
    others = [c for c in report["clusters"] if c["engine"] == "production:cl100k-prod"]
    assert others and all(not c["reproducer"]["minimized"] and "redacted" in c["reproducer"] for c in others)
    assert report["redacted"] is True


def test_known_clusters_and_allowlist(cl100k, tmp_path):
    prod = planted(cl100k)
    path = prod.write(tmp_path / "night1.jsonl")
    first = tmp_path / "night1"
    assert _run(path, "--reference", REFERENCE, "--out", first, "--in-process") == 1
    keys1 = {c["key"] for c in _report(first)["clusters"]}
    assert all(c["status"] == "new" for c in _report(first)["clusters"])

    text = _text(random.Random(11), "req-new")
    ids = _encode(cl100k, [(text, False)]) + [100]  # an id inserted at the very end: a new cluster
    prod.add("req-new", [(text, False)], ids, corrupt=True, version="1.6.0", second=59)
    second = tmp_path / "night2"
    assert _run(prod.write(tmp_path / "night2.jsonl"), "--reference", REFERENCE, "--out", second, "--in-process",
                "--known-clusters", first) == 1
    status = {c["key"]: c["status"] for c in _report(second)["clusters"]}
    assert {k for k, s in status.items() if s == "known"} == keys1
    new = [c for c in _report(second)["clusters"] if c["status"] == "new"]
    assert [c["request_ids"] for c in new] == [["req-new"]] and new[0]["versions"] == ["1.6.0"]
    assert _report(second)["clusters"][0]["status"] == "new"  # new clusters lead the report

    allow = tmp_path / "allow.toml"
    allow.write_text('[[allow]]\nengine = "^production:"\ncluster = "^ids/"\nreason = "known: planted"\n')
    third = tmp_path / "night3"
    assert _run(tmp_path / "night2.jsonl", "--reference", REFERENCE, "--out", third, "--in-process",
                "--allowlist", allow) == 0
    report = _report(third)
    assert report["verdict"] == "pass" and {c["status"] for c in report["clusters"]} == {"allowlisted"}
    assert report["counts"]["accepted_findings"] == report["counts"]["mismatched"] == 5
    only_one = tmp_path / "allow1.toml"
    only_one.write_text(f'[[allow]]\ncluster = "^{sorted(keys1)[0].replace("|", "[|]").replace("+", "[+]")}$"\n'
                        'reason = "one of them"\n')
    assert _run(tmp_path / "night2.jsonl", "--reference", REFERENCE, "--out", tmp_path / "night4", "--in-process",
                "--allowlist", only_one) == 1


def test_sampler_keeps_sessions_whole_and_records_read_back(cl100k, tmp_path):
    from verify.shadow.source import read_shadow_shard, shadow_source
    from verify.keys import ids_digest
    from verify.shadow.schema import ShadowRecord, ShadowSession

    path = tmp_path / "sampled.jsonl"
    with ShadowSampler(0.3, path, seed=5) as sampler:
        for i in range(200):
            sampler.sample(f"r{i}", "cl100k-prod", "1", None, f"text {i}", [i, i + 1], digest_only=i % 2 == 0)
        for s in range(30):
            for t in range(3):
                sampler.sample(f"s{s}-{t}", "cl100k-prod", "1", None, [(TEMPLATE, True), (f"turn {t}", False)], [t],
                               session=(f"s{s}", t))
    assert 0 < sampler.kept < sampler.seen == 290
    again = ShadowSampler(0.3, tmp_path / "other.jsonl", seed=5)
    assert [again.keeps(f"r{i}") for i in range(200)] == [ShadowSampler(0.3, path, seed=5).keeps(f"r{i}")
                                                          for i in range(200)]
    (shard,) = shadow_source([str(path)]).shards()
    items = list(read_shadow_shard(shard))
    sessions = [x for x in items if isinstance(x, ShadowSession)]
    assert sessions and all(len(s.records) == 3 for s in sessions)  # whole, never partly sampled
    plain = [x for x in items if isinstance(x, ShadowRecord)]
    assert len(plain) + 3 * len(sessions) == sampler.kept
    digest_rec = next(r for r in plain if r.digest_only)
    n = int(digest_rec.request_id[1:])
    assert digest_rec.ids_digest == ids_digest([n, n + 1]) and digest_rec.ids_len == 2
    record = shadow_record("x", "t", "1", None, "hi", [1, 2], digest_only=True)
    assert set(record) == {"schema", "request_id", "timestamp", "tokenizer", "text", "ids_digest", "ids_len"}


def test_usage_errors_are_one_line(tmp_path, capsys):
    records = tmp_path / "one.jsonl"
    records.write_text(json.dumps(shadow_record("r", "t", "1", None, "hi", [6151])) + "\n", encoding="utf-8")
    assert _run(tmp_path / "missing.jsonl", "--reference", REFERENCE, "--out", tmp_path / "o") == 2
    assert _run(records, "--reference", REFERENCE, "--out", tmp_path / "o", "--known-clusters", tmp_path) == 2
    assert _run(records, "--reference", REFERENCE, "--out", tmp_path / "o", "--minimize-budget", "-1") == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 3 and all(line.startswith("verify: error: ") for line in lines)


PLAIN_REPLAY = '''
import verify.vocab

class Plain:
    """Production's tokenizer as deployed, but plain text only: it cannot take special segments."""
    def __init__(self):
        self.enc = verify.vocab.load("cl100k_base").encoder()
    def encode_batch(self, texts):
        return self.enc.encode_ordinary_batch(texts)

def make():
    return Plain()
'''


def test_shadow_says_why_a_cluster_was_not_minimised_and_has_its_own_page(cl100k, tmp_path, plugin_dir):
    """With --engine given, a cluster not minimised says the true reason: the replay engine cannot
    take special-token segments, or gives other ids than production; report.html is shadow's own
    page (status, first and last seen, versions, the replay engine by name)."""
    (plugin_dir / "shadow_plain_replay.py").write_text(PLAIN_REPLAY)
    prod = planted(cl100k)
    rng = random.Random(5)
    for i in range(2):  # a chat tokenizer whose every mismatch is in a transcript with special tokens
        segments = [(TEMPLATE, True), (_text(rng, f"chat-{i}"), False)]
        ids = _encode(cl100k, segments)
        ids[3] = (ids[3] + 1) % 100_000
        prod.add(f"chat-{i}", segments, ids, corrupt=True, name="cl100k-chat", version="3.1", second=60 + i)
    path = prod.write(tmp_path / "shadow.jsonl", [])
    out = tmp_path / "out"
    assert _run(path, "--reference", REFERENCE, "--out", out, "--in-process",
                "--engine", "cl100k-prod=python:shadow_plain_replay:make",
                "--engine", "cl100k-chat=python:shadow_plain_replay:make", "--minimize-budget", "5") == 1
    report = _report(out)
    whys = {r["key"]: r["reproducer"].get("why") or "" for r in report["clusters"]}
    assert any("cannot take this input" in why for why in whys.values()), whys  # s1-t3: special segments
    assert any("gives other ids than production" in why for why in whys.values()), whys
    assert not any("does not reproduce" in why for why in whys.values())
    assert not any("replay it with --engine" in s for r in report["clusters"] for s in r["suspects"])
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<title>verify shadow: FAIL</title>" in html and "candidate" not in html
    assert "first seen" in html and "1.4.2" in html and "cl100k-prod" in html and "not minimised:" in html



DAY_BUGS = CL100K + '''
import re

class Day1:
    """Release 1.0: two spaces before a word are encoded as one."""
    def encode_batch(self, texts):
        return [_encoding().encode_ordinary(re.sub(r"  (?=\\S)", " ", t)) for t in texts]

class Day2:
    """Release 2.0: that is fixed, and a new bug: trailing spaces are dropped."""
    def encode_batch(self, texts):
        return [_encoding().encode_ordinary(t.rstrip(" ")) for t in texts]

def day1():
    return Day1()

def day2():
    return Day2()
'''


def _symptoms(out: Path) -> dict[str, set[str]]:
    """Each cluster's symptoms (the character classes at the first difference of its findings)."""
    found: dict[str, set[str]] = {}
    for line in (out / "triage.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        found.setdefault(rec["cluster"], set()).add(rec["symptom"])
    return found


def test_a_new_bug_is_new_though_it_first_differs_between_the_same_character_classes(cl100k, tmp_path, plugin_dir):
    """Day 1 brings one bug (two spaces before a word become one), day 2 a different one
    (trailing spaces dropped) whose first difference falls between the same character classes
    (a letter, then spaces). A cluster is its cause: day 2's bug is new, and day 1's bug met
    again in other requests is known."""
    (plugin_dir / "shadow_day_bugs.py").write_text(DAY_BUGS)
    from shadow_day_bugs import day1, day2

    rng = random.Random(23)

    def production(bug, texts, version, tag) -> Path:
        prod = Production(cl100k)
        for i, text in enumerate(texts):
            prod.add(f"{tag}-{i}", [(text, False)], bug.encode_batch([text])[0], corrupt=True, version=version,
                     second=i)
        return prod.write(tmp_path / f"{tag}.jsonl")

    def night(path, out, replay, *known) -> list[dict]:
        assert _run(path, "--reference", REFERENCE, "--out", out, "--in-process", "--engine",
                    f"cl100k-prod=python:shadow_day_bugs:{replay}", "--minimize-budget", "60", *known) == 1
        return _report(out)["clusters"]

    doubled = lambda tag: [_text(rng, f"{tag}{i}") + " voila  fin" for i in range(3)]  # noqa: E731
    first = night(production(day1(), doubled("a"), "1.0", "day1"), tmp_path / "day1", "day1")
    assert len(first) == 1 and first[0]["reproducer"]["minimized"], first
    day1_key = first[0]["key"]

    again = night(production(day1(), doubled("b"), "1.0", "day1b"), tmp_path / "day1b", "day1",
                  "--known-clusters", tmp_path / "day1")  # the same bug in other requests: known
    assert [(c["key"], c["status"]) for c in again] == [(day1_key, "known")]

    trailing = [_text(rng, f"c{i}") + " voila  " for i in range(3)]
    second = night(production(day2(), trailing, "2.0", "day2"), tmp_path / "day2", "day2",
                   "--known-clusters", tmp_path / "day1")
    assert [c["status"] for c in second] == ["new"] and second[0]["key"] != day1_key, second
    assert sorted(second[0]["request_ids"]) == [f"day2-{i}" for i in range(3)]
    # what used to key a cluster -- the classes at the first difference -- is one that day 1 had too
    assert set().union(*_symptoms(tmp_path / "day2").values()) <= \
        set().union(*_symptoms(tmp_path / "day1").values()), (_symptoms(tmp_path / "day1"), _symptoms(tmp_path / "day2"))
