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

Memory is flat in the number of findings: a first pass signs and clusters the findings
as they stream past, keeping per cluster its count, first sample ids and ``per_cluster``
smallest members (the ones it may minimise), and spills each finding's signature to a
temporary file in OUT; after minimising, a second pass over that file writes triage.jsonl
line by line. Readers join triage.jsonl to the findings the same way, in order
(``joined_triage``), never as a dict of every line.

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

import bisect
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from verify import jsonl
from verify.classify import Cluster, Clusters, TagRule, cause_key, load_tags, signature, signature_key
from verify.executors.lifeline import process_gone
from verify.executors.pool import EngineOptions, EnginePool
from verify.findings import input_runs, describe_divergence, read_findings
from verify.minimize import MinimiseResult, minimise
from verify.outcome import Failure, differ
from verify.sample import Sample
from verify.session_minimize import minimized_session_fields
from verify import atomic
from verify.fault_pause import pause

CLUSTERS_SCHEMA = "verify.clusters/1"
TRIAGE_SCHEMA = "verify.triage/1"
KIND_ORDER = {"ids": 0, "error": 1, "crash": 2, "timeout": 3}
TIMEOUT_PROBES = 50
SPILL = ".triage-signatures.{pid}.tmp"  # in OUT, the signatures between the two passes

SKIP_BUDGET = "budget"
SKIP_PER_CLUSTER = "not first in cluster"
SKIP_NO_ENGINE = "no engine to replay it on"
SKIP_UNAVAILABLE = "engine unavailable here"
SKIP_NOT_REPRODUCED = "did not reproduce"
SKIP_TIMEOUT_COST = "budget (timeout probes cost the full timeout each)"
SKIP_NO_INPUT = "no input (bad record)"
# the order triage.json lists its skip reasons in: choosing what to minimise, then minimising
SKIP_ORDER = (SKIP_PER_CLUSTER, SKIP_NO_INPUT, SKIP_NO_ENGINE, SKIP_BUDGET, SKIP_UNAVAILABLE, SKIP_TIMEOUT_COST,
              SKIP_NOT_REPRODUCED)


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
    """The sample a record carries, inline (``input``), as runs (``input_runs``) or in ``input_file``
    (which must lie inside OUT: ``verify.rundir.paths.inside``); None for a bad record."""
    if record.get("input") is not None:
        return Sample.from_segments(record["sample_id"], [(t, a) for t, a in record["input"]])
    if record.get("input_runs") is not None:
        from verify.findings import sample_from_runs

        return sample_from_runs(record["sample_id"], record["input_runs"])
    if record.get("input_file"):
        from verify.rundir.paths import inside

        stored = json.loads(inside(out_dir, record["input_file"], "input_file").read_text(encoding="utf-8"))
        return Sample.from_segments(record["sample_id"], [(t, a) for t, a in stored["segments"]])
    return None


