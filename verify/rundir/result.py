"""What one shard hands back: counts, finding records in order, inputs too large to keep
inline, and a hunt's own per-shard data (``extra``: the Unicode sweep's mismatching code
points, the vocabulary sweep's part statistics, the fuzz search's cluster book ...). It is
data, never files: the driver commits it (``verify.rundir.store``), so a shard runs the
same in this process, in a worker process or in a Ray actor on another machine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verify.counts import Counts


@dataclass
class ShardResult:
    index: int  # the shard's position in the plan
    shard_id: str
    counts: Counts
    records: list[dict] = field(default_factory=list)  # finding records, in order
    stored_inputs: list[tuple[str, str]] = field(default_factory=list)  # (inputs/KEY.json, payload)
    seconds: float = 0.0
    worker: str = ""
    ledger_entries: list[tuple[bytes, bytes, int]] = field(default_factory=list)  # new reference results
    ledger_stats: dict[str, int] = field(default_factory=dict)  # hits, encoded, corrupt
    extra: dict[str, Any] = field(default_factory=dict)  # the hunt's own data (JSON), committed beside the marker

    def add_record(self, record: dict, stored=None) -> None:
        """``stored``: what ``Finding.to_record`` keeps beside the record (none, a pair, or pairs)."""
        from verify.findings import stored_items

        self.records.append(record)
        self.stored_inputs.extend(stored_items(stored))

    def add_bad_record(self, source: str | None, bad, strict: bool) -> None:
        """A corpus record that is no sample: a ``bad-input`` finding, or with ``strict`` the end
        of the run (``CorpusError``, exit 2)."""
        from verify.errors import CorpusError
        from verify.findings import bad_input_record

        if strict:
            raise CorpusError(f"{bad.position}: {bad.reason}")
        self.records.append(bad_input_record(source, bad.position, bad.reason, bad.raw))
        self.counts.bad_records += 1
        self.counts.findings += 1
