"""Shadow triage: classify, cluster, minimise and de-duplicate the findings of ``verify shadow``.

    triage = ShadowTriage(load_tags(), redact=False)
    triage.add(written_record, full_sample, mismatch)     # as findings are written
    outcome = triage.finish(reference, budget_s, known, allowlist)
    outcome.write(out)                                   # triage.jsonl, clusters.json, triage.json

The same stage as ``verify triage`` (``verify.triage``: signatures, cluster keys and tags
from ``verify.classify``, ``minimise`` with ``still_fails``/``minimized_fields``, the same
files and schemas), with what shadow findings need: production's tokenizer cannot be
re-run, so a finding is minimised only against a *replay engine* that reproduced
production's output on its full input (``verify.shadow.compare``); otherwise its cluster's
reproducer is the smallest member's input (under ``--redact``: its hashes and the window
around the first difference) and the reason is said. It works on the findings as they
stream past (signatures then; inputs kept only for each cluster's smallest members), so
under ``--redact`` no full input is ever written to OUT for triage to read back.

Each cluster gets a status: ``allowlisted`` (a row of ``--allowlist`` accepts it),
``known`` (``--known-clusters PREVIOUS_OUT`` had it: same engine and key, or the same
cause, i.e. minimised reproducer) or ``new``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify import jsonl
from verify.classify import Cluster, TagRule, cause_key, cluster, signature, signature_key
from verify.errors import UsageError
from verify.minimize import minimise
from verify.sample import Sample
from verify.shadow.redact import redact_minimized
from verify.triage import (CLUSTERS_SCHEMA, SKIP_BUDGET, SKIP_NO_ENGINE, SKIP_NO_INPUT, SKIP_NOT_REPRODUCED,
                           SKIP_PER_CLUSTER, TriageSummary, minimized_fields, read_clusters, still_fails)

SHADOW_REPORT = "shadow.json"
LOCATED = ("token_index", "byte_offset", "char_offset", "expected_len", "actual_len", "expected", "actual", "error")


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


@dataclass
class _Candidate:
    chars: int
    index: int
    sample: Sample
    replay: Any  # the executor that reproduced production on this input


@dataclass
class TriageOutcome:
    clusters: list[Cluster]
    light: list[dict[str, Any]]
    members: list[dict[str, Any]]  # per finding: what the report shows (no text)
    minimized: dict[int, dict[str, Any]]
    skipped: dict[int, str]
    status: dict[int, dict[str, Any]]  # id(cluster) -> {"status", "reason", ...}
    reproducers: dict[int, dict[str, Any]]  # id(cluster) -> its reproducer when none was minimised
    summary: TriageSummary

    def cluster_status(self, c: Cluster) -> dict[str, Any]:
        return self.status[id(c)]

    def write(self, out: Path) -> None:
        by_index = {i: c for c in self.clusters for i in c.members}
        lines = []
        for i, rec in enumerate(self.light):
            c = by_index[i]
            entry = {"finding_key": rec["finding_key"], "signature": rec["signature"], "cluster": rec["cluster"],
                     "tags": c.tags, "cause": c.cause, "minimized": self.minimized.get(i),
                     "status": self.status[id(c)]["status"]}
            if i in self.skipped:
                entry["minimized_skipped"] = self.skipped[i]
            lines.append(jsonl.line(entry))
        out = Path(out)
        (out / "triage.jsonl").write_text("".join(lines), encoding="utf-8")
        clusters = [{**c.as_dict(), "status": self.status[id(c)]["status"]} for c in self.clusters]
        (out / "clusters.json").write_text(json.dumps({"schema": CLUSTERS_SCHEMA, "clusters": clusters}, indent=2,
                                                      ensure_ascii=False) + "\n", encoding="utf-8")
        info = {**self.summary.as_info(), "stage": "verify shadow"}
        (out / "triage.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


class ShadowTriage:
    def __init__(self, rules: list[TagRule], *, redact: bool = False, per_cluster: int = 1):
        self.rules = rules
        self.redact = redact
        self.per_cluster = per_cluster
        self.light: list[dict[str, Any]] = []
        self.members: list[dict[str, Any]] = []
        self.skipped: dict[int, str] = {}
        self.smallest: dict[tuple, tuple[int, int, dict[str, Any]]] = {}  # ident -> (chars, index, reproducer)
        self.candidates: dict[tuple, list[_Candidate]] = {}

    def add(self, record: dict[str, Any], sample: Sample | None, replay=None, replay_note: str | None = None) -> None:
        """A written finding record, the full input it came from (None for a bad record) and the
        replay engine that reproduced it (None, with ``replay_note`` saying why)."""
        text = sample.text if sample is not None else ""
        sig = signature(record, text)
        key = signature_key(sig)
        index = len(self.light)
        self.light.append({"engine": record["engine"], "reference": record["reference"], "kind": record["kind"],
                           "sample_id": record["sample_id"], "finding_key": record["finding_key"],
                           "signature": sig, "cluster": key})
        shadow = record.get("shadow") or {}
        self.members.append({"request_id": shadow.get("request_id", record["sample_id"]),
                             "timestamp": shadow.get("timestamp"),
                             "version": (shadow.get("tokenizer") or {}).get("version"),
                             "vocab_matches_reference": shadow.get("vocab_matches_reference"),
                             "digest_only": shadow.get("recorded") == "digest" and record.get("token_index") is None,
                             "session": shadow.get("session"), "finding_key": record["finding_key"],
                             "position": shadow.get("position", record["sample_id"]),
                             "reason": (record.get("error") or {}).get("message") if record["kind"] == "bad-input"
                             else None})
        ident = (record["engine"], record["reference"], key)
        if sample is None:
            self.skipped[index] = SKIP_NO_INPUT
            return
        chars = len(text)
        if ident not in self.smallest or chars < self.smallest[ident][0]:
            self.smallest[ident] = (chars, index, self._reproducer(record, replay_note))
        if record["kind"] != "ids" or replay is None:
            self.skipped[index] = replay_note or SKIP_NO_ENGINE
            return
        kept = self.candidates.setdefault(ident, [])
        kept.append(_Candidate(chars, index, sample, replay))
        kept.sort(key=lambda cand: (cand.chars, cand.index))
        for evicted in kept[self.per_cluster:]:
            self.skipped[evicted.index] = SKIP_PER_CLUSTER
        del kept[self.per_cluster:]

    def _reproducer(self, record: dict[str, Any], note: str | None) -> dict[str, Any]:
        """A cluster's reproducer when none is minimised: the record's input, or its redacted form."""
        doc = {"minimized": False, "why": note, "request_id": (record.get("shadow") or {}).get("request_id"),
               "finding_key": record["finding_key"], "input_key": record.get("input_key"),
               "first_difference": {k: record[k] for k in LOCATED if k in record}}
        if record.get("input_redacted") is not None:
            return {**doc, "redacted": record["input_redacted"]}
        return {**doc, "input": record.get("input"), "input_file": record.get("input_file")}

    def finish(self, reference, budget_s: float, known: KnownClusters, allowlist=None) -> TriageOutcome:
        started = time.monotonic()
        clusters = cluster(self.light, self.rules)
        minimized: dict[int, dict[str, Any]] = {}
        work = sorted((c for c in clusters if self.candidates.get((c.engine, c.reference, c.key))),
                      key=lambda c: (-c.count, c.key))
        for n, c in enumerate(work):
            for cand in self.candidates[(c.engine, c.reference, c.key)]:
                remaining = budget_s - (time.monotonic() - started)
                if remaining <= 0:
                    self.skipped[cand.index] = SKIP_BUDGET
                    continue
                share = remaining / (len(work) - n)
                result = minimise(cand.sample, still_fails("ids", reference, cand.replay), budget_s=share)
                block = minimized_fields("ids", reference, cand.replay, result) if result.reproduced else None
                if block is None:
                    self.skipped[cand.index] = SKIP_BUDGET if result.stopped_on_budget and not result.reproduced \
                        else SKIP_NOT_REPRODUCED
                    continue
                block["replay_engine"] = cand.replay.spec
                cause = cause_key(c.engine, c.kind, block["input"])
                if self.redact:
                    block = redact_minimized(block, result.initial_chars)
                minimized[cand.index] = block
                if c.example is None:
                    c.example, c.cause = block, cause
        status, reproducers = {}, {}
        for c in clusters:
            rule = allowlist.match(c.engine, c.key) if allowlist is not None else None
            if rule is not None:
                status[id(c)] = {"status": "allowlisted", "reason": rule.reason,
                                 "expires": rule.expires.isoformat() if rule.expires else None}
            elif known.match(c):
                status[id(c)] = {"status": "known", "first_seen": known.first_seen.get((c.engine, c.key))}
            else:
                status[id(c)] = {"status": "new"}
            ident = (c.engine, c.reference, c.key)
            if c.example is None and ident in self.smallest:
                _, index, doc = self.smallest[ident]
                reproducers[id(c)] = {**doc, "why": self.skipped.get(index) or doc["why"]}
        summary = TriageSummary(clusters=clusters, records=len(self.light), minimised=len(minimized),
                                seconds=time.monotonic() - started, budget_s=budget_s)
        for reason in self.skipped.values():
            summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
        return TriageOutcome(clusters, self.light, self.members, minimized, dict(self.skipped), status, reproducers,
                             summary)
