"""Shadow triage: classify, cluster, minimise and de-duplicate the committed findings of ``verify shadow``.

    outcome = ShadowTriage(load_tags(), redact=..., per_cluster=1, budget_s=60, known=..., allowlist=...)
              .run(out, plan, store, markers, engine_options)   # triage.jsonl, clusters.json, triage.json

The driver's triage stage for the shadow hunt (``verify.shadow.hunt``): it reads only what
the shards committed -- the findings (``verify.triage.committed_records``, plan order)
and, beside each shard's, its extra's ``findings`` list (``verify.shadow.run``): each
finding's signature (computed in the worker on the full input, so a redacted record
clusters as it would unredacted), its input's length and the replay engine that reproduced
it, or why none did. It is ``verify triage`` (``verify.triage``: cluster keys and tags from
``verify.classify``, ``minimise`` with ``still_fails``/``minimized_fields``, the same files
and schemas) with what shadow findings need: production's tokenizer cannot be re-run, so
a finding is minimised only against a *replay engine* that reproduced production's output
on its full input; otherwise its cluster's reproducer is the smallest member's input
(under ``--redact``: its hashes and the window around the first difference) and the
reason is said.

Memory is flat in the number of findings: two streaming passes over the committed
findings, and in between only per cluster what the report says of it and what may be
minimised (``per_cluster`` candidates, as locators). Under ``--redact`` a candidate's
input is read again from its shadow file (by position, checked against its
``input_key``) in memory only: nothing unredacted is ever written for triage to read back.

Each cluster gets a status: ``allowlisted`` (a row of ``--allowlist`` accepts it),
``known`` (``--known-clusters PREVIOUS_OUT`` had it: same engine and key, or the same
cause, i.e. minimised reproducer) or ``new``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from verify import atomic, jsonl
from verify.classify import Cluster, TagRule, cause_key, signature_key, tags_for
from verify.errors import UsageError
from verify.minimize import minimise
from verify.sample import Sample
from verify.shadow.redact import redact_minimized
from verify.shadow.schema import parse_timestamp
from verify.triage import (CLUSTERS_SCHEMA, SKIP_BUDGET, SKIP_NO_ENGINE, SKIP_NO_INPUT, SKIP_NOT_REPRODUCED,
                           SKIP_PER_CLUSTER, SKIP_UNAVAILABLE, TriageSummary, committed_records,
                           load_record_input, minimized_fields, read_clusters, still_fails)

SHADOW_REPORT = "shadow.json"
LOCATED = ("token_index", "byte_offset", "char_offset", "expected_len", "actual_len", "expected", "actual", "error")
MAX_REQUEST_IDS = 20  # request ids listed per cluster
MAX_LISTED_REQUESTS = 10_000  # mismatched requests (and bad records) listed in shadow.json
SKIP_INPUT_GONE = "input not found again in its shadow file"
Ident = tuple  # (engine, reference, cluster key)


class KnownClusters:
    """The clusters of a previous OUT (``clusters.json``) and, when it was a shadow run, when
    each was first seen (``shadow.json``)."""

    def __init__(self, out: Path | None = None):
        self.keys: set[tuple[str, str]] = set()
        self.causes: set[tuple[str, str]] = set()
        self.first_seen: dict[tuple[str, str], str] = {}
        self.clusters: list[dict[str, Any]] = []
        self.out = out
        if out is None:
            return
        if not (Path(out) / "clusters.json").is_file():
            raise UsageError(f"--known-clusters {out}: no clusters.json there (give a previous --out)")
        try:
            self.clusters = read_clusters(out)
            report = Path(out) / SHADOW_REPORT
            previous = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
        except (OSError, ValueError) as exc:
            raise UsageError(f"--known-clusters {out}: unreadable ({exc})") from None
        for c in self.clusters:
            self.keys.add((c.get("engine"), c.get("key")))
            if c.get("cause"):
                self.causes.add((c.get("engine"), c["cause"]))
        for c in previous.get("clusters", []):
            if c.get("first_seen"):
                self.first_seen[(c.get("engine"), c.get("key"))] = c["first_seen"]

    def match(self, c: Cluster) -> bool:
        return (c.engine, c.key) in self.keys or (c.cause is not None and (c.engine, c.cause) in self.causes)


def member_of(record: dict[str, Any]) -> dict[str, Any]:
    """What the report shows of one finding (no text)."""
    shadow = record.get("shadow") or {}
    return {"request_id": shadow.get("request_id", record["sample_id"]), "timestamp": shadow.get("timestamp"),
            "version": (shadow.get("tokenizer") or {}).get("version"),
            "vocab_matches_reference": shadow.get("vocab_matches_reference"),
            "digest_only": shadow.get("recorded") == "digest" and record.get("token_index") is None,
            "session": shadow.get("session"), "finding_key": record["finding_key"],
            "position": shadow.get("position", record["sample_id"]),
            "reason": (record.get("error") or {}).get("message") if record["kind"] == "bad-input" else None}


@dataclass
class Facts:
    """What the report says of a cluster's members, gathered as they stream past."""

    first: tuple | None = None  # (parsed timestamp, as recorded)
    last: tuple | None = None
    versions: set = field(default_factory=set)
    request_ids: list[str] = field(default_factory=list)  # the first MAX_REQUEST_IDS
    digest_only: int = 0
    session_turns: int = 0
    vocab_differs: bool = False  # some member's vocab_sha256 is not the reference's
    later_turns: bool = False  # some member is a session turn after the first

    def add(self, m: dict[str, Any]) -> None:
        when = parse_timestamp(m["timestamp"]) if m.get("timestamp") else None
        if when is not None:
            stamp = (when, m["timestamp"])
            self.first = stamp if self.first is None else min(self.first, stamp)
            self.last = stamp if self.last is None else max(self.last, stamp)
        if m.get("version"):
            self.versions.add(m["version"])
        if len(self.request_ids) < MAX_REQUEST_IDS:
            self.request_ids.append(m["request_id"])
        self.digest_only += bool(m.get("digest_only"))
        self.session_turns += bool(m.get("session"))
        self.vocab_differs |= m.get("vocab_matches_reference") is False
        self.later_turns |= bool((m.get("session") or {}).get("turn"))


