"""Memory flat in the number of findings: triage, clustering and the reports stream the
committed findings. Pinned without timing: triage's per-cluster state is bounded, its
outputs are byte for byte what the all-in-memory version wrote, triage.jsonl is joined
to the findings in order (never by a dict of every line), and the traced memory of
triage + every report does not grow from a few hundred findings to a few thousand."""

from __future__ import annotations

import hashlib
import json
import random
import re
import tracemalloc

import pytest

from verify.batches import encode_all
from verify.classify import MAX_SAMPLE_IDS, Clusters, cluster
from verify.comparison import Side, compare_batch
from verify.executors import EngineOptions, EnginePool, LocalExecutor
from verify.findings import FindingWriter, bad_input_record, read_findings
from verify.sample import Sample
from verify.triage import SKIP_PER_CLUSTER, _sign_and_cluster, joined_triage, run_triage, triaged_records

from planted import FastBytes, ZeroesPattern

PATTERN = "Zq\u00e9"


class Combined(ZeroesPattern):
    """Zeroes the pattern (ids findings) and raises on 'boom' (error findings)."""

    def __init__(self):
        super().__init__(PATTERN)
        self.spec = "planted:combined"

    def encode_texts(self, texts, allow_special):
        if any("boom" in t for t in texts):
            raise ValueError("planted failure on 'boom'")
        return super().encode_texts(texts, allow_special)


def filler(n, seed):
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefgh ijklnop") for _ in range(n))


def small_run_samples():
    """Two big clusters of varied sizes, an input_file finding, errors; one sample that passes."""
    out = [Sample.plain(f"sp{i}", f"{filler(5 + 7 * (i % 5), i)} {PATTERN} {filler(3 * i, i + 50)}") for i in range(12)]
    out += [Sample.plain(f"let{i}", f"{filler(4 + i, i + 100)}x{PATTERN}") for i in range(5)]
    out.append(Sample.plain("big", f"{filler(110_000, 7)} {PATTERN}{filler(40, 8)}"))
    out.append(Sample.plain("ok", "nothing to see"))
    return out + [Sample.plain("err", "a long line with a boom in it"), Sample.plain("err2", "boom!")]


def commit_findings(out, reference, candidate, samples, first_batch=10):
    """What an earlier stage commits: the findings of the comparison in divergences.jsonl,
    with a bad-input record after the first batch."""
    writer = FindingWriter(out)
    for n, batch in enumerate((samples[:first_batch], samples[first_batch:])):
        _, findings = compare_batch(batch, encode_all([reference, candidate], batch),
                                    [Side(ex.spec, ex.token_bytes) for ex in (reference, candidate)], "test")
        for finding in findings:
            writer.write(finding)
        if n == 0:
            writer.write_record(bad_input_record("test", "line 7", "not JSON (line 7)", b"{oops"))
    writer.close()


def triage_small_run(out, per_cluster, budget_s):
    reference, candidate = LocalExecutor(FastBytes()), LocalExecutor(Combined())
    commit_findings(out, reference, candidate, small_run_samples())
    pool = EnginePool(EngineOptions(isolate=False))
    pool.executors.update({ex.spec: ex for ex in (reference, candidate)})
    return run_triage(out, pool=pool, budget_s=budget_s, per_cluster=per_cluster, tags=[])


