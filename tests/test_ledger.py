"""The reference ledger: a re-run encodes nothing on the reference and finds the same;
a tampered entry is ledger corruption, never a verified sample; another reference
identity starts another ledger; stats, check and compact."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import run_cli

from test_pipeline import PLUGIN  # noqa: E402  the tiny tokenizer with one planted bug ('ß')


ENGINES = {"in-process": ("--in-process",),
           # a ledger run's default: the engines in the shard worker, the worker the crash boundary
           "worker": (),
           # a memory limit is per engine process, so it keeps every engine in its own: there the
           # candidate's process checks its ids against the ledger's digests and answers 'matched'
           "isolated": ("--memory-limit-mb", "16384")}


def run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, out, *extra, limit="300", engines="in-process"):
    """``engines``: how the engines run (``ENGINES``)."""
    (plugin_dir / "ledger_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", "python:ledger_plugin:planted", "--corpus",
                   "default", "--limit", limit, "--out", str(tmp_path / out), "--no-progress",
                   "--minimize-budget", "0", *ENGINES[engines], *extra)
    manifest = json.loads((tmp_path / out / "manifest.json").read_text())
    keys = [json.loads(line)["finding_key"] for line in
            (tmp_path / out / "divergences.jsonl").read_text().split("\n") if line]
    session = [json.loads(line) for line in (tmp_path / out / "attempts.jsonl").read_text().splitlines()][-1]
    return proc, manifest, keys, session


def test_a_rerun_encodes_nothing_on_the_reference_and_finds_the_same(tmp_path, tiny_spec, plugin_dir,
                                                                      tiny_tokenizer_json):
    ledger = str(tmp_path / "ledger")
    plain, plain_manifest, plain_keys, _ = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "plain")
    first, m1, k1, s1 = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "first", "--ledger", ledger)
    again, m2, k2, s2 = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "again", "--ledger", ledger,
                            "--workers", "2", engines="worker")
    # isolated: the candidate's process matches its ids against the entries and sends back only the others
    iso, m3, k3, s3 = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "isolated", "--ledger", ledger,
                          engines="isolated")
    assert plain.returncode == first.returncode == again.returncode == iso.returncode == 1
    assert s1["ledger"]["encoded"] == 300 and s1["ledger"]["hits"] == 0
    for session in (s2, s3):
        assert session["ledger"]["hits"] == 300 and session["ledger"]["encoded"] == 0
        assert "corrupt" not in session["ledger"]
    assert plain_manifest["counts"] == m1["counts"] == m2["counts"] == m3["counts"] and m2["counts"]["diverged"] > 0
    assert plain_keys == k1 == k2 == k3
    # what a crash would have ended: the shard worker (the ledger run's default), each engine's own process
    assert {n["isolated"] for n in m2["engine_notes"].values()} == {"worker"}
    assert {n["isolated"] for n in m3["engine_notes"].values()} == {True}
    for out in ("again", "isolated"):
        records = [json.loads(line) for line in (tmp_path / out / "divergences.jsonl").read_text().split("\n") if line]
        assert all(r["token_index"] is not None and r["expected"]["ids"] for r in records)  # located from fresh ids


def test_a_tampered_entry_is_ledger_corruption_not_a_verified_sample(tmp_path, tiny_spec, plugin_dir,
                                                                     tiny_tokenizer_json):
    ledger = tmp_path / "ledger"
    _, m1, _, _ = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "first", "--ledger", str(ledger))
    part = sorted(ledger.rglob("part-*.parquet"))[0]
    table = pq.read_table(part)
    digests = table.column("ids_digest").to_pylist()
    digests[0] = bytes(16)  # one entry now records other ids, its checksum fixed up (test_ledger_integrity: without)
    pq.write_table(table.set_column(1, "ids_digest", pa.array(digests, pa.binary(16))), part)
    (part.parent / (part.name + ".sha256")).write_text(hashlib.sha256(part.read_bytes()).hexdigest() + "\n")
    # the candidates' mismatch alone finds it
    for out, engines in (("again", "in-process"), ("again-isolated", "isolated")):
        proc, m2, _, session = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, out, "--ledger",
                                   str(ledger), "--ledger-audit", "0", engines=engines)
        assert proc.returncode == 1
        assert session["ledger"]["corrupt"] == 1
        records = [json.loads(line) for line in (tmp_path / out / "divergences.jsonl").read_text().split("\n") if line]
        corrupt = [r for r in records if r.get("error", {}).get("type") == "LedgerCorrupt"]
        assert len(corrupt) == 1 and corrupt[0]["kind"] == "error" and "digest" in corrupt[0]["error"]["message"]
        assert m2["counts"]["verified"] == m1["counts"]["verified"] - 1 or \
            m2["counts"]["diverged"] == m1["counts"]["diverged"] - 1
        assert m2["counts"]["error"] == 1 and m2["counts"]["samples"] == m1["counts"]["samples"]
    check = run_cli("ledger", "check", str(ledger), "--corpus", "default", "--limit", "300", "--in-process")
    assert check.returncode == 1 and "MISMATCH" in check.stdout


def test_another_reference_identity_starts_another_ledger_and_stats_compact(tmp_path, tiny_spec, plugin_dir,
                                                                           tiny_tokenizer_json):
    ledger = tmp_path / "ledger"
    run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "a", "--ledger", str(ledger), limit="150")
    # the same reference (a timeout is no identity): the same ledger, new entries for the rest
    _, _, _, b = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "b", "--ledger", str(ledger), "--timeout", "30")
    assert b["ledger"]["hits"] == 150 and b["ledger"]["encoded"] == 150
    other = tiny_spec + "?encoding=other"  # an output-changing option: another identity
    run(tmp_path, other, plugin_dir, tiny_tokenizer_json, "c", "--ledger", str(ledger))
    folders = sorted(p.parent.name for p in ledger.glob("*/identity.json"))
    assert len(folders) == 2
    stats = run_cli("ledger", "stats", str(ledger))
    assert stats.returncode == 0 and stats.stdout.count("entries in") == 2
    parts_before = len(list(ledger.rglob("part-*.parquet")))
    compact = run_cli("ledger", "compact", str(ledger))
    assert compact.returncode == 0 and len(list(ledger.rglob("part-*.parquet"))) < parts_before
    check = run_cli("ledger", "check", str(ledger), "--corpus", "default", "--limit", "300", "--in-process")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "0 differ" in check.stdout