@dataclass
class _Candidate:
    """A finding that may be minimised: where its input is, and the replay that reproduced it."""

    chars: int
    index: int
    shard: int  # plan index of its shard (where a redacted input is read again)
    position: str  # the record's file:line / file:rowN
    stored: dict[str, Any]  # sample_id, input_key and the input or input_file the record keeps (none redacted)
    replay: str


@dataclass
class _ClusterState:
    cluster: Cluster
    facts: Facts = field(default_factory=Facts)
    smallest: tuple | None = None  # (chars, index, reproducer doc, why when not a candidate)
    candidates: list[_Candidate] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)
    reproducer: dict[str, Any] | None = None  # when none was minimised


@dataclass
class TriageOutcome:
    clusters: list[Cluster]
    states: dict[Ident, _ClusterState]
    mismatched: list[dict[str, Any]]  # the first MAX_LISTED_REQUESTS mismatched requests
    mismatched_total: int
    bad: list[dict[str, Any]]  # the first MAX_LISTED_REQUESTS bad records
    summary: TriageSummary

    def state(self, c: Cluster) -> _ClusterState:
        return self.states[(c.engine, c.reference, c.key)]

    def cluster_status(self, c: Cluster) -> dict[str, Any]:
        return self.state(c).status


def committed_findings(out: Path, store, markers: dict[int, dict]) -> Iterator[tuple[int, dict, dict]]:
    """``(shard index, record, its triage data)`` of every committed finding, in plan order."""
    records = committed_records(out)
    for shard, extra in store.extras(markers):
        for meta in extra.get("findings", []):
            record = next(records, None)
            if record is None or record.get("finding_key") != meta["finding_key"]:
                raise UsageError(f"{out}: shard {shard}'s committed findings and their triage data disagree "
                                 "(a damaged run folder)")
            yield shard, record, meta


def _static_reason(record: dict[str, Any], meta: dict[str, Any]) -> str | None:
    """Why a finding is not minimised, when that is known before minimising (None: a candidate)."""
    if record["kind"] == "bad-input":
        return SKIP_NO_INPUT
    if record["kind"] != "ids" or meta.get("replay") is None:
        return meta.get("note") or SKIP_NO_ENGINE
    return None


