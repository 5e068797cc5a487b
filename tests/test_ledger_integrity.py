"""The reference ledger never gives a wrong "verified" (issue 18, items 1 and 2).

- Forged entries (the candidate's wrong ids written into the ledger, checksums fixed up by
  a forger with access to the files) are caught by the audit: ``--ledger-audit 1`` re-encodes
  every hit, and each forged one is an ``error``/``LedgerCorrupt`` finding, never verified;
  ``verify ledger check --corpus C --audit 1`` names them.
- Parts altered without their checksum, truncated parts, parts without a checksum file and
  parts that are not Parquet are reported and skipped: their inputs are re-encoded, the run's
  counts are a plain run's, and nothing exits 3.
- The audit is a pure function of the input key and the run's seed (saved in the plan), so
  workers and resumes audit the same hits.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_cli
from test_ledger import run
from verify.keys import ids_digest
from verify.ledger import DEFAULT_AUDIT_RATE, Ledger, PartitionEntries, audited, partition_of

# keys that differ only in trailing zero bytes, and the all-zero key: a byte-string type that padded
# or stripped would mix them up
NEAR_KEYS = [bytes(16), b"a" * 15 + b"\0", b"a" * 15 + b"\1", b"a" * 14 + b"\0\0", b"\0" * 15 + b"\1"]
KEYS = st.binary(min_size=16, max_size=16) | st.sampled_from(NEAR_KEYS)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(KEYS, st.integers(0, 2**32 - 1)), max_size=40), st.lists(KEYS, max_size=10))
def test_a_partitions_entries_answer_as_a_dict_in_which_later_rows_win(rows, others):
    """The batch lookup (sorted keys, one search per batch) answers exactly as the dict it replaced."""
    digests = [i.to_bytes(16, "little") for i in range(len(rows))]
    expected = {key: (digest, length) for (key, length), digest in zip(rows, digests)}  # later rows win
    entries = PartitionEntries(b"".join(k for k, _ in rows), b"".join(digests),
                               np.array([n for _, n in rows], dtype=np.int64))
    asked = [k for k, _ in rows] + others
    assert len(entries) == len(expected)
    for key, found in zip(asked, entries.find(asked)):
        assert entries.get(key) == expected.get(key) and (key in entries) == (key in expected)
        want = expected.get(key)
        assert (found is None) if want is None else (found.digest, found.length) == (want[0].hex(), want[1])


def findings(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines() if line]


def parts(ledger: Path) -> list[Path]:
    return sorted(ledger.rglob("part-*.parquet"))


def rewrite(part: Path, change, checksum: bool) -> int:
    """Rewrite a part's entries through ``change(key, digest, length) -> (digest, length) | None``;
    with ``checksum``, the sidecar is fixed up too (a forger who knows the format)."""
    table = pq.read_table(part)
    rows = list(zip(*(table.column(c).to_pylist() for c in ("input_key", "ids_digest", "length"))))
    changed = 0
    for i, (key, digest, length) in enumerate(rows):
        new = change(key, digest, length)
        if new is not None:
            rows[i] = (key, *new)
            changed += 1
    if changed:
        keys, digests, lengths = zip(*rows)
        pq.write_table(pa.table([pa.array(keys, pa.binary(16)), pa.array(digests, pa.binary(16)),
                                 pa.array(lengths, pa.uint32())], schema=table.schema), part)
        if checksum:
            (part.parent / (part.name + ".sha256")).write_text(
                f"{hashlib.sha256(part.read_bytes()).hexdigest()}  {part.name}\n")
    return changed


def candidate_outputs(records: list[dict], count: int) -> dict[bytes, tuple[bytes, int]]:
    """Input key -> the planted candidate's (wrong) ids digest and length, for ``count`` divergences."""
    import ledger_plugin  # written into the plugin folder by test_ledger.run

    engine = ledger_plugin.planted()
    wrong = {}
    for record in records:
        if record["kind"] != "ids" or len(record.get("input") or []) != 1 or len(wrong) == count:
            continue
        (ids,) = engine.encode_batch([record["input"][0][0]])
        arr = np.asarray(ids, dtype=np.uint32)
        wrong[bytes.fromhex(record["input_key"])] = (bytes.fromhex(ids_digest(arr)), int(arr.size))
    assert len(wrong) == count
    return wrong