def digest(path):
    """sha256 of a file's text, less where an error was raised (``(at FILE:LINE)``: this file's lines move).
    A JSON Lines file is digested as its objects, in order, each as the standard library writes it:
    what a line holds is pinned, not the serializer's spacing (orjson writes them compact)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        text = "".join(_standard_line(json.loads(line)) for line in text.split("\n") if line)
    text = re.sub(r" \(at [^)]*\)", "", text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _standard_line(obj) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    for ch, escape in {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}.items():
        text = text.replace(ch, escape)
    return text + "\n"


# digests of triage.jsonl and clusters.json for this run (first pinned from the all-in-memory triage,
# re-pinned when clusters became causes); a deliberate change of triage's output updates these digests.
BEFORE_STREAMING = {
    (2, 60.0): ("a7898869ac4cc5025a111eda6a1fc367893ea3860de7e62a84dbaeffefb54e23",
                "ca8404233fce5d5594f85d8f55e42ae1c030640de95a13d2cae34fdac5c9fb61"),
    (1, 60.0): ("8b40a757ff7dad5b7bb5aeea2a0016b43c9d5dc66d104127692d551d4fd078ed",
                "ca8404233fce5d5594f85d8f55e42ae1c030640de95a13d2cae34fdac5c9fb61"),
    (1, 0.0): ("d609641136bf31730290c4feb6afc44ccd868caeeea9a3757f6a93888eff18d4",
               "7624401ff7c37ead0feea744ea5a10d29d50978d779b3b90f7638eb7911a5423"),
}


@pytest.mark.parametrize("per_cluster, budget_s", sorted(BEFORE_STREAMING))
def test_streamed_triage_writes_what_the_in_memory_triage_wrote(tmp_path, per_cluster, budget_s):
    summary = triage_small_run(tmp_path, per_cluster, budget_s)
    assert (digest(tmp_path / "triage.jsonl"), digest(tmp_path / "clusters.json")) == \
        BEFORE_STREAMING[(per_cluster, budget_s)]
    # five symptoms; minimised, they are three causes (the pattern, the error, the bad record); unminimised, five
    assert summary.records == 21 and summary.symptoms == 5 and len(summary.clusters) == (3 if budget_s else 5)
    expected_skips = {(2, 60.0): {"not first in cluster": 13, "no input (bad record)": 1},
                      (1, 60.0): {"not first in cluster": 16, "no input (bad record)": 1},
                      (1, 0.0): {"not first in cluster": 16, "no input (bad record)": 1, "budget": 4}}
    assert summary.skipped == expected_skips[(per_cluster, budget_s)]
    assert sum(summary.skipped.values()) + summary.minimized == summary.records  # every finding said once
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # the spill file is gone


def one_cluster_findings(out, n):
    """``n`` findings of one cluster (a space before the pattern), inputs of varied sizes, written as records."""
    reference, candidate = LocalExecutor(FastBytes()), LocalExecutor(ZeroesPattern(PATTERN))
    samples = [Sample.plain(f"s{i:05d}", f"{filler(3 + (i * 7919) % 40, i)} {PATTERN}") for i in range(n)]
    writer = FindingWriter(out)
    for start in range(0, n, 500):
        batch = samples[start:start + 500]
        _, findings = compare_batch(batch, encode_all([reference, candidate], batch),
                                    [Side(ex.spec, ex.token_bytes) for ex in (reference, candidate)], "test")
        for finding in findings:
            writer.write(finding)
    writer.close()
    return samples, pool_of(reference, candidate)


def pool_of(*executors):
    pool = EnginePool(EngineOptions(isolate=False))
    pool.executors.update({ex.spec: ex for ex in executors})
    return pool


def test_a_cluster_of_thousands_keeps_a_count_the_first_ids_and_only_its_smallest_members(tmp_path):
    samples, pool = one_cluster_findings(tmp_path, 3000)
    with open(tmp_path / "spill", "w", encoding="utf-8") as spill:
        first = _sign_and_cluster(tmp_path, [], 3, spill)
    (only,) = first.clusters.ordered()
    assert only.count == 3000 and len(only.sample_ids) == MAX_SAMPLE_IDS and only.members == []
    (group,) = first.ordered  # one first differing token: one group
    assert group.count == 3000 and len(group.sample_ids) == MAX_SAMPLE_IDS
    kept = first.smallest[id(group)]
    by_size = sorted((len(s.text), i) for i, s in enumerate(samples))
    assert [(chars, index) for chars, index, _ in kept] == by_size[:3]  # the 3 smallest, ties by position

    summary = run_triage(tmp_path, pool=pool, budget_s=60, per_cluster=3, tags=[])
    assert summary.minimized == 3 and summary.skipped == {SKIP_PER_CLUSTER: 2997}
    minimized = [t["finding_key"] for t in read_findings(tmp_path / "triage.jsonl") if t["minimized"]]
    keys = [r["finding_key"] for r in read_findings(tmp_path / "divergences.jsonl")]
    assert minimized == [keys[index] for index in sorted(index for _, index in by_size[:3])]
    (listed,) = json.loads((tmp_path / "clusters.json").read_text())["clusters"]
    assert listed["count"] == 3000 and listed["sample_ids"] == [f"s{i:05d}" for i in range(MAX_SAMPLE_IDS)]


def test_streamed_clusters_equal_the_clusters_with_members():
    records = [{"engine": "e", "reference": "r", "sample_id": f"s{i}", "cluster": f"ids/k{i % 3}"} for i in range(50)]
    streamed = Clusters([])
    for record in records:
        streamed.add(record)
    listed = cluster(records)
    assert [(c.key, c.count, c.sample_ids) for c in streamed.ordered()] == \
        [(c.key, c.count, c.sample_ids) for c in listed]
    assert listed[0].members == list(range(0, 50, 3)) and streamed.ordered()[0].members == []


def test_triage_lines_join_their_findings_in_order_and_a_finding_committed_after_triage_has_none(tmp_path):
    _, pool = one_cluster_findings(tmp_path, 40)
    run_triage(tmp_path, pool=pool, budget_s=0, tags=[])
    findings = tmp_path / "divergences.jsonl"
    records = list(read_findings(findings))
    # findings committed after triage ran (a triaged run resumed): at the start, in the middle, at the end
    late = [{**records[0], "finding_key": f"late{i}", "sample_id": f"late{i}"} for i in range(3)]
    rewritten = [late[0], *records[:20], late[1], *records[20:], late[2]]
    findings.write_text("".join(json.dumps(r) + "\n" for r in rewritten))
    joined = list(joined_triage(tmp_path))
    assert len(joined) == 43
    for record, line in joined:
        if record["finding_key"].startswith("late"):
            assert line is None
        else:
            assert line is not None and line["finding_key"] == record["finding_key"]
    first = triaged_records(tmp_path, limit=2)
    assert [r["sample_id"] for r in first] == ["late0", "s00000"] and "cluster" not in first[0] \
        and first[1]["symptom"] == "ids/Zs+Lu/Common+Latin/space|letter" \
        and first[1]["cluster"].startswith("ids/unminimised/")  # budget 0: no cause, a key of its own


PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    """The tiny reference tokenizer with its last id changed: every sample diverges."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def encode_batch(self, texts):
        out = []
        for enc in self.tok.encode_batch(list(texts), add_special_tokens=False):
            ids = list(enc.ids)
            if ids:
                ids[-1] = (ids[-1] + 1) % 400
            out.append(ids)
        return out

