"""Clusters by cause: the symptom clusters of a triage, joined by what explains them.

Triage first groups findings by *symptom* (``verify.classify``: the character classes at the
first difference, flags) -- cheap, and a good way to pick a few findings to minimise. Then
each symptom cluster's minimised reproducer is *explained* (``verify.causes.explain``), and
symptom clusters with one cause become one cluster whose key is that cause:

    clusters = join_by_cause(symptoms, explain_one, rules)    # -> list[CauseCluster], first-seen order

A joined cluster lists its members (the symptom clusters: key, count, one minimised reproducer
each), its tags (``adversarial/tags.toml`` rows matched on the cause key and on every member's
symptom key) and the cause's name. A symptom cluster that was not minimised gets a cause of its
own that never equals another's (``unminimised``), so it is never taken for a known bug.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from typing_extensions import NotRequired, TypedDict

from verify.causes import Cause, merge_length
from verify.classify import MAX_SAMPLE_IDS, Cluster, TagRule, tags_for
from verify.findings import SegmentPair

MAX_MEMBERS = 50  # symptom clusters listed per cause cluster (the rest counted)


class ClusterMember(TypedDict):
    """One symptom cluster merged into a cause cluster, with its own minimised example
    (``verify shadow``'s clusters list the symptom and its count alone)."""

    symptom: str
    count: int
    signature: NotRequired[dict[str, Any]]
    example: NotRequired[list[SegmentPair] | None]
    example_runs: NotRequired[list | None]


class ClusterRecord(TypedDict):
    """One cluster of ``OUT/clusters.json`` (``verify.clusters/2``; docs/schema.md): a cause, the
    findings it explains, and its minimised reproducer. ``key`` is the cause's key (= ``cause``).
    ``verify shadow`` adds ``status`` (``new``, ``known``, ``allowlisted``: docs/shadow.md) and leaves
    out the cause's fields where nothing explained it."""

    key: str
    engine: str | None
    reference: str | None
    kind: str
    cause: str | None
    signature: dict[str, Any]
    tags: list[str]
    links: list[str]
    count: int
    sample_ids: list[str]
    example: list[SegmentPair] | None
    example_minimized: dict[str, Any] | None
    cause_kind: NotRequired[str]
    name: NotRequired[str]
    explanation: NotRequired[dict[str, Any]]
    members: NotRequired[list[ClusterMember]]
    members_total: NotRequired[int]
    status: NotRequired[str]


@dataclass
class CauseCluster:
    key: str  # the cause's key: the cluster's identity
    engine: str
    reference: str
    kind: str  # the findings' kind (ids, error, crash, timeout, bad-input)
    cause: Cause
    count: int = 0
    sample_ids: list[str] = field(default_factory=list)
    members: list[Cluster] = field(default_factory=list)  # the symptom clusters, first seen first
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    example: dict[str, Any] | None = None  # the first member's minimised block

    @property
    def signature(self) -> dict[str, Any]:
        return self.members[0].signature if self.members else {}

    def as_dict(self, max_ids: int = MAX_SAMPLE_IDS) -> ClusterRecord:
        members: list[ClusterMember] = [{"symptom": m.key, "count": m.count, "signature": m.signature,
                    "example": m.example["input"] if m.example else None,
                    "example_runs": (m.example or {}).get("input_runs")} for m in self.members[:MAX_MEMBERS]]
        return {"key": self.key, "engine": self.engine, "reference": self.reference, "kind": self.kind,
                "cause": self.key, "cause_kind": self.cause.kind, "name": self.cause.name,
                "explanation": self.cause.as_dict(), "signature": self.signature, "tags": self.tags,
                "links": self.links, "count": self.count, "sample_ids": self.sample_ids[:max_ids],
                "example": self.example["input"] if self.example else None, "example_minimized": self.example,
                "members": members, "members_total": len(self.members)}


def join_by_cause(symptoms: Sequence[Cluster], explain_one: Callable[[Cluster], Cause],
                  rules: Sequence[TagRule] = ()) -> tuple[list[CauseCluster], dict[int, CauseCluster]]:
    """The cause clusters, in order of first appearance, and each symptom cluster's (by ``id``)."""
    causes = [explain_one(c) for c in symptoms]
    merged = merge_length([(c.engine, cause) for c, cause in zip(symptoms, causes)])
    causes = [merged.get(i, cause) for i, cause in enumerate(causes)]
    joined: dict[tuple[str, str, str], CauseCluster] = {}
    of: dict[int, CauseCluster] = {}
    for c, cause in zip(symptoms, causes):
        ident = (c.engine, c.reference, cause.key)
        cc = joined.get(ident)
        if cc is None:
            cc = joined[ident] = CauseCluster(cause.key, c.engine, c.reference, c.kind, cause)
        cc.members.append(c)
        cc.count += c.count
        cc.sample_ids += c.sample_ids[:max(0, MAX_SAMPLE_IDS - len(cc.sample_ids))]
        if cc.example is None and c.example is not None:
            cc.example = c.example
        c.cause = cause.key
        of[id(c)] = cc
    for cc in joined.values():
        for key in [cc.key] + [m.key for m in cc.members]:
            tags, links = tags_for(cc.engine, key, list(rules))
            cc.tags += [t for t in tags if t not in cc.tags]
            cc.links += [link for link in links if link not in cc.links]
    return list(joined.values()), of