def test_forged_entries_are_caught_by_the_audit_never_verified(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json):
    ledger = tmp_path / "ledger"
    _, m1, _, _ = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "first", "--ledger", str(ledger))
    wrong = candidate_outputs(findings(tmp_path / "first"), 5)
    assert sum(rewrite(p, lambda k, d, n: wrong.get(k), checksum=True) for p in parts(ledger)) == 5

    # the checksums hold (the forger fixed them): no conflict, no bad part -- only re-encoding finds it
    check = run_cli("ledger", "check", str(ledger))
    assert check.returncode == 0 and "0 conflicting" in check.stdout and "0 bad parts" in check.stdout

    # isolated engines: the candidate's own process finds its ids equal to the forged entries (it answers
    # 'matched', its ids never come back), and still not one is counted verified
    proc, m2, _, session = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "audited", "--ledger",
                               str(ledger), "--ledger-audit", "1", engines="isolated")
    assert proc.returncode == 1
    assert session["ledger"]["hits"] == 300 and session["ledger"]["audited"] == 300
    assert session["ledger"]["corrupt"] == 5
    corrupt = [r for r in findings(tmp_path / "audited") if r.get("error", {}).get("type") == "LedgerCorrupt"]
    assert sorted(bytes.fromhex(r["input_key"]) for r in corrupt) == sorted(wrong)
    assert all(r["kind"] == "error" for r in corrupt)
    assert m2["counts"]["verified"] == m1["counts"]["verified"]  # not one forged result counted verified
    assert m2["counts"]["diverged"] == m1["counts"]["diverged"] - 5 and m2["counts"]["error"] == 5
    assert m2["attempts"][-1]["ledger"]["corrupt"] == 5  # the manifest carries the attempt's ledger stats

    check = run_cli("ledger", "check", str(ledger), "--corpus", "default", "--limit", "300", "--audit", "1",
                    "--in-process")
    assert check.returncode == 1 and check.stdout.count("MISMATCH") == 5, check.stdout + check.stderr
    assert "re-encoded 300 recorded inputs" in check.stdout


def test_an_entry_altered_without_its_checksum_is_a_bad_part_and_re_encoded(tmp_path, tiny_spec, plugin_dir,
                                                                          tiny_tokenizer_json):
    ledger = tmp_path / "ledger"
    _, m1, k1, _ = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "first", "--ledger", str(ledger))
    wrong = candidate_outputs(findings(tmp_path / "first"), 5)
    touched = [p for p in parts(ledger) if rewrite(p, lambda k, d, n: wrong.get(k), checksum=False)]
    entries = sum(pq.read_metadata(p).num_rows for p in touched)
    check = run_cli("ledger", "check", str(ledger))
    assert check.returncode == 1 and "checksum mismatch" in check.stdout
    assert f"{len(touched)} bad parts" in check.stdout
    proc, m2, k2, session = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "again", "--ledger",
                                str(ledger), "--ledger-audit", "0")
    assert proc.returncode == 1
    assert session["ledger"]["bad_parts"] == len(touched) and session["ledger"]["encoded"] == entries
    assert "corrupt" not in session["ledger"]
    assert m2["counts"] == m1["counts"] and k2 == k1  # the forged results were never used


def test_a_truncated_part_is_reported_skipped_and_re_encoded_never_exit_3(tmp_path, tiny_spec, plugin_dir,
                                                                          tiny_tokenizer_json):
    ledger = tmp_path / "ledger"
    _, m1, k1, _ = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "first", "--ledger", str(ledger))
    part = parts(ledger)[0]
    entries = pq.read_metadata(part).num_rows
    os.truncate(part, 500)  # truncate -s 500 PART.parquet
    proc, m2, k2, session = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "again", "--ledger",
                                str(ledger))
    assert proc.returncode == 1, proc.stderr  # the planted divergences, not a harness bug
    assert session["ledger"]["bad_parts"] == 1 and session["ledger"]["encoded"] == entries
    assert m2["counts"] == m1["counts"] and k2 == k1
    for command in (("check",), ("stats",), ("compact",)):
        done = run_cli("ledger", *command, str(ledger))
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, (command, done.stderr)
    check = run_cli("ledger", "check", str(ledger))
    assert check.returncode == 1 and part.name in check.stdout and "checksum mismatch" in check.stdout
    assert part.exists()  # compact left the bad part where it was, for check to report
    stats = run_cli("ledger", "stats", str(ledger))
    assert "1 BAD PARTS" in stats.stdout


