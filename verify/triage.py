"""Triage, a stage of its own: classify, minimise, explain and cluster committed findings.

    run_triage(out, engine=EngineOptions(), budget_s=120.0, per_cluster=1) -> TriageSummary
    verify triage OUT

Reads the committed findings of OUT (a run's committed shards in plan order, or
``divergences.jsonl`` of other commands) and works in three steps:

  symptoms    every finding gets a ``signature`` (``verify.classify``: the character classes at
              the first difference, flags; ``history``/``batch`` for a finding that did not
              reproduce on a fresh engine) and falls into a *symptom* cluster, and within it into
              a *group* by its first differing token (the reference's piece and the engine's):
              two bugs that first differ between two letters still differ there (``'ße'`` made
              id 0 is not ``'te'`` made id 0); at most ``MAX_GROUPS`` groups per symptom, the
              rest in its first group;
  minimise    up to ``per_cluster`` findings of every group (the smallest first) are
              shrunk on engines the stage starts itself (``verify.reproduce``: the first-difference
              signature kept at every step, the reproducer checked on a fresh engine; a stateful
              finding's *history* shrunk as a sequence of calls, every step on a fresh engine),
              each shrink bounded by a number of calls (deterministic: the same reproducer on any
              machine at any load), the whole stage by one time budget that only decides how many
              findings get minimised (one that would run past it is cut, and says so);
              a finding whose text holds, at its first difference, the reproducer of a cause already
              found for its engine is that cause, not minimised again;
  causes      each symptom cluster's minimised reproducer is explained (``verify.causes``), and
              symptom clusters with one cause become one cluster keyed by it
              (``verify.cause_clusters``): the key baselines, allowlists and known clusters match.
              Each group is explained from its own reproducer, so one symptom can hold two bugs.

It writes, beside -- never into -- the findings:

  triage.jsonl    one line per finding, keyed by ``finding_key``: signature, ``symptom`` key,
                  ``cluster`` (the cause key), tags, ``cause``, and ``minimized`` (or null plus
                  ``minimized_skipped``)
  clusters.json   schema ``verify.clusters/2``: the cause clusters with their members, name and
                  minimised example
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
from typing import Any, Iterator

from typing_extensions import NotRequired, TypedDict

from verify import jsonl
from verify.cause_clusters import CauseCluster, ClusterRecord, join_by_cause
from verify.causes import CUT_NEAR_END, LONG_TEXT_CHARS, NEAR, Cause, Probe, explain
from verify.classify import MAX_SAMPLE_IDS, Cluster, Clusters, TagRule, load_tags, signature, signature_key
from verify.executors.lifeline import process_gone
from verify.executors.pool import EngineOptions, EnginePool
from verify.findings import DivergenceRecord, read_findings
from verify.history import History, fails_like, victim_result
from verify.outcome import FindingKind, agree, is_ids
from verify.reproduce import SKIP_BUDGET, SKIP_NOT_REPRODUCED, minimized_fields, reproduce, still_fails
from verify.rundir.layout import CLUSTERS_FILE, TRIAGE_FILE, RunFolder
from verify.sample import Sample
from verify.session_minimize import minimized_session_fields
from verify import atomic
from verify.fault_pause import pause

CLUSTERS_SCHEMA = "verify.clusters/2"
TRIAGE_SCHEMA = "verify.triage/1"
KIND_ORDER = {"ids": 0, "error": 1, "crash": 2, "timeout": 3}
TIMEOUT_PROBES = 50
MAX_GROUPS = 8  # first-token groups per symptom cluster (the rest go to its first group)
SPILL = ".triage-signatures.{pid}.tmp"  # in OUT, the signatures between the two passes

SKIP_PER_CLUSTER = "not first in cluster"
SKIP_NO_ENGINE = "no engine to replay it on"
SKIP_UNAVAILABLE = "engine unavailable here"
SKIP_TIMEOUT_COST = "budget (timeout probes cost the full timeout each)"
SKIP_NO_INPUT = "no input (bad record)"
# the order triage.json lists its skip reasons in: choosing what to minimise, then minimising
SKIP_ORDER = (SKIP_PER_CLUSTER, SKIP_NO_INPUT, SKIP_NO_ENGINE, SKIP_BUDGET, SKIP_UNAVAILABLE, SKIP_TIMEOUT_COST,
              SKIP_NOT_REPRODUCED)




class TriageLine(TypedDict):
    """One line of ``OUT/triage.jsonl``, about the finding of the same place in the findings
    (docs/schema.md). ``minimized`` is null when it was not minimised, ``minimized_skipped`` says why."""

    finding_key: str
    signature: dict[str, Any]
    symptom: str
    cluster: str
    cause: str
    cause_kind: str
    tags: list[str]
    minimized: dict[str, Any] | None
    minimized_skipped: NotRequired[str]


class ClustersFile(TypedDict):
    """``OUT/clusters.json`` (``verify.clusters/2``)."""

    schema: str
    clusters: list[ClusterRecord]


__all__ = ["CLUSTERS_SCHEMA", "TRIAGE_SCHEMA", "TriageLine", "ClustersFile", "ClusterRecord", "TriageSummary", "run_triage", "committed_records",
           "load_record_input", "load_record_history", "joined_triage", "read_clusters", "read_triage_info",
           "triaged_records", "still_fails", "minimized_fields", "SKIP_BUDGET", "SKIP_NOT_REPRODUCED", "probe_of"]


@dataclass
class TriageSummary:
    clusters: list = field(default_factory=list)  # CauseCluster (shadow triage: its own)
    symptoms: int = 0
    records: int = 0
    minimized: int = 0
    seconds: float = 0.0
    budget_s: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> findings
    worker_restarts: dict[str, int] = field(default_factory=dict)  # restarts caused by minimisation

    def cluster_dicts(self) -> list[ClusterRecord]:
        return [c.as_dict() for c in self.clusters]

    def as_info(self) -> dict[str, Any]:
        return {"schema": TRIAGE_SCHEMA, "records": self.records, "clusters": len(self.clusters),
                "symptoms": self.symptoms, "causes": len({(c.engine, c.key) for c in self.clusters}),
                "minimised": self.minimized,
                "seconds": round(self.seconds, 3), "budget_s": self.budget_s, "skipped": self.skipped,
                "worker_restarts": self.worker_restarts, "clusters_file": CLUSTERS_FILE,
                "triage_file": TRIAGE_FILE}


# --- reading committed findings and inputs --------------------------------------------

def committed_records(out: Path) -> Iterator[DivergenceRecord]:
    """The committed findings of OUT: a run's committed shards in plan order (so an
    interrupted or resumed run can be triaged), else ``divergences.jsonl``."""
    from verify.rundir.plan import load_plan
    from verify.rundir.store import ShardStore

    out = Path(out)
    if RunFolder(out).plan.is_file():
        plan = load_plan(out)
        store = ShardStore(out)
        yield from store.records(store.committed([s.id for s in plan.shards]))
    else:
        yield from read_findings(RunFolder(out).findings)


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


def load_record_history(record: dict[str, Any], out_dir: Path) -> History | None:
    """The calls a stateful finding keeps (``verify.fresh_check``): inline, or in ``history_file``
    (inside OUT, like ``input_file``); None for a finding that reproduces alone."""
    doc = record.get("history")
    if not isinstance(doc, dict):
        return None
    if doc.get("file"):
        from verify.rundir.paths import inside

        doc = json.loads(inside(out_dir, doc["file"], "history file").read_text(encoding="utf-8"))
    if "calls" not in doc:
        return None
    return History.from_json(doc, record.get("sample_id") or "history")


def joined_triage(out: Path) -> Iterator[tuple[DivergenceRecord, TriageLine | None]]:
    """Every committed finding with its triage line (None when it has none), streamed.

    Triage writes triage.jsonl from the committed findings in the same order, so the two
    files are read side by side: a line is joined to a finding only when their
    ``finding_key`` agree, and a finding committed after triage ran (a triaged run resumed
    with ``--minimize-budget 0``) simply has none. Memory does not grow with the findings."""
    lines = read_findings(RunFolder(out).triage)
    pending = next(lines, None)
    for record in committed_records(out):
        if pending is not None and pending.get("finding_key") == record.get("finding_key"):
            yield record, pending
            pending = next(lines, None)
        else:
            yield record, None


def read_clusters(out: Path) -> list[ClusterRecord]:
    path = RunFolder(out).clusters
    if not path.is_file():
        return []
    return json.loads(path.read_text(encoding="utf-8")).get("clusters", [])


def read_triage_info(out: Path) -> dict[str, Any] | None:
    path = RunFolder(out).triage_summary
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
    """What the first pass keeps: the symptom clusters, their groups (``Cluster`` objects of their own,
    by first differing token, at most ``MAX_GROUPS`` each) and, per group, its ``per_cluster``
    smallest members as ``(chars, index, record or None)`` -- bounded per group, whatever the findings."""

    clusters: Clusters
    groups: dict[int, dict[str, Cluster]] = field(default_factory=dict)  # id(symptom) -> first token -> group
    smallest: dict[int, list[tuple[int, int, dict[str, Any] | None]]] = field(default_factory=dict)  # id(group)
    number: dict[int, int] = field(default_factory=dict)  # id(group) -> its place in order of first appearance
    ordered: list[Cluster] = field(default_factory=list)  # the groups, in order of first appearance

    def group(self, symptom: Cluster, record: dict[str, Any]) -> Cluster:
        groups = self.groups.setdefault(id(symptom), {})
        token = first_token(record)
        g = groups.get(token)
        if g is None:
            if len(groups) >= MAX_GROUPS:
                g = next(iter(groups.values()))
            else:
                g = groups[token] = Cluster(symptom.key, symptom.engine, symptom.reference, symptom.signature,
                                            tags=symptom.tags, links=symptom.links)
                self.number[id(g)] = len(self.ordered)
                self.ordered.append(g)
        g.count += 1
        if len(g.sample_ids) < MAX_SAMPLE_IDS:
            g.sample_ids.append(record.get("sample_id"))
        return g


def first_token(record: dict[str, Any]) -> str:
    """A finding's first differing token, the reference's piece (or id) and the engine's, as a key;
    ``""`` for a finding without one (a failure, an unlocated divergence)."""
    index = record.get("token_index")
    if index is None:
        return ""
    sides = []
    for name in ("expected", "actual"):
        window = record.get(name) or {}
        at = int(index) - int(window.get("start") or 0)
        pieces, ids = window.get("pieces"), window.get("ids") or []
        sides.append(pieces[at] if pieces and 0 <= at < len(pieces) else ids[at] if 0 <= at < len(ids) else None)
    return json.dumps(sides, ensure_ascii=False)


def run_triage(out: Path, *, engine: EngineOptions | None = None, budget_s: float = 120.0, per_cluster: int = 1,
               tags: list[TagRule] | None = None, pool: EnginePool | None = None) -> TriageSummary:
    """Triage the committed findings of ``out``. Engines are started from ``pool`` (or a
    pool of its own with ``engine`` options), only for clusters that get minimised."""
    started = time.monotonic()
    out = Path(out)
    folder = RunFolder(out)
    rules = tags if tags is not None else load_tags()
    summary = TriageSummary(budget_s=budget_s)
    _drop_dead_spills(out)
    spill = out / SPILL.format(pid=os.getpid())  # one line per finding, between the two passes
    try:
        with open(spill, "w", encoding="utf-8", newline="\n") as fh:
            first = _sign_and_cluster(out, rules, per_cluster, fh)
        summary.records = first.clusters.records
        symptoms = first.ordered  # the groups: each is explained by its own reproducer
        summary.symptoms = len(first.clusters)
        own_pool = pool is None
        pool = pool or EnginePool(engine or EngineOptions())
        try:
            minimized, skipped = _minimize(out, pool, summary, _choose(first), budget_s, started)
            summary.clusters, of = join_by_cause(symptoms, _Explainer(pool, first), rules)
            pause("triage")  # fault tests: killed here, its engines run and only the spill is written
        finally:
            if own_pool:
                pool.close()
        atomic.write_lines(folder.triage, _triage_lines(spill, summary, symptoms, of, minimized, skipped))
    finally:
        spill.unlink(missing_ok=True)
    atomic.write_text(folder.clusters, json.dumps({"schema": CLUSTERS_SCHEMA, "clusters": summary.cluster_dicts()},
                                                  indent=2, ensure_ascii=False) + "\n")
    summary.seconds = time.monotonic() - started
    atomic.write_text(folder.triage_summary, json.dumps(summary.as_info(), indent=2) + "\n")
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
        symptom = first.clusters.add({"engine": record["engine"], "reference": record["reference"],
                                      "sample_id": record["sample_id"], "signature": sig,
                                      "cluster": signature_key(sig)})
        c = first.group(symptom, record)
        number = first.number[id(c)]
        smallest = first.smallest.setdefault(id(c), [])
        if len(smallest) < per_cluster or (len(text), index) < smallest[-1][:2]:
            bisect.insort(smallest, (len(text), index, record if sample is not None else None))
            del smallest[per_cluster:]
        spill.write(jsonl.line([record["finding_key"], number, sample is not None, sig]))
    return first


def _choose(first: _Pass1) -> tuple[list[_Item], dict[int, str], list[_Item]]:
    """What to minimise: the smallest members of each cluster that have an input and an engine
    to replay them on, cheap kinds first; the chosen members left out, with why; and those of an
    engine against itself (a metamorphic property), which take the block of a finding of the same
    engine against a reference on the same input, when there is one."""
    items: list[_Item] = []
    skipped: dict[int, str] = {}
    selves: list[_Item] = []
    clusters = first.ordered
    for c in clusters:
        for chars, index, record in first.smallest.get(id(c), []):
            if record is None:
                continue  # no input: said in the second pass, like every member without one
            kind, engine, reference = record["kind"], record["engine"], record["reference"]
            against_self = kind == FindingKind.IDS and engine == reference and not record.get("history")
            if not engine or against_self or kind not in KIND_ORDER:
                skipped[index] = SKIP_NO_ENGINE
                if against_self and engine:
                    selves.append(_Item(index, kind, engine, reference, None, chars, c, record))
            else:
                items.append(_Item(index, kind, engine, reference, (record.get("error") or {}).get("type"), chars,
                                   c, record))
    order = {id(c): n for n, c in enumerate(clusters)}
    items.sort(key=lambda it: (KIND_ORDER[it.kind], order[id(it.cluster)], it.chars, it.index))
    return items, skipped, selves


def _minimize(out, pool, summary, chosen, budget_s, started) -> tuple[dict[int, dict[str, Any]], dict[int, str]]:
    """Minimise the chosen members within the budget; their blocks, and why the others were not."""
    items, skipped, selves = chosen
    minimized: dict[int, dict[str, Any]] = {}
    restarts_before: dict[str, int] = {}
    found: list[tuple[_Item, dict[str, Any]]] = []  # minimised so far, for findings of a cause already found
    for n, item in enumerate(items):
        known = _known_cause(item, found, out)
        reference, executor = pool.try_get(item.reference), pool.try_get(item.engine)
        if known is None and not isinstance(reference, str) and not isinstance(executor, str):
            known = _known_threshold(item, found, out, reference, executor) or \
                _known_history(item, found, out, reference, executor)
        if known is not None:
            minimized[item.index] = known
            if item.cluster.example is None:
                item.cluster.example = known
            continue
        remaining = budget_s - (time.monotonic() - started)
        share = remaining / (len(items) - n)
        if remaining <= 0:
            skipped[item.index] = SKIP_BUDGET
            continue
        if isinstance(reference, str) or isinstance(executor, str):
            skipped[item.index] = SKIP_UNAVAILABLE
            continue
        for ex in (reference, executor):
            restarts_before.setdefault(ex.spec, ex.restarts)
        if item.kind == FindingKind.TIMEOUT and (executor.timeout_s or 0) * TIMEOUT_PROBES > share:
            skipped[item.index] = SKIP_TIMEOUT_COST
            continue
        session = item.record.get("session")
        sample = load_record_input(item.record, out)
        if item.kind == FindingKind.IDS and session and executor.capabilities.sessions:
            # a stateful engine's session finding: shrink the (prefix, append) pair
            block, why = minimized_session_fields(session, sample, reference, executor, share), SKIP_NOT_REPRODUCED
        else:  # bounded by calls; the remaining budget only stops a shrink that would run past it
            block, why = reproduce(item.record, sample, reference, executor, remaining,
                                   history=load_record_history(item.record, out))
        if block is None:
            skipped[item.index] = why
            continue
        minimized[item.index] = block
        found.append((item, block))
        if item.cluster.example is None:
            item.cluster.example = block
    by_input = {(it.engine, it.record.get("input_key")): (it, b) for it, b in found if it.engine != it.reference}
    for item in selves:  # a property the engine breaks on an input where it also differs from the reference
        hit = by_input.get((item.engine, item.record.get("input_key")))
        if hit is not None:
            other, block = hit
            minimized[item.index] = {**block, "same_as": other.record.get("finding_key"), "same_input": True}
            skipped.pop(item.index, None)
            if item.cluster.example is None:
                item.cluster.example = minimized[item.index]
                # one bug: explained against the reference, and joined with the finding's cluster
                item.cluster.reference = other.reference
    summary.minimized = len(minimized)
    summary.worker_restarts = {spec: pool.executors[spec].restarts - before for spec, before in restarts_before.items()
                               if spec in pool.executors and pool.executors[spec].restarts != before}
    return minimized, skipped


def _known_cause(item: _Item, found: list[tuple[_Item, dict[str, Any]]], out: Path) -> dict[str, Any] | None:
    """The block of a cause already found for ``item``'s engine whose reproducer (one plain text)
    stands in ``item``'s input where it first differs: that cause, without minimising again."""
    at = item.record.get("char_offset")
    if at is None or item.record.get("history") or item.record.get("session"):
        return None
    candidates = [(it, b) for it, b in found if (it.engine, it.reference, it.kind) ==
                  (item.engine, item.reference, item.kind) and not b.get("history") and len(b["input"]) == 1]
    if not candidates:
        return None
    sample = load_record_input(item.record, out)
    text = sample.text if sample is not None else ""
    for other, block in candidates:
        reproducer = block["input"][0][0]
        if not reproducer:
            continue
        start = text.find(reproducer, max(0, int(at) - len(reproducer)))
        while start != -1 and start <= int(at):
            if start <= int(at) < start + len(reproducer) or (start == int(at) == len(text)):
                return {**block, "same_as": other.record.get("finding_key")}
            start = text.find(reproducer, start + 1)
    return None