def planted():
    return Engine()
'''

WORDS = "the of and to in a is that for it as was with café naïve 東京 данные 2024 {} [x]".split()


def diverging_run(tmp_path, plugin_dir, tiny_tokenizer_json, tiny_spec, n, files=8):
    """``verify run`` over ``n`` short samples in ``files`` files (shards), every one a finding."""
    from verify.cli import main

    (plugin_dir / "memory_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    corpus = tmp_path / f"corpus-{n}"
    corpus.mkdir()
    rng = random.Random(n)
    for f in range(files):
        lines = [json.dumps({"id": f"d{f}-{i}", "text": " ".join(rng.choices(WORDS, k=rng.randint(3, 8)))},
                            ensure_ascii=False) for i in range(n // files)]
        (corpus / f"part-{f:02d}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / f"out-{n}"
    code = main(["run", "--reference", tiny_spec, "--candidate", "python:memory_plugin:planted",
                 "--corpus", str(corpus),
                 "--out", str(out), "--workers", "1", "--in-process", "--no-progress", "--minimize-budget", "0"])
    assert code == 1
    assert json.loads((out / "manifest.json").read_text())["counts"]["findings"] == n
    return out


def traced_peak(function) -> int:
    """The peak of Python's traced memory while ``function`` runs (allocation-exact, no timing)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        function()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_triage_and_every_report_take_the_same_memory_for_ten_times_the_findings(
        tmp_path, plugin_dir, tiny_tokenizer_json, tiny_spec):
    from verify.reports.render import render_reports

    peaks = {}
    for n in (400, 4000):
        out = diverging_run(tmp_path, plugin_dir, tiny_tokenizer_json, tiny_spec, n)
        peaks[n] = traced_peak(lambda out=out: (run_triage(out, budget_s=0, tags=[]), render_reports(out)))
        assert sum(1 for _ in read_findings(out / "triage.jsonl")) == n
        assert "## Clusters" in (out / "summary.md").read_text()
    # holding anything per finding (a dict of triage lines, a list of members) adds >= 100 bytes
    # x 3,600 findings; streamed, what grows is a cluster's bounded sample ids and the files' buffers
    assert peaks[4000] <= peaks[400] * 1.3, peaks