def test_lookup_skips_every_kind_of_bad_part_and_says_why(tmp_path, tiny_spec):
    from verify.engines import build_engine

    engine = build_engine(tiny_spec)
    identity = engine.identity().as_dict()
    engine.close()
    ledger = Ledger.open(str(tmp_path / "L"), identity)
    partition = partition_of("some/shard")

    def entry(i: int):
        return (i.to_bytes(16, "little"), (1000 + i).to_bytes(16, "little"), i)

    for start in (0, 10, 20, 30, 40):
        ledger.append(partition, [entry(i) for i in range(start, start + 10)])
    files = sorted((tmp_path / "L").rglob("part-*.parquet"))
    assert all((f.parent / (f.name + ".sha256")).is_file() for f in files)
    bad: list = []
    assert len(ledger.lookup(partition, bad)) == 50 and bad == []
    os.truncate(files[0], 500)                                        # truncated
    (files[1].parent / (files[1].name + ".sha256")).unlink()          # no checksum (an older harness)
    files[2].write_bytes(b"not parquet at all")                       # unreadable, checksum fixed up:
    (files[2].parent / (files[2].name + ".sha256")).write_text(
        hashlib.sha256(b"not parquet at all").hexdigest() + "  x\n")
    pq.write_table(pa.table({"input_key": ["a"]}), files[3])           # Parquet, but not a ledger part
    (files[3].parent / (files[3].name + ".sha256")).write_text(hashlib.sha256(files[3].read_bytes()).hexdigest())
    bad = []
    found = ledger.lookup(partition, bad)
    assert len(found) == 10 and len(bad) == 4  # only the intact part's entries
    reasons = " | ".join(str(b) for b in bad)
    for why in ("checksum mismatch", "no checksum", "not a readable Parquet", "not a ledger part"):
        assert why in reasons, reasons
    assert all(b.path.startswith(partition + "/part-") for b in bad)
    stats = ledger.stats()
    assert stats.parts == 5 and stats.bad_parts == 4 and stats.entries == 10
    listed = ledger._parts(partition)  # a part compacted away between listing and reading: skipped, not bad
    ledger._parts = lambda *_: listed + [listed[-1].replace("part-", "part-0gone")]
    bad = []
    assert len(ledger.lookup(partition, bad)) == 10 and len(bad) == 4


def test_the_audit_is_deterministic_per_run_seed_and_agrees_across_workers(tmp_path, tiny_spec, plugin_dir,
                                                                          tiny_tokenizer_json):
    ledger = tmp_path / "ledger"
    run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "first", "--ledger", str(ledger))
    keys = [k for p in parts(ledger) for k in pq.read_table(p).column("input_key").to_pylist()]
    _, m2, _, session = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "half", "--ledger", str(ledger),
                            "--ledger-audit", "0.5", "--workers", "2")
    options = json.loads((tmp_path / "half" / "plan.json").read_text())["options"]
    assert options["ledger_audit"] == 0.5 and isinstance(options["ledger_audit_seed"], int)
    expected = sum(audited(k, 0.5, options["ledger_audit_seed"]) for k in keys)
    assert 0 < expected < 300 and session["ledger"]["audited"] == expected
    assert "corrupt" not in session["ledger"]

    # a resume audits with the run's saved rate and seed: the same hits as before, another rate is refused
    from verify.corpora.shards import Shard

    plan = json.loads((tmp_path / "half" / "plan.json").read_text())
    markers = sorted((tmp_path / "half" / "shards").glob("[0-9]*[0-9].json"))
    for marker in markers[3:]:
        marker.unlink()
    again = {partition_of(Shard.from_json(s).id) for s in plan["shards"][3:]}
    redo = [k for p in parts(ledger) if p.parent.name in again for k in pq.read_table(p).column("input_key").to_pylist()]
    common = ("--resume", "--out", str(tmp_path / "half"), "--ledger", str(ledger), "--no-progress", "--in-process",
              "--minimize-budget", "0")
    other = run_cli("run", *common, "--ledger-audit", "0.3")
    assert other.returncode == 2 and "ledger_audit" in other.stderr
    resumed = run_cli("run", *common)
    assert resumed.returncode == 1, resumed.stderr
    last = [json.loads(line) for line in (tmp_path / "half" / "attempts.jsonl").read_text().splitlines()][-1]
    assert last["ledger"]["audited"] == sum(audited(k, 0.5, options["ledger_audit_seed"]) for k in redo) > 0
    assert json.loads((tmp_path / "half" / "manifest.json").read_text())["counts"] == m2["counts"]

    _, _, _, default = run(tmp_path, tiny_spec, plugin_dir, tiny_tokenizer_json, "default", "--ledger", str(ledger))
    seed = json.loads((tmp_path / "default" / "plan.json").read_text())["options"]["ledger_audit_seed"]
    assert default["ledger"].get("audited", 0) == sum(audited(k, DEFAULT_AUDIT_RATE, seed) for k in keys)
    assert audited(keys[0], 1, seed) and not audited(keys[0], 0, seed)
    bad = run_cli("run", "--reference", tiny_spec, "--candidate", tiny_spec + "?encoding=x", "--ledger-audit", "2",
                  "--out", str(tmp_path / "bad"), "--no-progress", "--in-process")
    assert bad.returncode == 2 and "--ledger-audit" in bad.stderr and "Traceback" not in bad.stderr
    no_corpus = run_cli("ledger", "check", str(ledger), "--audit", "0.5")
    assert no_corpus.returncode == 2 and "--corpus" in no_corpus.stderr
