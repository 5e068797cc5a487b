"""Triage as its own stage: every committed finding signed into a symptom cluster, one per
symptom cluster minimised, symptom clusters joined by the cause their reproducers show, results
written beside the findings (never into them); the same through `verify run` and
`verify triage OUT` end to end."""

import json
import random

import pytest

from conftest import run_cli
from record_types import run_folder_conforms
from verify.classify import LONG_INPUT, load_tags
from verify.comparison import Side, compare_batch
from verify.engines.fake import FakeEngine
from verify.executors import EngineOptions, EnginePool, LocalExecutor
from verify.findings import FindingWriter, read_findings
from verify.batches import encode_all
from verify.sample import Sample
from verify.triage import read_clusters, run_triage, triaged_records

from planted import FastBytes, ZeroesPattern

PATTERN = "Zq\u00e9"


def filler(n, seed=1):
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefgh ijklnop") for _ in range(n))


SAMPLES = [
    Sample.plain("a", f"hello {PATTERN} world"),             # space before the pattern
    Sample.plain("b", f"{filler(300)} {PATTERN} {filler(50)}"),  # same signature, larger
    Sample.plain("c", f"abc{PATTERN}"),                       # letter before: another cluster
    Sample.plain("big", f"{filler(LONG_INPUT + 5000)} {PATTERN}{filler(40)}"),  # input_file, long-input
    Sample.plain("ok", "nothing to see"),
]


class Combined(ZeroesPattern):
    """Zeroes the pattern (ids findings) and raises on 'boom' (error findings)."""

    def __init__(self):
        super().__init__(PATTERN)
        self.spec = "planted:combined"

    def encode_texts(self, texts, allow_special):
        if any("boom" in t for t in texts):
            raise ValueError("planted failure on 'boom'")
        return super().encode_texts(texts, allow_special)


def commit(out, reference, candidate, samples):
    """What an earlier stage commits: the findings of the comparison, in divergences.jsonl."""
    executors = [reference, candidate]
    samples = list(samples)
    _, findings = compare_batch(samples, encode_all(executors, samples),
                                [Side(ex.spec, ex.token_bytes) for ex in executors], "test")
    writer = FindingWriter(out)
    for finding in findings:
        writer.write(finding)
    writer.close()


def run_to(out, samples, candidate=None):
    """Commit the findings; return a pool triage can replay them on."""
    reference, cand = LocalExecutor(FastBytes()), LocalExecutor(candidate or Combined())
    commit(out, reference, cand, samples)
    return pool_of(reference, cand)


def pool_of(*executors):
    pool = EnginePool(EngineOptions(isolate=False))
    pool.executors.update({ex.spec: ex for ex in executors})
    return pool


def by_id(out):
    return {r["sample_id"]: r for r in triaged_records(out)}


