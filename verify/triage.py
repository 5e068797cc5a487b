"""Triage, a stage of its own: classify, cluster and minimise committed findings.

    run_triage(out, engine=EngineOptions(), budget_s=120.0, per_cluster=1) -> TriageSummary
    verify triage OUT

Reads the committed findings of OUT (a run's committed shards in plan order, or
``divergences.jsonl`` of other commands), gives every finding a ``signature``,
its ``cluster`` key and ``tags`` (adversarial/tags.toml), and minimises up to
``per_cluster`` findings of every cluster (the smallest inputs first) within one
time budget shared evenly among clusters, on engines it starts itself. It writes,
beside -- never into -- the findings:

  triage.jsonl    one line per finding, keyed by ``finding_key``: signature, cluster,
                  tags, cause, and ``minimized`` (or null plus ``minimized_skipped``)
  clusters.json   schema ``verify.clusters/1``: the clusters with their minimised example
  triage.json     how the stage ran: when, budget, seconds, what was skipped and why

Running it twice on the same OUT gives the same triage.jsonl and clusters.json
(minimisation is deterministic; only a minimisation cut by the budget can differ,
and its block says ``stopped_on_budget``).

A replay uses ``verify.outcome``: an ``ids`` finding still fails while the reference
and the candidate both return ids and they differ; an ``error``/``crash``/``timeout``
finding while the engine returns a failure of the same kind and type. Cheap kinds go
first (ids, error, crash, timeout); a timeout finding is only minimised when its share
of the budget pays for ``TIMEOUT_PROBES`` probes at the engines' timeout.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from verify import jsonl
from verify.classify import Cluster, TagRule, cause_key, cluster, load_tags, signature, signature_key
from verify.executors.pool import EngineOptions, EnginePool
from verify.findings import describe_divergence, read_findings
from verify.minimize import MinimiseResult, minimise
from verify.outcome import Failure, differ
from verify.sample import Sample
from verify.session_minimize import minimized_session_fields
from verify import atomic

CLUSTERS_SCHEMA = "verify.clusters/1"
TRIAGE_SCHEMA = "verify.triage/1"
KIND_ORDER = {"ids": 0, "error": 1, "crash": 2, "timeout": 3}
TIMEOUT_PROBES = 50

SKIP_BUDGET = "budget"
SKIP_PER_CLUSTER = "not first in cluster"
SKIP_NO_ENGINE = "no engine to replay it on"
SKIP_UNAVAILABLE = "engine unavailable here"
SKIP_NOT_REPRODUCED = "did not reproduce"
SKIP_TIMEOUT_COST = "budget (timeout probes cost the full timeout each)"
SKIP_NO_INPUT = "no input (bad record)"


@dataclass
class TriageSummary:
    clusters: list[Cluster] = field(default_factory=list)
    records: int = 0
    minimised: int = 0
    seconds: float = 0.0
    budget_s: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> findings
    worker_restarts: dict[str, int] = field(default_factory=dict)  # restarts caused by minimisation

    def cluster_dicts(self) -> list[dict[str, Any]]:
        return [c.as_dict() for c in self.clusters]

    def as_info(self) -> dict[str, Any]:
        return {"schema": TRIAGE_SCHEMA, "records": self.records, "clusters": len(self.clusters),
                "causes": len({c.cause for c in self.clusters if c.cause}), "minimised": self.minimised,
                "seconds": round(self.seconds, 3), "budget_s": self.budget_s, "skipped": self.skipped,
                "worker_restarts": self.worker_restarts, "clusters_file": "clusters.json",
                "triage_file": "triage.jsonl"}


# --- reading committed findings and inputs --------------------------------------------

def committed_records(out: Path) -> Iterator[dict[str, Any]]:
    """The committed findings of OUT: a run's committed shards in plan order (so an
    interrupted or resumed run can be triaged), else ``divergences.jsonl``."""
    from verify.rundir.plan import PLAN_FILE, load_plan
    from verify.rundir.store import ShardStore

    out = Path(out)
    if (out / PLAN_FILE).is_file():
        plan = load_plan(out)
        store = ShardStore(out)
        yield from store.records(store.committed([s.id for s in plan.shards]))
    else:
        yield from read_findings(out / "divergences.jsonl")


def load_record_input(record: dict[str, Any], out_dir: Path) -> Sample | None:
    """The sample a record carries, inline (``input``) or in ``input_file``; None for a bad record."""
    if record.get("input") is not None:
        return Sample.from_segments(record["sample_id"], [(t, a) for t, a in record["input"]])
    if record.get("input_file"):
        stored = json.loads((Path(out_dir) / record["input_file"]).read_text(encoding="utf-8"))
        return Sample.from_segments(record["sample_id"], [(t, a) for t, a in stored["segments"]])
    return None


def read_triage(out: Path) -> dict[str, dict[str, Any]]:
    """finding_key -> its triage line."""
    return {t["finding_key"]: t for t in read_findings(Path(out) / "triage.jsonl")}


def read_clusters(out: Path) -> list[dict[str, Any]]:
    path = Path(out) / "clusters.json"
    if not path.is_file():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get("clusters", [])


def read_triage_info(out: Path) -> dict[str, Any] | None:
    path = Path(out) / "triage.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def triaged_records(out: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Committed findings with their triage fields joined in (for reports)."""
    triaged = read_triage(out)
    records = []
    for record in committed_records(out):
        if limit is not None and len(records) >= limit:
            break
        extra = triaged.get(record.get("finding_key"), {})
        records.append({**record, **{k: v for k, v in extra.items() if k != "finding_key"}})
    return records


