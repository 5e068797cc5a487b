"""Which clusters a search has already reported, so that one bug does not hide another.

A finding's cluster is ``(engine, key)`` with ``key`` the signature key triage
groups records by (``verify.classify.signature`` + ``signature_key``, computed
from the finding's fields and its input exactly as triage computes it from the
record). A cluster is *known* when

  * this run has written a finding of it (status ``found``),
  * a row of the ``--allowlist`` file accepts it (status ``allowlist``, ``verify.allowlist``), or
  * a rule of ``adversarial/tags.toml`` tags it (status ``tags``). Rows whose tag starts
    with "example" are hints about what a signature may mean, not known bugs: they tag
    clusters in triage but never mask one.

``ClusterBook.observe`` counts every finding in its cluster (``hits``; ``masked``
counts the hits of a cluster that was already known) and returns only the findings of
clusters not known yet: those are the ones worth stopping, shrinking and writing for.
Clusters hit but never written (the budget ended first) are listed as ``pending``.

One bug met in several surroundings makes several clusters (the key describes where
the first difference falls). So a search may name a cluster's *cause*: the key of its
minimised reproducer (``verify.classify.cause_key``). A new cluster whose cause is
that of a cluster already found is known too (status ``same-cause``, ``same_as``
naming the found one): counted and masked, not written, and not counted against the
engine's budget of found clusters.

One exception to the triage key: a divergence that only a stress shape shows (the
sample alone, or the text around the probe of a threshold input, agrees with the
reference: ``fields["stress"]["only"]``, see ``verify.adversarial.fuzz.stress_phase``) is one
cluster per engine and shape, ``KIND/stress-only/SHAPE`` (``ids/stress-only/big-batch``,
``ids/stress-only/cut-25000``), whatever text the sample holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from verify.allowlist import Allowlist
from verify.classify import TagRule, signature, signature_key, tags_for
from verify.findings import Finding

STRESS_ONLY = "stress-only"


def cluster_key(finding: Finding) -> str:
    """The cluster key of a finding: what triage computes from its record."""
    stress = finding.fields.get("stress")
    if isinstance(stress, dict) and stress.get("only"):
        return f"{finding.kind}/{STRESS_ONLY}/{stress['only']}"
    record = {"kind": finding.kind, **finding.fields}  # signature() reads kind, error, char_offset
    return signature_key(signature(record, finding.sample.text))


@dataclass
class Entry:
    engine: str
    key: str
    status: str  # found | same-cause | allowlist | tags | pending
    hits: int = 0  # examples (and stress samples) whose finding fell in this cluster
    masked: int = 0  # hits while the cluster was already known: counted, not written
    sample_id: str | None = None  # the written finding's sample (or the first hit's)
    finding_key: str | None = None
    source: str | None = None  # what wrote it: hypothesis | stress
    reason: str | None = None  # the allowlist row's reason
    tags: list[str] = field(default_factory=list)
    cause: str | None = None  # cause_key of the minimised reproducer, when the search computed one
    minimized: list | None = None  # that reproducer's segments
    same_as: str | None = None  # same-cause: the found cluster with that cause

    def as_dict(self) -> dict[str, Any]:
        doc = {"engine": self.engine, "cluster": self.key, "status": self.status, "hits": self.hits,
               "masked": self.masked, "sample_id": self.sample_id}
        if self.finding_key:
            doc["finding_key"] = self.finding_key
            doc["source"] = self.source
        if self.reason:
            doc["reason"] = self.reason
        if self.tags:
            doc["tags"] = self.tags
        if self.cause:
            doc["cause"] = self.cause
            doc["minimized"] = self.minimized
        if self.same_as:
            doc["same_as"] = self.same_as
        return doc


class ClusterBook:
    def __init__(self, allowlist: Allowlist | None = None, tags: Sequence[TagRule] = ()):
        self.allowlist = allowlist or Allowlist()
        self.tags = [rule for rule in tags if rule.known]  # rows without known = true only tag
        self.entries: dict[tuple[str, str], Entry] = {}
        self.causes: dict[tuple[str, str], Entry] = {}  # (engine, cause) -> the found cluster

    def key(self, finding: Finding) -> str:
        return cluster_key(finding)

    def _entry(self, engine: str, key: str) -> Entry:
        entry = self.entries.get((engine, key))
        if entry is not None:
            return entry
        rule = self.allowlist.match(engine, key)
        tags, _ = tags_for(engine, key, self.tags)
        if rule is not None:
            entry = Entry(engine, key, "allowlist", reason=rule.reason, tags=tags)
        elif tags:
            entry = Entry(engine, key, "tags", tags=tags)
        else:
            entry = Entry(engine, key, "pending")
        self.entries[(engine, key)] = entry
        return entry

    def known_key(self, engine: str, key: str) -> bool:
        return self._entry(engine, key).status != "pending"

    def known(self, finding: Finding, key: str | None = None) -> bool:
        return self._entry(finding.engine, key or self.key(finding)).status != "pending"

    def observe(self, findings: Iterable[Finding], count: bool = True, keys: Sequence[str] | None = None
                ) -> list[Finding]:
        """Count each finding in its cluster (when ``count``); return those of clusters not known yet.
        ``keys``: the findings' cluster keys when the caller has them already."""
        new = []
        for i, finding in enumerate(findings):
            entry = self._entry(finding.engine, keys[i] if keys is not None else self.key(finding))
            if count:
                entry.hits += 1
                if entry.sample_id is None:
                    entry.sample_id = finding.sample.id
            if entry.status == "pending":
                new.append(finding)
            elif count:
                entry.masked += 1
        return new

    def add(self, finding: Finding, record: dict[str, Any], source: str, cause: tuple[str, list] | None = None,
            key: str | None = None) -> Entry:
        """The finding was written: its cluster (and its cause, when given) is known from now on."""
        entry = self._entry(finding.engine, key or self.key(finding))
        assert entry.status == "pending", f"cluster {entry.key} of {entry.engine} is already {entry.status}"
        entry.status, entry.source = "found", source
        entry.sample_id, entry.finding_key = finding.sample.id, record.get("finding_key")
        entry.hits = max(entry.hits, 1)
        if cause is not None:
            entry.cause, entry.minimized = cause
            self.causes.setdefault((finding.engine, entry.cause), entry)
        return entry

    def same_cause(self, finding: Finding, cause: tuple[str, list] | None) -> Entry | None:
        """The found cluster of ``finding``'s engine with this cause, if any."""
        return self.causes.get((finding.engine, cause[0])) if cause is not None else None

    def fold(self, finding: Finding, cause: tuple[str, list], into: Entry) -> Entry:
        """``finding``'s new cluster has the cause of the found cluster ``into``: known from now on."""
        entry = self._entry(finding.engine, self.key(finding))
        assert entry.status == "pending", f"cluster {entry.key} of {entry.engine} is already {entry.status}"
        entry.status, entry.same_as = "same-cause", into.key
        entry.cause, entry.minimized = cause
        entry.masked = entry.hits  # none of its hits was written
        if entry.sample_id is None:
            entry.sample_id = finding.sample.id
        return entry

    def found(self, engine: str) -> int:
        """Distinct clusters written for ``engine`` in this run."""
        return sum(1 for e in self.entries.values() if e.engine == engine and e.status == "found")

    def masked(self, engine: str | None = None) -> int:
        return sum(e.masked for e in self.entries.values() if engine is None or e.engine == engine)

    def as_list(self) -> list[dict[str, Any]]:
        """Every cluster hit or written, found ones first, then by hits."""
        order = {"found": 0, "same-cause": 1, "allowlist": 2, "tags": 3, "pending": 4}
        entries = [e for e in self.entries.values() if e.hits or e.status == "found"]
        entries.sort(key=lambda e: (order[e.status], e.engine, -e.hits, e.key))
        return [e.as_dict() for e in entries]