def test_records_are_signed_clustered_and_one_per_cluster_minimised(tmp_path):
    samples = SAMPLES + [Sample.plain("err", "a long line with a boom in it"), Sample.plain("err2", "boom!")]
    pool = run_to(tmp_path, samples)
    findings_before = (tmp_path / "divergences.jsonl").read_bytes()
    summary = run_triage(tmp_path, pool=pool, tags=[])
    assert (tmp_path / "divergences.jsonl").read_bytes() == findings_before  # never written into
    records = by_id(tmp_path)
    assert set(records) == {"a", "b", "c", "big", "err", "err2"}
    # four symptoms (space before, letter before, long input, an error), two causes: one per bug
    assert summary.records == 6 and summary.symptoms == 4 and summary.minimized == 4
    assert len(summary.clusters) == 2

    a, b = records["a"], records["b"]
    assert a["symptom"] == b["symptom"] == "ids/Zs+Lu/Common+Latin/space|letter"
    assert a["cluster"] == b["cluster"] == records["c"]["cluster"] == records["big"]["cluster"]
    assert a["cluster"].startswith("ids/reproducer/letter*/")  # named by the reproducer, not the surroundings
    assert a["minimized"]["input"] == [[PATTERN, False]]
    m = a["minimized"]
    assert (m["token_index"], m["byte_offset"], m["char_offset"]) == (0, 0, 0)
    assert m["expected"]["ids"][0] == ord("Z") and m["actual"]["ids"][0] == 0
    assert m["calls"] > 0 and not m["stopped_on_budget"]
    assert b["minimized"] is None and b["minimized_skipped"] == "not first in cluster"
    assert records["c"]["symptom"] == "ids/Ll+Lu/Latin+Latin/letter|letter"

    big = records["big"]
    assert "input_file" in big and big["minimized"]["input"] == [[PATTERN, False]]
    assert big["symptom"] == a["symptom"] + "/long-input"
    assert records["err"]["symptom"] == records["err2"]["symptom"] == "error/ValueError"
    assert records["err"]["cluster"] == records["err2"]["cluster"] != a["cluster"]
    assert records["err"]["cluster"].startswith("error/ValueError/")
    err = records["err2"] if records["err2"]["minimized"] else records["err"]
    assert err["minimized"]["input"] == [["boom", False]] and err["minimized"]["error"]["type"] == "ValueError"

    clusters = read_clusters(tmp_path)
    assert [c["count"] for c in clusters] == [c.count for c in summary.clusters]
    first = next(c for c in clusters if c["key"] == a["cluster"])
    assert first["sample_ids"] == ["a", "b", "c", "big"]
    assert first["example"] == [[PATTERN, False]]
    assert [m["symptom"] for m in first["members"]] == [a["symptom"], records["c"]["symptom"], big["symptom"]]
    assert all(m["example"] == [[PATTERN, False]] for m in first["members"])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp files left


def test_per_cluster_and_tags(tmp_path):
    pool = run_to(tmp_path, SAMPLES[:2])
    tags_file = tmp_path / "tags.toml"
    tags_file.write_text('[[tag]]\nengine = "combined"\nsignature = "space\\\\|letter"\ntag = "pattern bug"\n')
    summary = run_triage(tmp_path, pool=pool, per_cluster=2, tags=load_tags(tags_file))
    records = by_id(tmp_path)
    assert all(r["minimized"]["input"] == [[PATTERN, False]] for r in records.values())
    assert all(r["tags"] == ["pattern bug"] for r in records.values())
    assert summary.clusters[0].tags == ["pattern bug"]


def test_an_exhausted_budget_leaves_records_unminimised_and_says_why(tmp_path):
    pool = run_to(tmp_path, SAMPLES[:3])
    summary = run_triage(tmp_path, pool=pool, budget_s=1e-9, tags=[])
    records = by_id(tmp_path)
    assert summary.minimized == 0
    assert records["a"]["minimized"] is None and records["a"]["minimized_skipped"] == "budget"
    assert records["c"]["minimized_skipped"] == "budget"


def test_a_finding_that_no_longer_reproduces_is_not_minimised(tmp_path):
    reference, cand = LocalExecutor(FastBytes()), LocalExecutor(Combined())
    commit(tmp_path, reference, cand, SAMPLES[:1])
    fixed = LocalExecutor(FakeEngine(spec=cand.spec))  # "the same engine", now correct
    run_triage(tmp_path, pool=pool_of(reference, fixed), tags=[])
    assert by_id(tmp_path)["a"]["minimized_skipped"] == "did not reproduce"


def test_no_findings_gives_an_empty_clusters_file(tmp_path):
    pool = run_to(tmp_path, [Sample.plain("ok", "fine")])
    summary = run_triage(tmp_path, pool=pool, tags=[])
    assert summary.records == 0 and read_clusters(tmp_path) == []
    assert (tmp_path / "divergences.jsonl").read_text() == ""


def test_a_megabyte_document_is_minimised_within_the_budget(tmp_path):
    text = filler(1 << 20, seed=5)
    text = text[:700_000] + PATTERN + text[700_000:]
    pool = run_to(tmp_path, [Sample.plain("mb", text)])
    summary = run_triage(tmp_path, pool=pool, budget_s=30, tags=[])
    (record,) = triaged_records(tmp_path)
    assert record["minimized"]["input"] == [[PATTERN, False]] and "long-input" in record["symptom"]
    assert summary.seconds < 5


PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    def __init__(self, plant):
        self.tok = Tokenizer.from_file(PATH)
        self.plant = plant
    def encode_batch(self, texts):
        out = []
        for text in texts:
            if self.plant and "boom" in text:
                raise RuntimeError("planted error")
            enc = self.tok.encode(text, add_special_tokens=False)
            ids = list(enc.ids)
            at = text.find("planted") if self.plant else -1
            if at >= 0:
                hit = next((i for i, (start, _) in enumerate(enc.offsets) if start >= at), None)
                if hit is not None:
                    ids[hit] = 0
            out.append(ids)
        return out

def good():
    return Engine(False)

def planted():
    return Engine(True)
'''


@pytest.fixture
def e2e(plugin_dir, tiny_tokenizer_json, write_jsonl):
    (plugin_dir / "triage_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    big = filler(150_000, seed=9)
    corpus = write_jsonl([{"id": i, "text": t} for i, t in [
        ("d0", "hello world"), ("d1", "this line is planted here"), ("d2", "another planted one here"),
        ("d3", big[:90_000] + " planted " + big[90_000:]), ("d4", "a boom here"), ("d5", "fine text")]])
    return "python:triage_plugin:planted", corpus


def test_verify_run_minimises_and_writes_clusters(tmp_path, tiny_spec, e2e):
    candidate, corpus = e2e
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", candidate, "--corpus", str(corpus),
                   "--out", str(out), "--no-progress")
    assert proc.returncode == 1, proc.stderr
    assert not any("minimized" in r for r in read_findings(out / "divergences.jsonl"))  # beside, not into
    records = by_id(out)
    assert set(records) == {"d1", "d2", "d3", "d4"}
    assert all("signature" in r and "cluster" in r and "tags" in r and "minimized" in r for r in records.values())
    assert records["d1"]["cluster"] == records["d2"]["cluster"]
    # the smaller input of the cluster is the one minimised
    assert records["d2"]["minimized"]["input"] == [["planted", False]]
    assert records["d1"]["minimized"] is None and records["d1"]["minimized_skipped"] == "not first in cluster"
    assert "long-input" in records["d3"]["symptom"] and records["d3"]["minimized"]["input"] == [["planted", False]]
    assert records["d3"]["cluster"] == records["d1"]["cluster"]  # one bug: one cluster, whatever surrounds it
    assert records["d4"]["minimized"]["input"] == [["boom", False]]
    clusters = read_clusters(out)
    assert sorted(c["count"] for c in clusters) == [1, 3]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["triage"]["clusters"] == 2 and manifest["triage"]["minimised"] == 3
    summary = (out / "summary.md").read_text()
    assert "## Clusters" in summary and "`'planted'`" in summary and "`'boom'`" in summary
    run_folder_conforms(out)  # findings, triage lines, clusters and manifest, as typed


def test_verify_run_minimize_budget_zero_disables_triage(tmp_path, tiny_spec, e2e):
    candidate, corpus = e2e
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", candidate, "--corpus", str(corpus),
                   "--out", str(out), "--no-progress", "--minimize-budget", "0")
    assert proc.returncode == 1, proc.stderr
    assert not (out / "clusters.json").exists() and not (out / "triage.jsonl").exists()
    assert all("minimized" not in r for r in triaged_records(out))
    assert "triage" not in json.loads((out / "manifest.json").read_text())


def test_clusters_with_the_same_minimised_reproducer_share_a_cause(tmp_path):
    from planted import ZeroesNonAscii

    # the same bug (non-ASCII bytes zeroed) met after a letter and after a digit: symptoms apart, one cluster
    samples = [Sample.plain("a", "word é"), Sample.plain("b", "12345é"), Sample.plain("c", "x.é")]
    ref, cand = LocalExecutor(FakeEngine()), LocalExecutor(ZeroesNonAscii())
    commit(tmp_path, ref, cand, samples)
    summary = run_triage(tmp_path, pool=pool_of(ref, cand), budget_s=30, tags=[])
    assert summary.symptoms >= 2
    (only,) = summary.clusters
    assert only.cause.kind == "reproducer" and only.key == only.cause.key  # its key is its cause
    assert len(only.members) == summary.symptoms and only.example["input"] == [["é", False]]
    assert summary.as_info()["causes"] == 1
