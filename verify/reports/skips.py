"""Why samples were skipped, and what to do about it: the one aggregation every report
shares (stdout lines, ``summary.md``, ``report.html``, ``ci-summary.md``, the gate's
``gate.json`` and JUnit ``<skipped message=...>``).

    skip_rows(counts, traces=False) -> [SkipRow(engine, reason, count, remedy)]
    skip_lines(manifest) -> ["skipped: 67 turns by ENGINE: REASON (remedy: ...)", ...]

``counts`` is a ``verify.counts.Counts.as_dict()``: the per-engine ``skipped`` states and,
where the command tallied them, ``skipped_reasons`` (per engine: reason -> samples).
Skips counted without a reason are shown as one row whose reason says it was not
recorded and names what can cause it -- never dropped, so the rows of an engine always
add up to its ``skipped`` count. The remedy is the one thing to change where there is
one: ``--template plain`` for transcripts whose chat template has special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verify.outcome import REFERENCE_FAILED, SESSION_ENDED, SKIPPED

TRACE_KINDS = ("traces", "agent-traces")  # source kinds whose samples are turns of transcripts
SPECIAL_SEGMENTS = SKIPPED.reason
__all__ = ["REFERENCE_FAILED", "SESSION_ENDED", "SKIPPED"]
NOT_RECORDED = ("reason not recorded by this command: the engine declared it cannot take the sample "
                "(special-token segments without special-token support), or an earlier failure ended its session")

TEMPLATE_PLAIN = ("`--template plain` renders the transcripts without special tokens (the chat template's "
                  "structure is special-token segments this engine cannot take)")
SPECIAL_ENGINE = ("`--allow-skipped` (a gate suite's `allow_skipped = true`) accepts the skips; or give the engine "
                  "special tokens: a python plugin's `encode_batch(texts, *, allow_special=False)`, docs/plugins.md")


@dataclass(frozen=True)
class SkipRow:
    engine: str
    reason: str
    count: int
    remedy: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "reason": self.reason, "count": self.count, "remedy": self.remedy}


def remedy_for(reason: str, traces: bool) -> str | None:
    """What to change so that these samples are compared, where something can be changed."""
    if reason in (SPECIAL_SEGMENTS, NOT_RECORDED):
        return TEMPLATE_PLAIN if traces else SPECIAL_ENGINE
    return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def skip_rows(counts: dict[str, Any] | None, traces: bool = False) -> list[SkipRow]:
    """Every engine's skips by reason, largest first; a count without a reason is one
    ``NOT_RECORDED`` row, so an engine's rows add up to its ``skipped`` state."""
    counts = counts if isinstance(counts, dict) else {}
    per_engine = counts.get("per_engine") if isinstance(counts.get("per_engine"), dict) else {}
    reasons = counts.get("skipped_reasons") if isinstance(counts.get("skipped_reasons"), dict) else {}
    rows: list[SkipRow] = []
    for spec in [*per_engine, *(s for s in reasons if s not in per_engine)]:
        tally = per_engine.get(spec) if isinstance(per_engine.get(spec), dict) else {}
        given = {str(r): _int(n) for r, n in (reasons.get(spec) or {}).items()} if isinstance(reasons.get(spec), dict) \
            else {}
        for reason, n in sorted(given.items(), key=lambda kv: (-kv[1], kv[0])):
            if n:
                rows.append(SkipRow(str(spec), reason, n, remedy_for(reason, traces)))
        rest = _int(tally.get("skipped")) - sum(given.values())
        if rest > 0:
            rows.append(SkipRow(str(spec), NOT_RECORDED, rest, remedy_for(NOT_RECORDED, traces)))
    return rows


def replays_traces(manifest: dict[str, Any] | None) -> bool:
    """True for a run whose samples are turns of transcripts (``verify replay``, ``run --traces``)."""
    sources = (manifest or {}).get("sources") or []
    return any(isinstance(s, dict) and s.get("kind") in TRACE_KINDS for s in sources)


def sample_unit(manifest: dict[str, Any] | None) -> str:
    """What one sample of this run is: ``turns`` of a replay, ``edit scripts``, else ``samples``."""
    if (manifest or {}).get("hunt") == "replay-edits":
        return "edit scripts"
    return "turns" if replays_traces(manifest) else "samples"


def manifest_skip_rows(manifest: dict[str, Any] | None) -> list[SkipRow]:
    return skip_rows((manifest or {}).get("counts"), traces=replays_traces(manifest))


def describe(row: SkipRow, unit: str = "samples") -> str:
    """``67 turns skipped by ENGINE: REASON (remedy: ...)`` on one line."""
    remedy = f" (remedy: {row.remedy})" if row.remedy else ""
    return f"{row.count:,} {unit} skipped by {row.engine}: {row.reason}{remedy}"


def skip_lines(manifest: dict[str, Any] | None) -> list[str]:
    """Lines a command prints after its counts, one per engine and reason."""
    unit = sample_unit(manifest)
    return [f"skipped: {describe(row, unit)}" for row in manifest_skip_rows(manifest)]


def only_skips_line(counts: dict[str, Any] | None) -> str:
    """The one line of a run that failed only because engines skipped samples they cannot take."""
    rows = skip_rows(counts)
    total = sum(r.count for r in rows)
    engines = ", ".join(dict.fromkeys(r.engine for r in rows)) or "an engine"
    special = all(r.reason in (SPECIAL_SEGMENTS, NOT_RECORDED) for r in rows)
    why = "samples with special-token segments" if special else "samples"
    return (f"verify: exit 1 only because {total:,} {why} were skipped by {engines}, which cannot take them "
            f"(everything else verified): --allow-skipped accepts them"
            + (", or give the engine special tokens (docs/plugins.md)" if special else ""))