def _known_threshold(item: _Item, found: list[tuple[_Item, dict[str, Any]]], out: Path, reference,
                     executor) -> dict[str, Any] | None:
    """The block of a long reproducer already found for ``item``'s engine (L characters: a length
    threshold, since it agrees one shorter) when ``item``'s input is about as long (L to L + L/NEAR
    + CUT_NEAR_END characters: the same chunk size met a few characters on, or a character probed at
    the cut) and its first L - 1 characters agree: the same threshold, without minimising again.
    One encode of each engine instead of a minimisation of a long input per finding."""
    if item.kind != FindingKind.IDS or item.record.get("history") or item.record.get("session"):
        return None
    candidates = [(it, b) for it, b in found if (it.engine, it.reference, it.kind) ==
                  (item.engine, item.reference, item.kind) and not b.get("history") and len(b["input"]) == 1
                  and len(b["input"][0][0]) >= LONG_TEXT_CHARS]
    if not candidates:
        return None
    sample = load_record_input(item.record, out)
    if sample is None or len(sample.segments) != 1:
        return None
    text, allow = sample.segments[0].text, sample.segments[0].allow_special
    for other, block in candidates:
        size = len(block["input"][0][0])
        if not size <= len(text) <= size + size // NEAR + CUT_NEAR_END:
            continue
        shorter = Sample.from_segments(sample.id, [(text[:size - 1], allow)])
        if agree(reference.encode([shorter])[0], executor.encode([shorter])[0]):
            return {**block, "same_as": other.record.get("finding_key"), "same_threshold": size}
    return None


