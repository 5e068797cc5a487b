"""`verify shadow` on the one pipeline: shadow files are shards, so any number of workers,
a resume after kill -9, and --redact across worker processes give what one uninterrupted
run gives -- the same counts, clusters and findings, and no production text under OUT.

The planted production records of test_shadow.py (4 corruptions among 21 records, bad
lines, two sessions) are cut into four files, sessions whole in one of them.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from record_types import run_folder_conforms
from test_shadow import BAD_LINES, LT_BUG, REFERENCE, _text, planted
from verify.cli import main

# A replay engine of cl100k-prod that holds any text with "HOLD" while $SHADOW_HOLD_UNTIL names a
# file that does not exist: the shards holding such a mismatch cannot commit until the run is killed.
HOLD = '''
import os, time
_enc = None

def _encoding():
    global _enc
    if _enc is None:
        from verify.engines import build_engine
        _enc = build_engine("tiktoken:cl100k_base").encoding
    return _enc

class Hold:
    def encode_batch(self, texts):
        gate = os.environ.get("SHADOW_HOLD_UNTIL")
        if gate and any("HOLD" in t for t in texts):
            while not os.path.exists(gate):
                time.sleep(0.05)
        return [_encoding().encode_ordinary(t) for t in texts]

def make():
    return Hold()
'''


@pytest.fixture(scope="module")
def cl100k():
    from verify.engines import build_engine

    return build_engine(REFERENCE)


def _write(path: Path, records: list[dict], extra_lines=()) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def four_files(prod, folder: Path, held: bool = False) -> list[Path]:
    """req-00..03 and the bad lines, req-04..07, req-08..11, the sessions; with ``held`` the
    last two files each get a corrupted request whose text holds HOLD."""
    by_id = {r["request_id"]: r for r in prod.records}
    plain = [by_id[f"req-{i:02d}"] for i in range(12)]
    sessions = [r for r in prod.records if "session" in r]
    parts = [plain[0:4], plain[4:8], plain[8:12], sessions]
    if held:
        enc = prod.enc
        for n in (2, 3):
            text = f"HOLD {n}: " + _text(random.Random(n), f"hold-{n}")
            ids = [int(i) for i in enc.encode_batch([_sample(text)])[0]]
            ids[4] = (ids[4] + 1) % 100_000
            parts[n] = parts[n] + [{**parts[0][0], "request_id": f"hold-{n}", "text": text, "ids": ids}]
    return [_write(folder / f"shadow-{n}.jsonl", part, BAD_LINES if n == 0 else ())
            for n, part in enumerate(parts)]


def _sample(text: str):
    from verify.sample import Sample

    return Sample.from_segments("s", [(text, False)])


def _report(out: Path) -> dict:
    return json.loads((out / "shadow.json").read_text(encoding="utf-8"))


def _lines(out: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (out / name).read_text(encoding="utf-8").splitlines()]


def _clusters(report: dict) -> list[tuple]:
    return [(c["engine"], c["key"], c["status"], c["count"], tuple(c["request_ids"])) for c in report["clusters"]]


def test_one_or_two_workers_give_the_same_report(cl100k, tmp_path):
    prod = planted(cl100k)
    files = four_files(prod, tmp_path)
    runs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        assert main(["shadow", *map(str, files), "--reference", REFERENCE, "--out", str(out), "--in-process",
                     "--workers", str(workers), "--no-progress"]) == 1
        runs[workers] = out
    one, two = _report(runs[1]), _report(runs[2])
    assert one["counts"] == two["counts"]
    assert one["counts"]["records"] == 21 and one["counts"]["mismatched"] == 4 and one["counts"]["bad_records"] == 4
    assert {r["request_id"] for r in two["mismatched_requests"]} == prod.corrupt
    assert _clusters(one) == _clusters(two)
    assert one["tokenizers"] == two["tokenizers"]
    assert [f["finding_key"] for f in _lines(runs[1], "divergences.jsonl")] == \
        [f["finding_key"] for f in _lines(runs[2], "divergences.jsonl")]
    assert _lines(runs[1], "triage.jsonl") == _lines(runs[2], "triage.jsonl")
    manifest = json.loads((runs[2] / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["hunt"] == "shadow" and manifest["shards"]["total"] == manifest["shards"]["committed"] == 4
    assert {a["workers"] for a in manifest["attempts"] if "workers" in a} == {2}
    assert manifest["shadow"]["verdict"] == "fail" and manifest["shadow"]["counts"] == two["counts"]
    assert manifest["counts"]["verified"] == 17 and manifest["reports"]["shadow"] == "shadow.md"


def test_the_reports_lists_are_capped_and_their_totals_are_not(cl100k, tmp_path, monkeypatch):
    """The triage stage keeps per cluster, not per finding: listed requests stop at a cap
    (10,000; 2 here), counts and totals go on."""
    import verify.shadow.triage as triage
    from verify.executors.pool import EngineOptions
    from verify.shadow.hunt import triage_out

    out = tmp_path / "out"
    assert main(["shadow", *map(str, four_files(planted(cl100k), tmp_path)), "--reference", REFERENCE, "--out",
                 str(out), "--in-process", "--workers", "1", "--no-progress", "--minimize-budget", "0"]) == 1
    whole = _report(out)
    monkeypatch.setattr(triage, "MAX_LISTED_REQUESTS", 2)
    monkeypatch.setattr(triage, "MAX_REQUEST_IDS", 1)
    capped = triage_out(out, EngineOptions(isolate=False), budget_s=0)
    assert capped["counts"] == whole["counts"] and capped["mismatched_requests_total"] == 4
    assert capped["mismatched_requests"] == whole["mismatched_requests"][:2] and len(capped["bad_records"]) == 2
    assert [c["count"] for c in capped["clusters"]] == [c["count"] for c in whole["clusters"]]
    assert all(c["request_ids"] == w["request_ids"][:1] for c, w in zip(capped["clusters"], whole["clusters"]))


def production_forms(prod) -> list[str]:
    """Every way a production input (or an 80-character slice of one) could appear in a file."""
    forms = []
    for text in prod.texts + [json.loads(line).get("text", "") for line in BAD_LINES[1:]]:
        slices = [text] + [text[k:k + 80] for k in range(0, max(1, len(text) - 80), 20)] if len(text) > 80 else [text]
        for s in slices:
            forms += [s, json.dumps(s, ensure_ascii=False)[1:-1], json.dumps(s)[1:-1], ascii(s)[1:-1]]
    return [f for f in set(forms) if len(f) >= 5]


def test_redact_with_two_workers_leaves_no_production_text_under_out(cl100k, tmp_path, plugin_dir):
    (plugin_dir / "shadow_lt_bug.py").write_text(LT_BUG)
    from shadow_lt_bug import make

    prod = planted(cl100k)
    bug = make()
    rng = random.Random(3)
    for i in range(4):  # a second production tokenizer whose '<' bug --engine replays (in the workers)
        text = _text(rng, f"lt-{i}") + " if a<b then c"
        prod.add(f"lt-{i}", [(text, False)], bug.encode_batch([text])[0], corrupt=True, digest_only=i % 2 == 1,
                 name="cl100k-lt", version="2.0", second=50 + i)
    files = four_files(prod, tmp_path)
    _write(files[1], [json.loads(line) for line in files[1].read_text(encoding="utf-8").splitlines()]
           + [r for r in prod.records if r["request_id"].startswith("lt-")])
    out = tmp_path / "out"
    assert main(["shadow", *map(str, files), "--reference", REFERENCE, "--out", str(out), "--redact", "--in-process",
                 "--workers", "2", "--no-progress", "--engine", "cl100k-lt=python:shadow_lt_bug:make",
                 "--minimize-budget", "20"]) == 1
    report = _report(out)
    assert {r["request_id"] for r in report["mismatched_requests"]} == prod.corrupt
    assert report["redacted"] is True and report["counts"]["records"] == 25

    files_under_out = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files_under_out}
    assert {"divergences.jsonl", "triage.jsonl", "clusters.json", "triage.json", "manifest.json", "summary.md",
            "shadow.json", "shadow.md", "plan.json", "hunt.json", "000001.extra.json"} <= names
    assert not (out / "inputs").exists()
    forms = production_forms(prod)
    ids_lists = {json.dumps(ids)[1:-1] for ids in prod.reference_ids.values()}
    for p in files_under_out:  # every file: findings, shard commits and extras, plan, status, reports
        data = p.read_text(encoding="utf-8")
        leaked = [f for f in forms if f in data]
        assert not leaked, f"{p.relative_to(out)} holds production text: {leaked[0][:60]!r}"
        assert not any(ids in data for ids in ids_lists), f"{p.relative_to(out)} holds all of an input's ids"

    lt = [c for c in report["clusters"] if c["engine"] == "production:cl100k-lt"]
    # minimised in the triage stage on inputs read again from the shadow files, in memory only
    assert lt and all(c["reproducer"]["minimized"] for c in lt)
    assert all(len("".join(t for t, _ in c["reproducer"]["input"])) <= 8 for c in lt)
    others = [c for c in report["clusters"] if c["engine"] == "production:cl100k-prod"]
    assert others and all(not c["reproducer"]["minimized"] and "redacted" in c["reproducer"] for c in others)


def _markers(out: Path) -> set[str]:
    shards = out / "shards"
    return {p.name for p in shards.glob("[0-9]*[0-9].json")} if shards.is_dir() else set()


def test_kill_9_then_resume_equals_an_uninterrupted_run(cl100k, tmp_path, plugin_dir):
    (plugin_dir / "shadow_hold.py").write_text(HOLD)
    prod = planted(cl100k)
    files = four_files(prod, tmp_path, held=True)
    args = [*map(str, files), "--reference", REFERENCE, "--in-process", "--workers", "2", "--no-progress",
            "--engine", "cl100k-prod=python:shadow_hold:make", "--minimize-budget", "0"]
    whole = tmp_path / "whole"
    done = run_cli("shadow", *args, "--out", str(whole))
    assert done.returncode == 1, done.stderr

    out, gate = tmp_path / "killed", tmp_path / "never"
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", "shadow", *args, "--out", str(out)], cwd=REPO,
                            env={**os.environ, "SHADOW_HOLD_UNTIL": str(gate)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        # shards 2 and 3 hold a HOLD mismatch: they cannot commit, shards 0 and 1 must
        while time.monotonic() < deadline and proc.poll() is None and _markers(out) != {"000000.json", "000001.json"}:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read().decode()
        assert _markers(out) == {"000000.json", "000001.json"}
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its shard workers and their engines
        proc.wait()
    finally:
        gate.touch()  # whatever happened, nothing stays held
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not (out / "shadow.json").exists()

    resumed = run_cli("shadow", "--resume", "--out", str(out), "--no-progress", "--in-process")  # files: the saved run's
    assert resumed.returncode == 1, resumed.stderr
    assert "23 records: 17 confirmed, 6 mismatched" in resumed.stdout
    expected, got = _report(whole), _report(out)
    assert got["counts"] == expected["counts"] and got["tokenizers"] == expected["tokenizers"]
    assert _clusters(got) == _clusters(expected)
    assert got["mismatched_requests"] == expected["mismatched_requests"]
    assert {r["request_id"] for r in got["mismatched_requests"]} == prod.corrupt | {"hold-2", "hold-3"}
    assert _lines(out, "divergences.jsonl") == _lines(whole, "divergences.jsonl")
    assert _lines(out, "triage.jsonl") == _lines(whole, "triage.jsonl")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["complete"] and manifest["resumed"]
    assert manifest["resume"]["shards_run_after_resume"] == 2 and manifest["resume"]["shards_redone"] >= 1
    assert manifest["counts"] == json.loads((whole / "manifest.json").read_text(encoding="utf-8"))["counts"]


def test_resume_takes_the_saved_run_and_refuses_other_options(cl100k, tmp_path, capsys):
    files = four_files(planted(cl100k), tmp_path)
    out = tmp_path / "out"
    assert main(["shadow", *map(str, files[:2]), "--reference", REFERENCE, "--out", str(out), "--in-process",
                 "--workers", "1", "--no-progress", "--redact"]) == 1
    before = _report(out)
    capsys.readouterr()
    assert main(["shadow", "--resume", "--out", str(out), "--no-progress", "--engine", "tiktoken:o200k_base"]) == 2
    assert main(["shadow", *map(str, files), "--resume", "--out", str(out), "--no-progress"]) == 2
    assert main(["shadow", *map(str, files[:2]), "--reference", REFERENCE, "--out", str(out)]) == 2
    assert main(["shadow", "--out", str(out)]) == 2  # neither files nor a run to resume
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 4 and all(line.startswith("verify: error: ") for line in lines)
    assert "start a new run" in lines[0] and "already holds a run" in lines[2]
    # a redacted run stays redacted on resume (without --redact): nothing runs again, the same report
    assert main(["shadow", "--resume", "--out", str(out), "--no-progress", "--in-process"]) == 1
    assert _report(out)["counts"] == before["counts"] and _report(out)["redacted"] is True


def test_a_tokenizer_named_in_engines_toml_is_replayed_in_each_worker(cl100k, tmp_path):
    """No --engine: a record whose tokenizer.name is an engine of engines/*.toml is replayed on
    it, started on first use in the worker that meets it."""
    from test_shadow import _encode
    from verify.shadow_producer import shadow_record

    files = []
    for n in range(2):
        text = _text(random.Random(n), f"named-{n}")
        ids = _encode(cl100k, [(text, False)])
        ids[3] = (ids[3] + 1) % 100_000
        record = shadow_record(f"named-{n}", "tiktoken-cl100k", "1", None, text, ids,
                               timestamp="2026-03-01T12:00:00Z")
        files.append(_write(tmp_path / f"named-{n}.jsonl", [record]))
    out = tmp_path / "out"
    assert main(["shadow", *map(str, files), "--reference", REFERENCE, "--out", str(out), "--in-process",
                 "--workers", "2", "--no-progress", "--minimize-budget", "0"]) == 1
    report = _report(out)
    assert report["replay_engines"] == {"tiktoken-cl100k": "tiktoken-cl100k"}
    findings = _lines(out, "divergences.jsonl")
    assert len(findings) == 2 and all(f["shadow"]["replay"] == {**f["shadow"]["replay"], "engine": "tiktoken-cl100k",
                                                                 "reproduces": False} for f in findings)
    run_folder_conforms(out)  # shadow's findings (production's record in each) and clusters, as typed
