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

``ClusterBook.observe`` counts every finding in its cluster (``hits``; ``masked`` counts
the hits of a cluster that was already known) and returns only the findings of clusters
not known yet: those are the ones worth stopping, shrinking and writing for. Clusters hit
but never written (the budget ended first) are listed as ``pending``. A book keeps at
most ``pending_cap`` pending clusters per engine (``verify fuzz``: ``--max-findings``);
the hits of the others are counted in ``unlisted``, so its size does not grow with what
a badly broken engine produces.

One bug met in several surroundings makes several clusters (the key describes where
the first difference falls). So a search may name a cluster's *cause*: the key of its
minimised reproducer (``verify.classify.cause_key``, ``Causes``). A new cluster whose
cause is that of a cluster already found is known too (status ``same-cause``, ``same_as``
naming the found one): counted and masked, not written, and not counted against the
engine's budget of found clusters.

One exception to the triage key: a divergence that only a stress shape shows (the
sample alone, or the text around the probe of a threshold input, agrees with the
reference: ``fields["stress"]["only"]``, see ``verify.adversarial.fuzz.stress_phase``) is one
cluster per engine and shape, ``KIND/stress-only/SHAPE`` (``ids/stress-only/big-batch``,
``ids/stress-only/cut-25000``), whatever text the sample holds.