def _known_history(item: _Item, found: list[tuple[_Item, dict[str, Any]]], out: Path, reference,
                   executor) -> dict[str, Any] | None:
    """The block of a history cause already minimised for ``item``'s engine when its poison (the
    calls before its victim) makes ``item``'s input fail on a fresh engine too: the same state
    bug, without minimising ``item``'s own history again (one fresh replay instead of hundreds)."""
    if item.kind != FindingKind.IDS or not item.record.get("history") or item.record.get("session"):
        return None
    known = [(it, b) for it, b in found if (it.engine, it.reference, it.kind) == (item.engine, item.reference, item.kind)
             and b.get("history")]
    replayer = executor.fresh_replayer() if known and hasattr(executor, "fresh_replayer") else None
    sample = load_record_input(item.record, out) if replayer is not None else None
    if sample is None:
        return None
    expected = reference.encode([sample])[0]
    for other, block in known:
        history = History.from_json(block["history"])
        call, element = history.victim
        if element is None:
            continue
        poison = history.calls[:call] + ((history.calls[call][:element],) if element else ())
        candidate = History(poison + ((sample,),), (len(poison), 0))
        if fails_like("ids", None, victim_result(candidate, replayer.replay(list(candidate.calls))), expected):
            return {**block, "same_as": other.record.get("finding_key"), "same_history": True}
    return None


