"""Shadow triage: classify, cluster, minimise and de-duplicate the committed findings of ``verify shadow``.

    outcome = ShadowTriage(load_tags(), redact=..., per_cluster=1, budget_s=60, known=..., allowlist=...)
              .run(out, plan, store, markers, engine_options)   # triage.jsonl, clusters.json, triage.json

The driver's triage stage for the shadow hunt (``verify.shadow.hunt``): it reads only what
the shards committed -- the findings (``verify.triage.committed_records``, plan order)
and, beside each shard's, its extra's ``findings`` list (``verify.shadow.run``): each
finding's signature (computed in the worker on the full input, so a redacted record
clusters as it would unredacted), its input's length and the replay engine that reproduced
it, or why none did. It is ``verify triage`` (``verify.triage``: cluster keys and tags from
``verify.classify``, ``verify.reproduce`` to minimise, ``verify.causes`` to explain, the same files
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

Findings are first grouped by *symptom* (the character classes at the first difference:
cheap, and a way to choose what to minimise); each symptom cluster's minimised reproducer is
then *explained* (``verify.causes``, asking the reference and the replay engine), and symptom
clusters of one cause are one cluster whose key is that cause -- the key ``--known-clusters``
and ``--allowlist`` match. A new bug therefore never inherits the key of a known one because
both first differ between a letter and a space; a cluster that could not be minimised is
keyed by its smallest member's input, so it stays new until the same input comes again.

Each cluster gets a status: ``allowlisted`` (a row of ``--allowlist`` accepts it),
``known`` (``--known-clusters PREVIOUS_OUT`` had it: same engine and cause key) or ``new``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from verify import atomic, jsonl
from verify.cause_clusters import MAX_MEMBERS, join_by_cause
from verify.causes import Cause, Probe, explain
from verify.classify import Cluster, TagRule, signature_key, tags_for
from verify.errors import UsageError
from verify.executors.pool import EnginePool
from verify.outcome import FindingKind
from verify.reproduce import reproduce
from verify.rundir.layout import RunFolder
from verify.sample import Sample
from verify.shadow.redact import redact_minimized
from verify.shadow.schema import parse_timestamp
from verify.triage import (CLUSTERS_SCHEMA, SKIP_BUDGET, SKIP_NO_ENGINE, SKIP_NO_INPUT,
                           SKIP_PER_CLUSTER, SKIP_UNAVAILABLE, TriageSummary, committed_records,
                           MAX_GROUPS, first_token, load_record_input, probe_of, read_clusters)

LOCATED = ("token_index", "byte_offset", "char_offset", "expected_len", "actual_len", "expected", "actual", "error")
MAX_REQUEST_IDS = 20  # request ids listed per cluster
MAX_LISTED_REQUESTS = 10_000  # mismatched requests (and bad records) listed in shadow.json
SKIP_INPUT_GONE = "input not found again in its shadow file"
Ident = tuple  # (engine, reference, cause key); a symptom group's: (engine, reference, symptom key, first token)


class KnownClusters:
    """The clusters of a previous OUT (``clusters.json``) and, when it was a shadow run, when
    each was first seen (``shadow.json``)."""

    def __init__(self, out: Path | None = None):
        self.keys: set[tuple[str, str]] = set()  # (engine, cause key)
        self.first_seen: dict[tuple[str, str], str] = {}
        self.clusters: list[dict[str, Any]] = []
        self.out = out
        if out is None:
            return
        if not RunFolder(out).clusters.is_file():
            raise UsageError(f"--known-clusters {out}: no clusters.json there (give a previous --out)")
        try:
            self.clusters = read_clusters(out)
            report = RunFolder(out).shadow
            previous = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
        except (OSError, ValueError) as exc:
            raise UsageError(f"--known-clusters {out}: unreadable ({exc})") from None
        for c in self.clusters:
            self.keys.add((c.get("engine"), c.get("key")))
        for c in previous.get("clusters", []):
            if c.get("first_seen"):
                self.first_seen[(c.get("engine"), c.get("key"))] = c["first_seen"]

    def match(self, c: Cluster) -> bool:
        return (c.engine, c.key) in self.keys


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

    def merge(self, other: "Facts") -> None:
        """Add the facts of another cluster's members (symptom clusters joined by one cause)."""
        for stamp in (other.first, other.last):
            if stamp is not None:
                self.first = stamp if self.first is None else min(self.first, stamp)
                self.last = stamp if self.last is None else max(self.last, stamp)
        self.versions |= other.versions
        self.request_ids += other.request_ids[:max(0, MAX_REQUEST_IDS - len(self.request_ids))]
        self.digest_only += other.digest_only
        self.session_turns += other.session_turns
        self.vocab_differs |= other.vocab_differs
        self.later_turns |= other.later_turns

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
    cause: Cause | None = None  # a symptom cluster: what explains its minimised reproducer; joined: its cause
    members: list[Cluster] = field(default_factory=list)  # a joined cluster: its symptom clusters

    def as_dict(self) -> dict[str, Any]:
        """The cluster as clusters.json keeps it."""
        doc = {**self.cluster.as_dict(), "status": self.status["status"]}
        if self.cause is not None:
            doc.update({"cause_kind": self.cause.kind, "name": self.cause.name, "explanation": self.cause.as_dict(),
                        "members": [{"symptom": m.key, "count": m.count} for m in self.members[:MAX_MEMBERS]],
                        "members_total": len(self.members)})
        return doc


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
        self.states: dict[Ident, _ClusterState] = {}  # by symptom, then (``_join``) by cause
        self.joined: dict[Ident, _ClusterState] = {}  # symptom group ident -> its cause cluster's state
        self.groups: dict[tuple, list[str]] = {}  # (engine, reference, symptom key) -> its first tokens
        self.minimized: dict[int, dict[str, Any]] = {}  # finding index -> its minimised block
        self.tried: dict[int, str] = {}  # candidates not minimised -> why

    def run(self, out: Path, plan, store, markers: dict[int, dict], engine) -> TriageOutcome:
        out = Path(out)
        records = self._collect(out, store, markers)
        started = time.monotonic()
        pool = EnginePool(engine)  # engines start only for what is minimised and explained
        try:
            self._minimize(out, plan, pool)
        finally:
            pool.close()
        self._join()
        for st in self.states.values():
            self._settle(st)
        summary = TriageSummary(clusters=[st.cluster for st in self.states.values()], records=records,
                                minimized=len(self.minimized), seconds=time.monotonic() - started,
                                budget_s=self.budget_s)
        outcome = self._write(out, store, markers, summary)
        folder = RunFolder(out)
        atomic.write_json(folder.clusters, {"schema": CLUSTERS_SCHEMA, "clusters": [
            self.states[(c.engine, c.reference, c.key)].as_dict() for c in summary.clusters]})
        atomic.write_json(folder.triage_summary, {**summary.as_info(), "stage": "verify shadow"}, ensure_ascii=True)
        return outcome

    # --- pass 1: clusters, facts, the smallest member and the candidates of each ----------------
    def _collect(self, out: Path, store, markers) -> int:
        n = 0
        for index, (shard, record, meta) in enumerate(committed_findings(out, store, markers)):
            n += 1
            ident = self._group(record, meta)
            st = self.states.get(ident)
            if st is None:
                c = Cluster(ident[2], record["engine"], record["reference"], meta["signature"])
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

    def _group(self, record: dict[str, Any], meta: dict[str, Any]) -> Ident:
        """A finding's symptom group: its symptom and its first differing token (two bugs met between
        the same character classes are two groups, each minimised), at most ``MAX_GROUPS`` per
        symptom (the rest go to its first). The same answer in both passes over the findings."""
        base = (record["engine"], record["reference"], signature_key(meta["signature"]))
        token = first_token(record)
        tokens = self.groups.setdefault(base, [])
        if token not in tokens:
            if len(tokens) >= MAX_GROUPS:
                token = tokens[0]
            else:
                tokens.append(token)
        return (*base, token)

    def _reproducer(self, record: dict[str, Any], note: str | None) -> dict[str, Any]:
        """A cluster's reproducer when none is minimised: the record's input, or its redacted form."""
        doc = {"minimized": False, "why": note, "request_id": (record.get("shadow") or {}).get("request_id"),
               "finding_key": record["finding_key"], "input_key": record.get("input_key"),
               "first_difference": {k: record[k] for k in LOCATED if k in record}}
        if record.get("input_redacted") is not None:
            return {**doc, "redacted": record["input_redacted"]}
        return {**doc, "input": record.get("input"), "input_file": record.get("input_file")}

    # --- minimising, against the replay engines, within one budget -------------------------------
    def _minimize(self, out: Path, plan, pool: EnginePool) -> None:
        """Minimise each symptom cluster's candidates against its replay engine, within the budget,
        and explain the first minimised reproducer of each (before any redaction)."""
        work = sorted((st for st in self.states.values() if st.candidates),
                      key=lambda st: (-st.cluster.count, st.cluster.key))
        if not work:
            return
        if self.budget_s <= 0:
            for st in work:
                for cand in st.candidates:
                    self.tried[cand.index] = SKIP_BUDGET
            return
        samples = self._samples(out, plan, [cand for st in work for cand in st.candidates])
        started = time.monotonic()
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
                # as every triage: bounded by calls, each step keeping the finding's first-difference
                # signature (never slipping to another bug of the same replay engine)
                block, why = reproduce({"kind": "ids", "engine": c.engine, "reference": c.reference}, sample,
                                       reference, replay, share)
                if block is None:
                    self.tried[cand.index] = why
                    continue
                block["replay_engine"] = replay.spec
                if c.example is None:
                    st.cause = explain(c.kind, None, block, probe_of(reference, replay), symptom=c.key)
                if self.redact:
                    block = redact_minimized(block, block["initial_chars"])
                self.minimized[cand.index] = block
                if c.example is None:
                    c.example = block

    def _join(self) -> None:
        """Symptom clusters of one cause become one cluster keyed by it (``verify.cause_clusters``);
        ``self.states`` is by cause from here on, ``self.joined`` maps each symptom to it."""
        groups = list(self.states.items())
        symptoms = [st for _, st in groups]
        by_cluster = {id(st.cluster): st for st in symptoms}

        def explain_one(c: Cluster) -> Cause:
            st = by_cluster[id(c)]
            if st.cause is not None:
                return st.cause
            if c.kind == FindingKind.BAD_INPUT:  # the producer's records break the schema: the reason is the cause
                return Cause("bad-input", c.key, "records that break verify.shadow/1")
            input_key = (st.smallest[2].get("input_key") or "") if st.smallest else ""
            return explain(c.kind, c.signature.get("error_type"), None, Probe(), symptom=c.key,
                           input_key=input_key or c.key)

        joined, of = join_by_cause([st.cluster for st in symptoms], explain_one, self.rules)
        states: dict[int, _ClusterState] = {}
        for cc in joined:
            c = Cluster(cc.key, cc.engine, cc.reference, cc.signature, count=cc.count, sample_ids=list(cc.sample_ids),
                        tags=cc.tags, links=cc.links, example=cc.example, cause=cc.key)
            states[id(cc)] = _ClusterState(c, cause=cc.cause, members=list(cc.members))
        for ident, st in groups:
            joined_state = states[id(of[id(st.cluster)])]
            joined_state.facts.merge(st.facts)
            if st.smallest is not None and (joined_state.smallest is None or
                                            st.smallest[:2] < joined_state.smallest[:2]):
                joined_state.smallest = st.smallest
            self.joined[ident] = joined_state
        self.states = {(st.cluster.engine, st.cluster.reference, st.cluster.key): st for st in states.values()}

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
                ident = self._group(record, meta)
                symptom = ident[2]
                st = self.joined[ident]
                c = st.cluster
                key = c.key
                entry = {"finding_key": record["finding_key"], "signature": meta["signature"], "symptom": symptom,
                         "cluster": key, "tags": c.tags, "cause": c.cause, "cause_kind": st.cause.kind,
                         "minimized": self.minimized.get(index), "status": st.status["status"]}
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

        atomic.write_lines(RunFolder(out).triage, lines())
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