def joined_triage(out: Path) -> Iterator[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every committed finding with its triage line (None when it has none), streamed.

    Triage writes triage.jsonl from the committed findings in the same order, so the two
    files are read side by side: a line is joined to a finding only when their
    ``finding_key`` agree, and a finding committed after triage ran (a triaged run resumed
    with ``--minimize-budget 0``) simply has none. Memory does not grow with the findings."""
    lines = read_findings(Path(out) / "triage.jsonl")
    pending = next(lines, None)
    for record in committed_records(out):
        if pending is not None and pending.get("finding_key") == record.get("finding_key"):
            yield record, pending
            pending = next(lines, None)
        else:
            yield record, None


def read_triage(out: Path) -> dict[str, dict[str, Any]]:
    """finding_key -> its triage line: every line in memory, for tests and small folders;
    reports and the gate stream with ``joined_triage``."""
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
    """Committed findings with their triage fields joined in (for reports): the first
    ``limit`` of them (all when None), read no further than that."""
    records = []
    for record, line in joined_triage(out):
        if limit is not None and len(records) >= limit:
            break
        extra = {k: v for k, v in (line or {}).items() if k != "finding_key"}
        records.append({**record, **extra})
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
    runs = input_runs(sample)
    if runs is not None:  # what a person reads: 'a'×500, not 500 characters
        block["input_runs"] = runs
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
    record: dict[str, Any]


@dataclass
class _Pass1:
    """What the first pass keeps: the clusters and, per cluster, its ``per_cluster`` smallest
    members as ``(chars, index, record or None)`` -- bounded per cluster, whatever the findings."""

    clusters: Clusters
    smallest: dict[int, list[tuple[int, int, dict[str, Any] | None]]] = field(default_factory=dict)  # id(cluster)
    number: dict[int, int] = field(default_factory=dict)  # id(cluster) -> its place in order of first appearance


def run_triage(out: Path, *, engine: EngineOptions | None = None, budget_s: float = 120.0, per_cluster: int = 1,
               tags: list[TagRule] | None = None, pool: EnginePool | None = None) -> TriageSummary:
    """Triage the committed findings of ``out``. Engines are started from ``pool`` (or a
    pool of its own with ``engine`` options), only for clusters that get minimised."""
    started = time.monotonic()
    out = Path(out)
    rules = tags if tags is not None else load_tags()
    summary = TriageSummary(budget_s=budget_s)
    _drop_dead_spills(out)
    spill = out / SPILL.format(pid=os.getpid())  # one line per finding, between the two passes
    try:
        with open(spill, "w", encoding="utf-8", newline="\n") as fh:
            first = _sign_and_cluster(out, rules, per_cluster, fh)
        summary.records = first.clusters.records
        summary.clusters = first.clusters.ordered()
        own_pool = pool is None
        pool = pool or EnginePool(engine or EngineOptions())
        try:
            minimized, skipped = _minimise(out, pool, summary, _choose(first), budget_s, started)
            pause("triage")  # fault tests: killed here, its engines run and only the spill is written
        finally:
            if own_pool:
                pool.close()
        atomic.write_lines(out / "triage.jsonl", _triage_lines(spill, summary, minimized, skipped))
    finally:
        spill.unlink(missing_ok=True)
    atomic.write_text(out / "clusters.json", json.dumps({"schema": CLUSTERS_SCHEMA, "clusters": summary.cluster_dicts()},
                                                    indent=2, ensure_ascii=False) + "\n")
    summary.seconds = time.monotonic() - started
    atomic.write_text(out / "triage.json", json.dumps(summary.as_info(), indent=2) + "\n")
    return summary


def _drop_dead_spills(out: Path) -> None:
    """Remove the spills of triages that were killed (their process is gone): each holds a line
    per finding, and a resumed run would otherwise keep them in OUT for good."""
    for path in out.glob(SPILL.format(pid="*")):
        pid = path.name.split(".")[2]
        if pid.isdigit() and process_gone(int(pid)):
            path.unlink(missing_ok=True)


def _sign_and_cluster(out: Path, rules: list[TagRule], per_cluster: int, spill) -> _Pass1:
    """Pass 1: the signature of every committed finding, streamed into the clusters; each
    finding's triage facts go to ``spill`` as ``[finding_key, cluster number, has input, signature]``."""
    first = _Pass1(Clusters(rules))
    for index, record in enumerate(committed_records(out)):
        sample = load_record_input(record, out)
        text = sample.text if sample is not None else ""
        sig = signature(record, text)
        c = first.clusters.add({"engine": record["engine"], "reference": record["reference"],
                                "sample_id": record["sample_id"], "signature": sig, "cluster": signature_key(sig)})
        number = first.number.setdefault(id(c), len(first.number))
        smallest = first.smallest.setdefault(id(c), [])
        if len(smallest) < per_cluster or (len(text), index) < smallest[-1][:2]:
            bisect.insort(smallest, (len(text), index, record if sample is not None else None))
            del smallest[per_cluster:]
        spill.write(jsonl.line([record["finding_key"], number, sample is not None, sig]))
    return first


def _choose(first: _Pass1) -> tuple[list[_Item], dict[int, str]]:
    """What to minimise: the smallest members of each cluster that have an input and an engine
    to replay them on, cheap kinds first; the chosen members left out, with why."""
    items: list[_Item] = []
    skipped: dict[int, str] = {}
    clusters = first.clusters.ordered()
    for c in clusters:
        for chars, index, record in first.smallest.get(id(c), []):
            if record is None:
                continue  # no input: said in the second pass, like every member without one
            kind, engine, reference = record["kind"], record["engine"], record["reference"]
            if not engine or (kind == "ids" and engine == reference) or kind not in KIND_ORDER:
                skipped[index] = SKIP_NO_ENGINE
            else:
                items.append(_Item(index, kind, engine, reference, (record.get("error") or {}).get("type"), chars,
                                   c, record))
    order = {id(c): n for n, c in enumerate(clusters)}
    items.sort(key=lambda it: (KIND_ORDER[it.kind], order[id(it.cluster)], it.chars, it.index))
    return items, skipped


def _minimise(out, pool, summary, chosen, budget_s, started) -> tuple[dict[int, dict[str, Any]], dict[int, str]]:
    """Minimise the chosen members within the budget; their blocks, and why the others were not."""
    items, skipped = chosen
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
        session = item.record.get("session")
        if item.kind == "ids" and session and executor.capabilities.sessions:
            # a stateful engine's session finding: shrink the (prefix, append) pair
            block = minimized_session_fields(session, load_record_input(item.record, out), reference,
                                             executor, share)
        else:
            predicate = still_fails(item.kind, reference, executor, item.error_type)
            result = minimise(load_record_input(item.record, out), predicate, budget_s=share)
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
    return minimized, skipped


def _triage_lines(spill: Path, summary: TriageSummary, minimized: dict[int, dict[str, Any]],
                  skipped: dict[int, str]) -> Iterator[str]:
    """Pass 2: triage.jsonl, one line per finding in the order of the findings, from the
    spilled signatures; counts the skip reasons into ``summary.skipped`` as it goes."""
    counts = dict.fromkeys(SKIP_ORDER, 0)
    with open(spill, encoding="utf-8", newline="\n") as fh:
        for index, text in enumerate(fh):
            finding_key, number, has_input, sig = json.loads(text)
            c = summary.clusters[number]
            entry = {"finding_key": finding_key, "signature": sig, "cluster": c.key, "tags": c.tags,
                     "cause": c.cause, "minimized": minimized.get(index)}
            if index not in minimized:
                reason = skipped.get(index) or (SKIP_PER_CLUSTER if has_input else SKIP_NO_INPUT)
                entry["minimized_skipped"] = reason
                counts[reason] += 1
            yield jsonl.line(entry)
    summary.skipped = {reason: n for reason, n in counts.items() if n}