class _Explainer:
    """Explains a symptom cluster from its minimised example (``verify.causes``), asking the
    engines of the pool what explaining needs (does a shorter run agree?)."""

    def __init__(self, pool: EnginePool, first: _Pass1):
        self.pool, self.first = pool, first
        self._probes: dict[tuple[str, str], Probe] = {}

    def probe(self, engine: str, reference: str) -> Probe:
        ident = (engine, reference)
        if ident not in self._probes:
            ref, cand = self.pool.try_get(reference), self.pool.try_get(engine)
            usable = not isinstance(ref, str) and not isinstance(cand, str) and engine != reference
            self._probes[ident] = probe_of(ref, cand) if usable else Probe()
        return self._probes[ident]

    def __call__(self, c: Cluster) -> Cause:
        error_type = c.signature.get("error_type")
        probe = self.probe(c.engine, c.reference) if c.example is not None else Probe()
        first = self.first.smallest.get(id(c)) or []
        input_key = (first[0][2] or {}).get("input_key", "") if first and first[0][2] else ""
        return explain(c.kind, error_type, c.example, probe, symptom=c.key, input_key=input_key or c.key)


def probe_of(reference, candidate) -> Probe:
    """What explaining may ask of two running engines (executors): whether they agree on a text,
    and the reference's special-token literals and pre-tokenizer pattern."""
    def agree_on(segments: list) -> bool | None:
        sample = Sample.from_segments("explain", [(t, a) for t, a in segments])
        a, b = reference.encode([sample])[0], candidate.encode([sample])[0]
        return agree(a, b) if is_ids(a) and is_ids(b) else None

    probe = Probe()
    probe.agree = agree_on
    probe.specials, probe.pattern, probe.classes = _vocabulary_facts(reference)
    return probe