# --- replaying a finding -------------------------------------------------------------

def _encode_pair(reference, candidate, sample: Sample) -> tuple[object, object]:
    """Both engines on one sample; isolated workers run in parallel."""
    reference.submit([sample])
    candidate.submit([sample])
    return reference.collect()[0], candidate.collect()[0]


def still_fails(kind: str, reference, executor, error_type: str | None = None) -> Callable[[Sample], bool]:
    """The predicate that says a candidate sample still shows the finding."""
    if kind == "ids":
        def ids_differ(sample: Sample) -> bool:
            return differ(*_encode_pair(reference, executor, sample))
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
        if not differ(ref, out):
            return None
        located = describe_divergence(sample, ref, out, reference.token_bytes(ref), executor.token_bytes(out))
        block.update({k: located[k] for k in ("token_index", "byte_offset", "char_offset", "expected", "actual")})
    else:
        out = executor.encode([sample])[0]
        if not isinstance(out, Failure):
            return None
        block["error"] = out.as_dict()
    block.update({"chars": result.chars, "initial_chars": result.initial_chars, "calls": result.calls,
                  "stopped_on_budget": result.stopped_on_budget})
    return block


# --- the stage ------------------------------------------------------------------------

@dataclass
class _Item:
    index: int
    kind: str
    engine: str
    reference: str
    error_type: str | None
    chars: int
    cluster: Cluster


def run_triage(out: Path, *, engine: EngineOptions | None = None, budget_s: float = 120.0, per_cluster: int = 1,
               tags: list[TagRule] | None = None, pool: EnginePool | None = None) -> TriageSummary:
    """Triage the committed findings of ``out``. Engines are started from ``pool`` (or a
    pool of its own with ``engine`` options), only for clusters that get minimised."""
    started = time.monotonic()
    out = Path(out)
    rules = tags if tags is not None else load_tags()
    summary = TriageSummary(budget_s=budget_s)
    own_pool = pool is None
    pool = pool or EnginePool(engine or EngineOptions())
    try:
        light, minimized, skipped = _triage(out, pool, summary, rules, budget_s, per_cluster, started)
    finally:
        if own_pool:
            pool.close()
    by_index = {i: c for c in summary.clusters for i in c.members}
    lines = []
    for i, rec in enumerate(light):
        entry = {"finding_key": rec["finding_key"], "signature": rec["signature"], "cluster": rec["cluster"],
                 "tags": by_index[i].tags, "cause": by_index[i].cause, "minimized": minimized.get(i)}
        if i in skipped:
            entry["minimized_skipped"] = skipped[i]
        lines.append(jsonl.line(entry))
    atomic.write_text(out / "triage.jsonl", "".join(lines))
    atomic.write_text(out / "clusters.json", json.dumps({"schema": CLUSTERS_SCHEMA, "clusters": summary.cluster_dicts()},
                                                    indent=2, ensure_ascii=False) + "\n")
    summary.seconds = time.monotonic() - started
    atomic.write_text(out / "triage.json", json.dumps(summary.as_info(), indent=2) + "\n")
    return summary


