"""Triage a finished run: classify, cluster and minimise its findings.

    triage(out_dir, reference, candidates, budget_s=120.0, per_cluster=1) -> TriageSummary

Reads ``OUT/divergences.jsonl``, gives every record a ``signature``, its
``cluster`` key and ``tags`` (adversarial/tags.toml), minimises up to
``per_cluster`` records per cluster (the smallest inputs first) within one
overall time budget, and rewrites the file atomically with a ``minimized``
block on every record (``null`` plus ``minimized_skipped`` saying why when it
was not minimised). Writes ``OUT/clusters.json``.

A minimisation replays the finding on the live executors: an ``ids`` finding
still fails while the reference and the candidate both return ids and they
differ; an ``error``/``crash``/``timeout`` finding while the engine returns a
failure of the same kind and type. Cheap kinds go first (ids, error, crash,
timeout) and each gets an equal share of what budget is left; a timeout finding
is only minimised when its share pays for ``TIMEOUT_PROBES`` probes at the
executor's timeout.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from verify.classify import Cluster, TagRule, cause_key, cluster, load_tags, signature, signature_key
from verify.findings import Failure, describe_divergence
from verify.minimize import MinimiseResult, minimise
from verify.sample import Sample

KIND_ORDER = {"ids": 0, "error": 1, "crash": 2, "timeout": 3}
TIMEOUT_PROBES = 50

SKIP_BUDGET = "budget"
SKIP_PER_CLUSTER = "not first in cluster"
SKIP_NO_EXECUTOR = "no executor for engine"
SKIP_NOT_REPRODUCED = "did not reproduce"
SKIP_TIMEOUT_COST = "budget (timeout probes cost the full timeout each)"


@dataclass
class TriageSummary:
    clusters: list[Cluster] = field(default_factory=list)
    records: int = 0
    minimised: int = 0
    seconds: float = 0.0
    budget_s: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> records
    worker_restarts: dict[str, int] = field(default_factory=dict)  # restarts caused by minimisation

    def cluster_dicts(self) -> list[dict[str, Any]]:
        return [c.as_dict() for c in self.clusters]

    def as_manifest(self) -> dict[str, Any]:
        return {"records": self.records, "clusters": len(self.clusters),
                "causes": len({c.cause for c in self.clusters if c.cause}), "minimised": self.minimised,
                "seconds": round(self.seconds, 3), "budget_s": self.budget_s, "skipped": self.skipped,
                "worker_restarts": self.worker_restarts, "clusters_file": "clusters.json"}


# --- reading inputs and records ----------------------------------------------------

def load_record_input(record: dict[str, Any], out_dir: Path) -> Sample:
    """The sample a record carries, inline (``input``) or in ``input_file`` beside the report."""
    if "input" in record:
        return Sample.from_segments(record["sample_id"], [(t, a) for t, a in record["input"]])
    stored = json.loads((out_dir / record["input_file"]).read_text(encoding="utf-8"))
    return Sample.from_segments(record["sample_id"], [(t, a) for t, a in stored["segments"]])


def read_records(out_dir: Path, limit: int | None = None) -> list[dict[str, Any]]:
    path = out_dir / "divergences.jsonl"
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if limit is not None and len(records) >= limit:
                break
            if line.strip():
                records.append(json.loads(line))
    return records


def _write_atomic(path: Path, write: Callable[[Any], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# --- replaying a finding -------------------------------------------------------------

def _encode_pair(reference, candidate, sample: Sample) -> tuple[object, object]:
    """Both engines on one sample; isolated workers run in parallel."""
    if hasattr(reference, "submit") and hasattr(candidate, "submit"):
        reference.submit([sample])
        candidate.submit([sample])
        return reference.collect()[0], candidate.collect()[0]
    return reference.encode([sample])[0], candidate.encode([sample])[0]


def _differ(ref: object, out: object) -> bool:
    return (isinstance(ref, np.ndarray) and isinstance(out, np.ndarray)
            and not (ref.shape == out.shape and np.array_equal(ref, out)))


def still_fails(kind: str, reference, executor, error_type: str | None = None) -> Callable[[Sample], bool]:
    """The predicate that says a candidate sample still shows the finding.

    ``ids``: reference and ``executor`` both return ids and they differ.
    Otherwise: ``executor`` returns a Failure of ``kind`` (and of ``error_type`` when given)."""
    if kind == "ids":
        def ids_differ(sample: Sample) -> bool:
            return _differ(*_encode_pair(reference, executor, sample))
        return ids_differ

    def fails_alike(sample: Sample) -> bool:
        out = executor.encode([sample])[0]
        return isinstance(out, Failure) and out.kind == kind and (error_type is None or out.type == error_type)
    return fails_alike


def minimized_fields(kind: str, reference, executor, result: MinimiseResult) -> dict[str, Any] | None:
    """The ``minimized`` block: the smaller input and, for ``ids``, where it now diverges.
    ``None`` when a final replay no longer fails (a flaky engine): such an input is no reproducer."""
    sample = result.sample
    block: dict[str, Any] = {"input": [[s.text, s.allow_special] for s in sample.segments],
                             "token_index": None, "byte_offset": None, "char_offset": None,
                             "expected": None, "actual": None}
    if kind == "ids":
        ref, out = _encode_pair(reference, executor, sample)
        if not _differ(ref, out):
            return None
        located = describe_divergence(sample, ref, out, reference.token_bytes(ref), executor.token_bytes(out))
        block.update({k: located[k] for k in ("token_index", "byte_offset", "char_offset", "expected", "actual")})
    else:
        out = executor.encode([sample])[0]
        if not isinstance(out, Failure):
            return None
        block["error"] = {"type": out.type, "message": out.message[:2000]}
    block.update({"chars": result.chars, "initial_chars": result.initial_chars, "calls": result.calls,
                  "seconds": round(result.seconds, 3), "stopped_on_budget": result.stopped_on_budget})
    return block


# --- the triage pass --------------------------------------------------------------

@dataclass
class _Item:
    index: int
    kind: str
    engine: str
    error_type: str | None
    chars: int
    cluster: Cluster


def triage(out_dir: Path, reference, candidates: dict[str, Any], *, budget_s: float = 120.0, per_cluster: int = 1,
           load_input: Callable[[dict[str, Any]], Sample] | None = None, tags: list[TagRule] | None = None,
           tags_path: Path | None = None) -> TriageSummary:
    """``reference`` and ``candidates`` (spec -> executor) must still be open.
    ``load_input(record) -> Sample`` defaults to reading ``input``/``input_file``."""
    started = time.monotonic()
    out_dir = Path(out_dir)
    path = out_dir / "divergences.jsonl"
    load = load_input or (lambda record: load_record_input(record, out_dir))
    rules = tags if tags is not None else load_tags(tags_path)
    summary = TriageSummary(budget_s=budget_s)

    # Pass 1: signature of every record; keep only what clustering needs (inputs may be large).
    light: list[dict[str, Any]] = []
    sizes: list[int] = []
    offsets: list[int] = []  # where each record's line starts, to read it again when minimising
    for offset, record in _iter_records(path):
        text = load(record).text
        sig = signature(record, text)
        light.append({"engine": record["engine"], "reference": record["reference"], "kind": record["kind"],
                      "sample_id": record["sample_id"], "signature": sig, "cluster": signature_key(sig),
                      "error_type": (record.get("error") or {}).get("type")})
        sizes.append(len(text))
        offsets.append(offset)
    summary.records = len(light)
    summary.clusters = cluster(light, rules)

    # Choose what to minimise: the smallest inputs of each cluster, cheap kinds first.
    skipped: dict[int, str] = {}
    items: list[_Item] = []
    executors = dict(candidates)
    executors.setdefault(reference.spec, reference)
    for c in summary.clusters:
        members = sorted(c.members, key=lambda i: (sizes[i], i))
        for rank, i in enumerate(members):
            rec = light[i]
            if rank >= per_cluster:
                skipped[i] = SKIP_PER_CLUSTER
            elif rec["engine"] not in executors or (rec["kind"] == "ids" and rec["engine"] == reference.spec):
                skipped[i] = SKIP_NO_EXECUTOR
            else:
                items.append(_Item(i, rec["kind"], rec["engine"], rec["error_type"], sizes[i], c))
    order = {id(c): n for n, c in enumerate(summary.clusters)}
    items.sort(key=lambda it: (KIND_ORDER.get(it.kind, 9), order[id(it.cluster)], it.chars, it.index))

    restarts_before = {spec: getattr(ex, "restarts", 0) for spec, ex in executors.items()}
    minimized: dict[int, dict[str, Any]] = {}
    for n, item in enumerate(items):
        remaining = budget_s - (time.monotonic() - started)
        share = remaining / (len(items) - n)
        executor = executors[item.engine]
        if remaining <= 0:
            skipped[item.index] = SKIP_BUDGET
            continue
        if item.kind == "timeout" and getattr(executor, "timeout_s", 0) * TIMEOUT_PROBES > share:
            skipped[item.index] = SKIP_TIMEOUT_COST
            continue
        predicate = still_fails(item.kind, reference, executor, item.error_type)
        result = minimise(load(_record_at(path, offsets[item.index])), predicate, budget_s=share)
        if not result.reproduced:
            skipped[item.index] = SKIP_BUDGET if result.stopped_on_budget else SKIP_NOT_REPRODUCED
            continue
        block = minimized_fields(item.kind, reference, executor, result)
        if block is None:
            skipped[item.index] = SKIP_NOT_REPRODUCED
            continue
        minimized[item.index] = block
        if item.cluster.example is None:
            item.cluster.example = block
    summary.minimised = len(minimized)
    for c in summary.clusters:
        if c.example is not None:
            c.cause = cause_key(c.engine, c.kind, c.example["input"])
    summary.worker_restarts = {spec: getattr(ex, "restarts", 0) - restarts_before[spec]
                               for spec, ex in executors.items() if getattr(ex, "restarts", 0) != restarts_before[spec]}
    for reason in skipped.values():
        summary.skipped[reason] = summary.skipped.get(reason, 0) + 1

    # Pass 2: rewrite the records, then clusters.json.
    by_index = {i: c for c in summary.clusters for i in c.members}
    if path.exists():
        def rewrite(out) -> None:
            for i, (_, record) in enumerate(_iter_records(path)):
                record["signature"] = light[i]["signature"]
                record["cluster"] = light[i]["cluster"]
                record["tags"] = by_index[i].tags
                record["cause"] = by_index[i].cause
                record["minimized"] = minimized.get(i)
                if i in skipped:
                    record["minimized_skipped"] = skipped[i]
                else:
                    record.pop("minimized_skipped", None)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        _write_atomic(path, rewrite)
    _write_atomic(out_dir / "clusters.json",
                  lambda fh: fh.write(json.dumps(summary.cluster_dicts(), indent=2, ensure_ascii=False) + "\n"))
    summary.seconds = time.monotonic() - started
    return summary


def _iter_records(path: Path):
    """(byte offset of the line, record) for each record in a JSONL file; nothing if it is missing."""
    if not path.exists():
        return
    with open(path, "rb") as fh:
        while True:
            offset = fh.tell()
            line = fh.readline()
            if not line:
                return
            if line.strip():
                yield offset, json.loads(line)


def _record_at(path: Path, offset: int) -> dict[str, Any]:
    with open(path, "rb") as fh:
        fh.seek(offset)
        return json.loads(fh.readline())