def _vocabulary_facts(reference) -> tuple[tuple[str, ...], Any, Any]:
    """The reference's special-token literals, its pre-tokenizer pattern (compiled) and what the
    pattern sees of each character (``pattern_classes``), when its vocabulary can be read here;
    ``((), None, None)`` otherwise."""
    try:
        import regex

        from verify.vocab.inspect import vocabulary_view

        view = vocabulary_view(reference.identity().vocab)
    except Exception:  # a plugin reference, an unreadable vocabulary: explained without them
        return (), None, None
    pattern = classes = None
    if len(view.patterns) == 1:
        try:
            pattern = regex.compile(view.patterns[0].regex)
        except Exception:
            pattern = None
    if view.patterns and pattern is not None:
        from verify.alphabet import pattern_classes

        classes = pattern_classes([p.regex for p in view.patterns])
    return tuple(view.special), pattern, classes


def _triage_lines(spill: Path, summary: TriageSummary, symptoms: list[Cluster], of: dict[int, CauseCluster],
                  minimized: dict[int, dict[str, Any]], skipped: dict[int, str]) -> Iterator[str]:
    """Pass 2: triage.jsonl, one line per finding in the order of the findings, from the
    spilled signatures; counts the skip reasons into ``summary.skipped`` as it goes."""
    counts = dict.fromkeys(SKIP_ORDER, 0)
    with open(spill, encoding="utf-8", newline="\n") as fh:
        for index, text in enumerate(fh):
            finding_key, number, has_input, sig = json.loads(text)
            symptom = symptoms[number]
            c = of[id(symptom)]
            entry: TriageLine = {"finding_key": finding_key, "signature": sig, "symptom": symptom.key, "cluster": c.key,
                     "tags": c.tags, "cause": c.key, "cause_kind": c.cause.kind, "minimized": minimized.get(index)}
            if index not in minimized:
                reason = skipped.get(index) or (SKIP_PER_CLUSTER if has_input else SKIP_NO_INPUT)
                entry["minimized_skipped"] = reason
                counts[reason] = counts.get(reason, 0) + 1
            yield jsonl.line(entry)
    summary.skipped = {reason: n for reason, n in counts.items() if n}