def _triage(out, pool, summary, rules, budget_s, per_cluster, started):
    # Pass 1: signature of every record; keep only what clustering needs (inputs may be large).
    light: list[dict[str, Any]] = []
    sizes: list[int] = []
    kept: dict[int, dict[str, Any]] = {}  # records that may be minimised, by index
    for record in committed_records(out):
        sample = load_record_input(record, out)
        text = sample.text if sample is not None else ""
        sig = signature(record, text)
        light.append({"engine": record["engine"], "reference": record["reference"], "kind": record["kind"],
                      "sample_id": record["sample_id"], "finding_key": record["finding_key"], "signature": sig,
                      "cluster": signature_key(sig), "error_type": (record.get("error") or {}).get("type"),
                      "has_input": sample is not None})
        sizes.append(len(text))
    summary.records = len(light)
    summary.clusters = cluster(light, rules)

    # Choose what to minimise: the smallest inputs of each cluster, cheap kinds first.
    skipped: dict[int, str] = {}
    items: list[_Item] = []
    for c in summary.clusters:
        members = sorted(c.members, key=lambda i: (sizes[i], i))
        for rank, i in enumerate(members):
            rec = light[i]
            if not rec["has_input"]:
                skipped[i] = SKIP_NO_INPUT
            elif rank >= per_cluster:
                skipped[i] = SKIP_PER_CLUSTER
            elif not rec["engine"] or (rec["kind"] == "ids" and rec["engine"] == rec["reference"]) \
                    or rec["kind"] not in KIND_ORDER:
                skipped[i] = SKIP_NO_ENGINE
            else:
                items.append(_Item(i, rec["kind"], rec["engine"], rec["reference"], rec["error_type"], sizes[i], c))
    order = {id(c): n for n, c in enumerate(summary.clusters)}
    items.sort(key=lambda it: (KIND_ORDER[it.kind], order[id(it.cluster)], it.chars, it.index))
    wanted = {it.index for it in items}
    if wanted:
        for i, record in enumerate(committed_records(out)):
            if i in wanted:
                kept[i] = record

    minimized: dict[int, dict[str, Any]] = {}
    restarts_before: dict[str, int] = {}
    for n, item in enumerate(items):
        remaining = budget_s - (time.monotonic() - started)
        share = remaining / (len(items) - n)
        if remaining <= 0:
            skipped[item.index] = SKIP_BUDGET
            continue
        reference, executor = pool.try_get(item.reference), pool.try_get(item.engine)
        if isinstance(reference, str) or isinstance(executor, str):
            skipped[item.index] = SKIP_UNAVAILABLE
            continue
        for ex in (reference, executor):
            restarts_before.setdefault(ex.spec, ex.restarts)
        if item.kind == "timeout" and (executor.timeout_s or 0) * TIMEOUT_PROBES > share:
            skipped[item.index] = SKIP_TIMEOUT_COST
            continue
        session = kept[item.index].get("session")
        if item.kind == "ids" and session and executor.capabilities.sessions:
            # a stateful engine's session finding: shrink the (prefix, append) pair
            block = minimized_session_fields(session, load_record_input(kept[item.index], out), reference,
                                             executor, share)
        else:
            predicate = still_fails(item.kind, reference, executor, item.error_type)
            result = minimise(load_record_input(kept[item.index], out), predicate, budget_s=share)
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
    summary.worker_restarts = {spec: pool.executors[spec].restarts - before for spec, before in restarts_before.items()
                               if spec in pool.executors and pool.executors[spec].restarts != before}
    for reason in skipped.values():
        summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
    return light, minimized, skipped
