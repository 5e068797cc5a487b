"""The record of one Unicode-table sweep (``verify unicode``) of one candidate: the code points
that mismatch, as inclusive ranges, and the Unicode version that explains them. Written by
the sweep (``verify.adversarial.unicode.sweep``), read by the report writer
(``verify.reports.unicode``) and kept whole in ``unicode.json``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verify.unicode_tables.whitespace import MAX_CP


@dataclass
class SweepResult:
    reference: str
    candidate: str
    mismatched: list[list[int]]
    count: int
    unicode_version: str | None
    reference_unicode_version: str | None
    version_basis: str
    explained: float
    whitespace: list[list[int]]
    unexplained: list[list[int]]
    errors: list[list[int]]
    pack_only: list[list[int]]
    by_context: dict[str, int]
    contexts_of: dict[int, list[str]] = field(repr=False, default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    tied_versions: list[str] = field(default_factory=list)
    code_points: int = 0
    probes: int = 0
    seconds: float = 0.0
    scope: list[int] = field(default_factory=lambda: [0, MAX_CP])
    packing: str = ""
    probe_description: dict[str, Any] = field(repr=False, default_factory=dict)  # ProbeSet.describe()
    normalization: dict[str, Any] | None = None  # the normalization data's attribution (attribution.explain)

    @property
    def ok(self) -> bool:
        return self.count == 0 and not self.pack_only

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "reference", "candidate", "count", "mismatched", "unicode_version", "reference_unicode_version",
            "version_basis", "tied_versions", "whitespace", "unexplained", "errors", "pack_only", "by_context",
            "scores", "code_points", "probes", "scope", "packing", "normalization")} | {
            "explained": round(self.explained, 4), "seconds": round(self.seconds, 3)}