Each shard of ``verify fuzz`` keeps its own book (``ClusterBook.to_json`` goes into the
shard's committed extra); ``ClusterMerge`` reads them back in plan order so that the run
as a whole still writes one finding per cluster and per cause, and at most
``max_findings`` clusters per engine.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from verify.allowlist import Allowlist
from verify.classify import TagRule, signature, signature_key, tags_for
from verify.findings import Finding

STRESS_ONLY = "stress-only"
MINIMISE_S = 10.0  # per cause: the minimiser's time and call limits
MINIMISE_CALLS = 2000
STATUS_ORDER = {"found": 0, "same-cause": 1, "allowlist": 2, "tags": 3, "pending": 4}


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

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "Entry":
        return cls(doc["engine"], doc["cluster"], doc["status"], int(doc.get("hits", 0)), int(doc.get("masked", 0)),
                   doc.get("sample_id"), doc.get("finding_key"), doc.get("source"), doc.get("reason"),
                   list(doc.get("tags") or []), doc.get("cause"), doc.get("minimized"), doc.get("same_as"))


def sort_entries(entries: Iterable[Entry]) -> list[Entry]:
    """Found clusters first, then by status, engine, hits (most first) and key."""
    return sorted(entries, key=lambda e: (STATUS_ORDER[e.status], e.engine, -e.hits, e.key))


class ClusterBook:
    def __init__(self, allowlist: Allowlist | None = None, tags: Sequence[TagRule] = (),
                 pending_cap: int | None = None):
        self.allowlist = allowlist or Allowlist()
        self.tags = [rule for rule in tags if rule.known]  # rows without known = true only tag
        self.entries: dict[tuple[str, str], Entry] = {}
        self.causes: dict[tuple[str, str], Entry] = {}  # (engine, cause) -> the found cluster
        self.pending_cap = pending_cap
        self.pending: Counter[str] = Counter()  # pending entries kept, per engine
        self.unlisted: Counter[str] = Counter()  # hits of pending clusters past the cap, per engine
        self.written: list[tuple[str, str, int, int]] = []  # (engine, key, chars, segments) of each written finding

    def key(self, finding: Finding) -> str:
        return cluster_key(finding)

    def _entry(self, engine: str, key: str, store: bool = True) -> Entry:
        """The cluster's entry; a new one is kept when ``store`` (and, if pending, under the cap)."""
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
        if store and entry.status == "pending":
            if self.pending_cap is not None and self.pending[engine] >= self.pending_cap:
                return entry  # past the cap: counted in ``unlisted`` by observe, not kept
            self.pending[engine] += 1
        if store:
            self.entries[(engine, key)] = entry
        return entry

    def _settle(self, entry: Entry) -> None:
        """A pending entry became known: keep it (whether or not it was kept while pending)."""
        if self.entries.get((entry.engine, entry.key)) is entry:
            self.pending[entry.engine] -= 1
        self.entries[(entry.engine, entry.key)] = entry

    def known_key(self, engine: str, key: str) -> bool:
        return self._entry(engine, key, store=False).status != "pending"

    def known(self, finding: Finding, key: str | None = None) -> bool:
        return self._entry(finding.engine, key or self.key(finding), store=False).status != "pending"

    def observe(self, findings: Iterable[Finding], count: bool = True, keys: Sequence[str] | None = None
                ) -> list[Finding]:
        """Count each finding in its cluster (when ``count``); return those of clusters not known yet.
        ``keys``: the findings' cluster keys when the caller has them already."""
        new = []
        for i, finding in enumerate(findings):
            key = keys[i] if keys is not None else self.key(finding)
            entry = self._entry(finding.engine, key, store=count)
            if count:
                entry.hits += 1
                if entry.sample_id is None:
                    entry.sample_id = finding.sample.id
                if entry.status == "pending" and self.entries.get((finding.engine, key)) is not entry:
                    self.unlisted[finding.engine] += 1
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
        self._settle(entry)
        entry.status, entry.source = "found", source
        entry.sample_id, entry.finding_key = finding.sample.id, record.get("finding_key")
        entry.hits = max(entry.hits, 1)
        if cause is not None:
            entry.cause, entry.minimized = cause
            self.causes.setdefault((finding.engine, entry.cause), entry)
        self.written.append((entry.engine, entry.key, len(finding.sample.text), len(finding.sample.segments)))
        return entry

    def same_cause(self, finding: Finding, cause: tuple[str, list] | None) -> Entry | None:
        """The found cluster of ``finding``'s engine with this cause, if any."""
        return self.causes.get((finding.engine, cause[0])) if cause is not None else None

    def fold(self, finding: Finding, cause: tuple[str, list], into: Entry) -> Entry:
        """``finding``'s new cluster has the cause of the found cluster ``into``: known from now on."""
        entry = self._entry(finding.engine, self.key(finding))
        assert entry.status == "pending", f"cluster {entry.key} of {entry.engine} is already {entry.status}"
        self._settle(entry)
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
        return [e.as_dict() for e in sort_entries(e for e in self.entries.values() if e.hits or e.status == "found")]

    def to_json(self) -> dict[str, Any]:
        """What a shard commits: its clusters, the ones it wrote (in order), the unlisted hits."""
        return {"clusters": self.as_list(), "written": [list(w) for w in self.written],
                "unlisted": dict(self.unlisted)}


def cause_of(finding: Finding, reference, executor) -> tuple[str, list] | None:
    """``(cause_key, segments)`` of the finding's minimised reproducer (the minimiser and the
    predicate triage uses), or None when it does not reproduce or is too costly to minimise
    (crashes and timeouts: every try restarts a worker or waits out the timeout)."""
    if finding.kind not in ("ids", "error"):
        return None
    from verify.classify import cause_key
    from verify.minimize import minimize
    from verify.triage import still_fails

    error_type = (finding.fields.get("error") or {}).get("type")
    result = minimize(finding.sample, still_fails(finding.kind, reference, executor, error_type),
                      budget_s=MINIMISE_S, max_calls=MINIMISE_CALLS)
    if not result.reproduced:
        return None
    segments = [[s.text, s.allow_special] for s in result.sample.segments]
    return cause_key(finding.engine, finding.kind, segments), segments


class Causes:
    """The causes of one shard's findings, each minimised once, and the folding of a new cluster
    into the found cluster that has its cause."""

    def __init__(self, book: ClusterBook, reference, executors: dict[str, Any]):
        self.book, self.reference, self.executors = book, reference, executors
        self.known: dict[tuple, tuple[str, list] | None] = {}

    def cause(self, finding: Finding) -> tuple[str, list] | None:
        ident = (finding.engine, finding.kind, finding.sample.segments)
        if ident not in self.known:
            self.known[ident] = cause_of(finding, self.reference, self.executors[finding.engine])
        return self.known[ident]

    def remember(self, finding: Finding, cause: tuple[str, list] | None) -> None:
        self.known[(finding.engine, finding.kind, finding.sample.segments)] = cause

    def fold(self, finding: Finding) -> bool:
        """A new cluster with the cause of one found before: known from now on, not written."""
        found_cause = self.cause(finding)
        into = self.book.same_cause(finding, found_cause)
        if into is not None:
            self.book.fold(finding, found_cause, into)
        return into is not None


class ClusterMerge:
    """The books of a run's shards (``ClusterBook.to_json``), added in plan order, then resolved
    as if one search had written them:

      * a cluster written by several shards keeps the first finding written of it (plan order);
      * clusters written with one cause (the same minimised reproducer) keep one finding: the
        smallest written (ties: the cluster the cause was met in most, then the first written);
        the others are ``same-cause``, ``same_as`` naming it;
      * an engine keeps at most ``max_findings`` causes, the first written; the clusters of the
        others stay ``pending`` (counted in ``over_cap``).

    ``kept`` holds the finding keys that go into ``divergences.jsonl``. Everything here is per
    cluster, never per finding: a shard lists at most ``max_findings`` clusters written per engine."""

    def __init__(self, max_findings: int):
        self.max_findings = max_findings
        self.entries: dict[tuple[str, str], Entry] = {}  # hits summed over the shards
        self.first: dict[tuple[str, str], tuple[int, Entry]] = {}  # the first written: (position, its shard's entry)
        self.size: dict[tuple[str, str], tuple[int, int]] = {}  # its sample's characters and segments
        self.kept: set[str] = set()
        self.over_cap: Counter[str] = Counter()
        self.unlisted: Counter[str] = Counter()

    def add(self, book: dict[str, Any]) -> None:
        local = {(d["engine"], d["cluster"]): Entry.from_dict(d) for d in book.get("clusters", [])}
        for engine, key, *size in book.get("written", []):
            ident = (engine, key)
            if ident in local and ident not in self.first:
                self.first[ident] = (len(self.first), local[ident])
                self.size[ident] = tuple(size)
        for ident, entry in local.items():
            merged = self.entries.get(ident)
            if merged is None:
                self.entries[ident] = replace(entry, tags=list(entry.tags))
                continue
            merged.hits += entry.hits
            merged.sample_id = merged.sample_id or entry.sample_id
            if merged.status in ("pending", "found") and entry.status not in ("pending", "found"):
                merged.status, merged.same_as = entry.status, entry.same_as  # known in a later shard
                merged.cause, merged.minimized = entry.cause, entry.minimized
        self.unlisted.update(book.get("unlisted") or {})

    def resolve(self) -> "ClusterMerge":
        groups: dict[tuple, list[tuple[str, str]]] = {}  # by (engine, cause), in written order
        for ident, (_, entry) in sorted(self.first.items(), key=lambda item: item[1][0]):
            groups.setdefault((entry.engine, entry.cause) if entry.cause else ident, []).append(ident)
        kept_causes: dict[tuple[str, str], str] = {}
        found: Counter[str] = Counter()
        self.kept = set()
        for group, idents in groups.items():
            engine = idents[0][0]
            if found[engine] >= self.max_findings:
                self.over_cap[engine] += len(idents)
                for ident in idents:
                    self.entries[ident].status = "pending"
                continue
            found[engine] += 1
            chosen = min(idents, key=lambda i: (self.size[i], -self.entries[i].hits, self.first[i][0]))
            for ident in idents:
                entry, written = self.entries[ident], self.first[ident][1]
                entry.cause, entry.minimized, entry.same_as = written.cause, written.minimized, None
                if ident == chosen:
                    entry.status, entry.finding_key, entry.source = "found", written.finding_key, written.source
                    entry.sample_id = written.sample_id
                    entry.masked = entry.hits - (written.hits - written.masked)  # all but its shard's first hits
                    self.kept.add(written.finding_key)
                    if written.cause:
                        kept_causes[(engine, written.cause)] = ident[1]
                else:
                    entry.status, entry.same_as, entry.masked = "same-cause", chosen[1], entry.hits
                    entry.finding_key = entry.source = None
        for ident, entry in self.entries.items():
            if ident in self.first:
                continue
            if entry.status == "same-cause":  # folded in its shard: into the kept cluster of that cause
                entry.same_as = kept_causes.get((entry.engine, entry.cause or ""), entry.same_as)
            entry.masked = 0 if entry.status == "pending" else entry.hits
        return self

    def as_list(self) -> list[dict[str, Any]]:
        """Every cluster, as ``ClusterBook.as_list`` lists them (after ``resolve``)."""
        return [e.as_dict() for e in sort_entries(self.entries.values())]
