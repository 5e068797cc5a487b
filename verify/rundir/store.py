"""Committed shard results under ``OUT/shards/``.

A shard is committed when its marker ``NNNNNN.json`` (schema ``verify.shard/1``:
the shard id, its counts, how many findings) exists; its findings are in
``NNNNNN.findings.jsonl`` and a hunt's own data in ``NNNNNN.extra.json``, written (to a
temporary name, then renamed) before the marker, and large inputs in ``OUT/inputs/``. Both renames are atomic, so after a
kill -9 a shard is either committed whole or not at all, and a re-run of an
uncommitted shard simply replaces what it had left. ``started.log`` lists every
shard ever handed to a worker, so a resume can say how many it redid.

Only the driver writes here, from results the workers hand back. Later stages
read committed results only: ``records`` yields every committed finding in plan
order, ``merge`` writes them as ``OUT/divergences.jsonl`` (through a hunt's filter, which may
keep one finding per cluster), ``extras`` yields each committed shard's hunt data.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from verify import jsonl
from verify.counts import Counts
from verify.findings import read_findings, write_stored_input
from verify.rundir.layout import RunFolder
from verify.rundir.result import ShardResult
from verify import atomic
from verify.fault_pause import pause

SHARD_SCHEMA = "verify.shard/1"
STARTED_LOG = "started.log"


def _is_marker(marker) -> bool:
    """A marker whose fields the later stages read are of their types (else: not committed)."""
    if not isinstance(marker, dict) or not isinstance(marker.get("findings"), int) or \
            not isinstance(marker.get("counts"), dict):
        return False
    try:
        Counts.from_dict(marker["counts"])
    except (TypeError, ValueError, AttributeError):
        return False
    return True


class ShardStore:
    def __init__(self, out: Path):
        self.out = Path(out)
        self.dir = RunFolder(self.out).shards
        self.dir.mkdir(parents=True, exist_ok=True)

    def _marker(self, index: int) -> Path:
        return self.dir / f"{index:06d}.json"

    def _findings(self, index: int) -> Path:
        return self.dir / f"{index:06d}.findings.jsonl"

    def _extra(self, index: int) -> Path:
        return self.dir / f"{index:06d}.extra.json"

    # --- writing ---------------------------------------------------------------
    def mark_started(self, index: int) -> None:
        with open(self.dir / STARTED_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{index}\n")

    def commit(self, result: ShardResult) -> None:
        for stored in result.stored_inputs:
            write_stored_input(self.out, stored)
        findings = self._findings(result.index)
        if result.records:  # line by line: never a second copy of a shard's findings as one string
            atomic.write_lines(findings, (jsonl.line(r) for r in result.records))
        elif findings.exists():
            findings.unlink()  # left by an earlier, uncommitted attempt
        extra = self._extra(result.index)
        if result.extra:
            atomic.write_json(extra, result.extra, indent=None)
        elif extra.exists():
            extra.unlink()
        pause("commit")  # fault tests: killed here, the shard is half written and not committed
        marker = {"schema": SHARD_SCHEMA, "index": result.index, "shard_id": result.shard_id,
                  "counts": result.counts.as_dict(), "findings": len(result.records),
                  "extra": bool(result.extra), "seconds": round(result.seconds, 3), "worker": result.worker, "committed": time.time()}
        atomic.write_text(self._marker(result.index), jsonl.line(marker))

    # --- reading ---------------------------------------------------------------
    def committed(self, shard_ids: list[str]) -> dict[int, dict[str, Any]]:
        """Markers of the committed shards of a plan (by index), checked against its shard ids."""
        done: dict[int, dict[str, Any]] = {}
        for index, shard_id in enumerate(shard_ids):
            path = self._marker(index)
            if not path.exists():
                continue
            try:
                marker = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue  # cannot happen with atomic renames; treat as not committed
            if _is_marker(marker) and marker.get("schema") == SHARD_SCHEMA and marker.get("shard_id") == shard_id:
                done[index] = marker
        return done

    def started(self) -> set[int]:
        path = self.dir / STARTED_LOG
        if not path.exists():
            return set()
        return {int(line) for line in path.read_text(encoding="utf-8").split() if line.strip().isdigit()}

    def totals(self, markers: dict[int, dict[str, Any]]) -> Counts:
        total = Counts()
        for index in sorted(markers):
            total.add(Counts.from_dict(markers[index]["counts"]))
        return total

    def records(self, markers: dict[int, dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for index in sorted(markers):
            if markers[index]["findings"]:
                yield from read_findings(self._findings(index))

    def extras(self, markers: dict[int, dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index, extra)`` of every committed shard that has hunt data, in plan order."""
        for index in sorted(markers):
            if markers[index].get("extra"):
                yield index, jsonl.load(self._extra(index))

    def merge(self, markers: dict[int, dict[str, Any]], path: Path,
              keep: Callable[[dict[str, Any]], bool] | None = None) -> int:
        """Write every committed finding, in plan order, to ``path`` (atomically), streamed.
        ``keep``: a hunt's filter, called on each record in order (it may keep state)."""
        n = 0

        def lines():
            nonlocal n
            for index in sorted(markers):
                if markers[index]["findings"]:
                    part = self._findings(index)
                    with open(part, "rb") as fh:  # lines end at b"\n" only, as jsonl.read splits them
                        for number, raw in enumerate(fh, 1):
                            record = jsonl.loads(raw, f"{part}:{number}")  # checked, whether kept or not
                            if keep is not None and not keep(record):
                                continue
                            n += 1
                            yield raw.decode("utf-8")

        atomic.write_lines(path, lines())
        return n