class ShadowTriage:
    def __init__(self, rules: list[TagRule], *, redact: bool = False, per_cluster: int = 1, budget_s: float = 60.0,
                 known: KnownClusters | None = None, allowlist=None):
        self.rules, self.redact, self.per_cluster, self.budget_s = rules, redact, per_cluster, budget_s
        self.known = known or KnownClusters()
        self.allowlist = allowlist
        self.states: dict[Ident, _ClusterState] = {}
        self.minimized: dict[int, dict[str, Any]] = {}  # finding index -> its minimised block
        self.tried: dict[int, str] = {}  # candidates not minimised -> why

    def run(self, out: Path, plan, store, markers: dict[int, dict], engine) -> TriageOutcome:
        out = Path(out)
        records = self._collect(out, store, markers)
        started = time.monotonic()
        self._minimise(out, plan, engine)
        for st in self.states.values():
            self._settle(st)
        summary = TriageSummary(clusters=[st.cluster for st in self.states.values()], records=records,
                                minimised=len(self.minimized), seconds=time.monotonic() - started,
                                budget_s=self.budget_s)
        outcome = self._write(out, store, markers, summary)
        atomic.write_json(out / "clusters.json", {"schema": CLUSTERS_SCHEMA, "clusters": [
            {**c.as_dict(), "status": self.states[(c.engine, c.reference, c.key)].status["status"]}
            for c in summary.clusters]})
        atomic.write_json(out / "triage.json", {**summary.as_info(), "stage": "verify shadow"}, ensure_ascii=True)
        return outcome

    # --- pass 1: clusters, facts, the smallest member and the candidates of each ----------------
    def _collect(self, out: Path, store, markers) -> int:
        n = 0
        for index, (shard, record, meta) in enumerate(committed_findings(out, store, markers)):
            n += 1
            key = signature_key(meta["signature"])
            ident = (record["engine"], record["reference"], key)
            st = self.states.get(ident)
            if st is None:
                c = Cluster(key, record["engine"], record["reference"], meta["signature"])
                if self.rules:
                    c.tags, c.links = tags_for(c.engine, c.key, self.rules)
                st = self.states[ident] = _ClusterState(c)
            st.cluster.count += 1
            if len(st.cluster.sample_ids) < MAX_REQUEST_IDS:
                st.cluster.sample_ids.append(record.get("sample_id"))
            st.facts.add(member_of(record))
            why = _static_reason(record, meta)
            if record["kind"] == "bad-input":
                continue
            chars = int(meta["chars"])
            if st.smallest is None or chars < st.smallest[0]:
                st.smallest = (chars, index, self._reproducer(record, meta.get("note")), why)
            if why is not None:
                continue
            stored = {k: record.get(k) for k in ("sample_id", "input_key", "input", "input_file")}
            st.candidates.append(_Candidate(chars, index, shard, (record.get("shadow") or {}).get("position", ""),
                                            stored, meta["replay"]))
            st.candidates.sort(key=lambda cand: (cand.chars, cand.index))
            del st.candidates[self.per_cluster:]  # the rest: not first in cluster
        return n

    def _reproducer(self, record: dict[str, Any], note: str | None) -> dict[str, Any]:
        """A cluster's reproducer when none is minimised: the record's input, or its redacted form."""
        doc = {"minimized": False, "why": note, "request_id": (record.get("shadow") or {}).get("request_id"),
               "finding_key": record["finding_key"], "input_key": record.get("input_key"),
               "first_difference": {k: record[k] for k in LOCATED if k in record}}
        if record.get("input_redacted") is not None:
            return {**doc, "redacted": record["input_redacted"]}
        return {**doc, "input": record.get("input"), "input_file": record.get("input_file")}

    # --- minimising, against the replay engines, within one budget -------------------------------
    def _minimise(self, out: Path, plan, engine) -> None:
        work = sorted((st for st in self.states.values() if st.candidates),
                      key=lambda st: (-st.cluster.count, st.cluster.key))
        if not work:
            return
        if self.budget_s <= 0:
            for st in work:
                for cand in st.candidates:
                    self.tried[cand.index] = SKIP_BUDGET
            return
        from verify.executors.pool import EnginePool

        samples = self._samples(out, plan, [cand for st in work for cand in st.candidates])
        started = time.monotonic()
        pool = EnginePool(engine)
        try:
            for n, st in enumerate(work):
                c = st.cluster
                for cand in st.candidates:
                    remaining = self.budget_s - (time.monotonic() - started)
                    if remaining <= 0:
                        self.tried[cand.index] = SKIP_BUDGET
                        continue
                    sample = samples.get(cand.index)
                    reference, replay = pool.try_get(plan.reference), pool.try_get(cand.replay)
                    if sample is None or isinstance(reference, str) or isinstance(replay, str):
                        self.tried[cand.index] = SKIP_INPUT_GONE if sample is None else SKIP_UNAVAILABLE
                        continue
                    share = remaining / (len(work) - n)
                    result = minimise(sample, still_fails("ids", reference, replay), budget_s=share)
                    block = minimized_fields("ids", reference, replay, result) if result.reproduced else None
                    if block is None:
                        self.tried[cand.index] = SKIP_BUDGET if result.stopped_on_budget and not result.reproduced \
                            else SKIP_NOT_REPRODUCED
                        continue
                    block["replay_engine"] = replay.spec
                    cause = cause_key(c.engine, c.kind, block["input"])
                    if self.redact:
                        block = redact_minimized(block, result.initial_chars)
                    self.minimized[cand.index] = block
                    if c.example is None:
                        c.example, c.cause = block, cause
        finally:
            pool.close()

    def _samples(self, out: Path, plan, candidates: list[_Candidate]) -> dict[int, Sample]:
        """The candidates' inputs: from their records, else (redacted) read again from their shard."""
        found: dict[int, Sample] = {}
        by_shard: dict[int, dict[str, _Candidate]] = {}
        for cand in candidates:
            if cand.stored.get("input") is not None or cand.stored.get("input_file"):
                found[cand.index] = load_record_input(cand.stored, out)
            else:
                by_shard.setdefault(cand.shard, {})[cand.position] = cand
        for shard, wanted in by_shard.items():
            for position, sample in reread(plan.shards[shard], wanted).items():
                found[wanted[position].index] = sample
        return found

    # --- statuses, reproducers, and pass 2: triage.jsonl and the report's lists ------------------
    def _settle(self, st: _ClusterState) -> None:
        c = st.cluster
        rule = self.allowlist.match(c.engine, c.key) if self.allowlist is not None else None
        if rule is not None:
            st.status = {"status": "allowlisted", "reason": rule.reason,
                         "expires": rule.expires.isoformat() if rule.expires else None}
        elif self.known.match(c):
            st.status = {"status": "known", "first_seen": self.known.first_seen.get((c.engine, c.key))}
        else:
            st.status = {"status": "new"}
        if c.example is None and st.smallest is not None:
            _, index, doc, why = st.smallest
            st.reproducer = {**doc, "why": self._reason(index, why) or doc["why"]}

    def _reason(self, index: int, why: str | None) -> str | None:
        """Why finding ``index`` was not minimised (``why``: its reason known before minimising)."""
        if why is not None:
            return why
        if index in self.minimized:
            return None
        return self.tried.get(index, SKIP_PER_CLUSTER)

    def _write(self, out: Path, store, markers, summary: TriageSummary) -> TriageOutcome:
        mismatched: list[dict[str, Any]] = []
        bad: list[dict[str, Any]] = []
        total = 0
        skipped: Counter = Counter()

        def lines() -> Iterator[str]:
            nonlocal total
            for index, (_, record, meta) in enumerate(committed_findings(out, store, markers)):
                key = signature_key(meta["signature"])
                st = self.states[(record["engine"], record["reference"], key)]
                c = st.cluster
                entry = {"finding_key": record["finding_key"], "signature": meta["signature"], "cluster": key,
                         "tags": c.tags, "cause": c.cause, "minimized": self.minimized.get(index),
                         "status": st.status["status"]}
                reason = self._reason(index, _static_reason(record, meta))
                if reason is not None:
                    entry["minimized_skipped"] = reason
                    skipped[reason] += 1
                m = member_of(record)
                if record["kind"] == "bad-input":
                    if len(bad) < MAX_LISTED_REQUESTS:
                        bad.append({"position": m["position"], "reason": m.get("reason"), "cluster": key})
                else:
                    total += 1
                    if len(mismatched) < MAX_LISTED_REQUESTS:
                        mismatched.append({"request_id": m["request_id"], "timestamp": m["timestamp"],
                                           "version": m["version"], "kind": record["kind"], "cluster": key,
                                           "finding_key": m["finding_key"], "status": st.status["status"],
                                           **({"session": m["session"]} if m.get("session") else {})})
                yield jsonl.line(entry)

        atomic.write_lines(out / "triage.jsonl", lines())
        summary.skipped = dict(skipped)
        return TriageOutcome(summary.clusters, self.states, mismatched, total, bad, summary)


def reread(shard, wanted: dict[str, Any]) -> dict[str, Sample]:
    """The samples (a session turn: its transcript) at the ``wanted`` positions of a shadow shard,
    read again from its file, each only when its ``input_key`` is the one its finding recorded."""
    from verify.keys import input_key
    from verify.shadow.run import shard_items

    found: dict[str, Sample] = {}
    try:
        for item in shard_items(shard.records(), lambda bad: None):
            cand = wanted.get(item.record.position)
            if cand is not None and input_key(item.sample.segments) == cand.stored.get("input_key"):
                found[item.record.position] = item.sample
                if len(found) == len(wanted):
                    break
    except Exception:  # the file moved or changed since the run: those inputs are gone
        pass
    return found
