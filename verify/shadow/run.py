"""The ``verify shadow`` job: read shadow shards, compare, write findings, triage, report.

    run_shadow(ShadowOptions(files=[...], reference="tiktoken:cl100k_base", out=OUT)) -> ShadowResult

Lifecycle of ``verify.job.CommandJob`` (engines from its pool, OUT/manifest.json and
OUT/summary.md on the way out, however it ends). Records stream shard by shard:
requests in batches through the reference, each session turn by turn as its transcript
(``SessionTrace.transcript``, the finding's ``session`` block as ``verify replay`` writes
it). Findings are written as found -- under ``--redact`` through
``verify.shadow.redact.redact_record`` only, and no input is ever stored under
OUT/inputs/ -- and handed to the streaming triage, which keeps in memory only what it
may minimise. Then triage.jsonl, clusters.json, triage.json, shadow.json, shadow.md.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from verify.classify import load_tags
from verify.counts import Counts
from verify.executors.pool import EngineOptions
from verify.findings import bad_input_record
from verify.job import CommandJob
from verify.pipeline.session_task import session_fields
from verify.batches import batched
from verify.sample import BadRecord, Sample
from verify.shadow.compare import Item, ReplayEngines, ShadowComparer, parse_engine_mapping
from verify.shadow.redact import redact_record
from verify.shadow.report import build_report, write_report
from verify.shadow.schema import SCHEMA, ShadowRecord, ShadowSession
from verify.shadow.triage import KnownClusters, ShadowTriage


@dataclass
class ShadowOptions:
    files: list[str]
    reference: str
    out: Path
    redact: bool = False
    allowlist: Path | None = None
    known_clusters: Path | None = None
    engines: list[str] = field(default_factory=list)  # --engine [NAME=]SPEC
    minimize_budget_s: float = 60.0
    per_cluster: int = 1
    batch_size: int = 64
    engine_options: EngineOptions = field(default_factory=EngineOptions)
    argv: list[str] = field(default_factory=list)


@dataclass
class ShadowResult:
    out: Path
    counts: Counts
    report: dict[str, Any]

    @property
    def passed(self) -> bool:
        return self.report["verdict"] == "pass"


def _items(records: Iterator, on_bad) -> Iterator[Item]:
    """Requests as they come; a session turn by turn; bad records to ``on_bad``."""
    for record in records:
        if isinstance(record, BadRecord):
            on_bad(record)
        elif isinstance(record, ShadowSession):
            trace = record.trace()
            last = len(record.records) - 1
            for position, turn in enumerate(record.records):
                transcript = trace.transcript(position)
                yield Item(turn, Sample(turn.request_id, transcript.segments), session_fields(trace, position),
                           last_turn=position == last)
        elif isinstance(record, ShadowRecord):
            yield Item(record, record.sample())
        else:
            raise TypeError(f"shadow reader yielded a {type(record).__name__}")


def _batches(items: Iterator[Item], size: int) -> Iterator[list[Item]]:
    pending: deque[Item] = deque()

    def samples():
        for item in items:
            pending.append(item)
            yield item.sample

    for batch in batched(samples(), size):  # batched yields a batch before taking in the next sample
        yield [pending.popleft() for _ in batch]


def run_shadow(opts: ShadowOptions) -> ShadowResult:
    from verify.allowlist import load_allowlist
    from verify.corpora.shadow import shadow_source

    source = shadow_source(opts.files)  # a missing file fails before any engine starts
    allowlist = load_allowlist(opts.allowlist) if opts.allowlist is not None else None
    known = KnownClusters(opts.known_clusters)
    mapping = parse_engine_mapping(opts.engines)
    with CommandJob("shadow", opts.out, opts.argv, opts.engine_options) as job:
        (reference,) = job.pool.start([opts.reference])
        job.reference = opts.reference
        job.sources = [source.describe()]
        replays = ReplayEngines(job.pool, mapping)
        replays.start_named()
        comparer = ShadowComparer(reference, replays)
        triage = ShadowTriage(load_tags(), redact=opts.redact, per_cluster=opts.per_cluster)
        job.counts = comparer.counts
        for shard in source.shards():
            def on_bad(bad: BadRecord, shard=shard) -> None:
                rec = bad_input_record(shard.source, bad.position, bad.reason, bad.raw)
                written = job.writer.write_record(redact_record(rec, None) if opts.redact else rec)
                comparer.counts.bad_records += 1
                triage.add(written, None)

            for batch in _batches(_items(shard.records(), on_bad), opts.batch_size):
                for m in comparer.compare(batch, shard.source):
                    if opts.redact:
                        record, _ = m.finding.to_record()  # the stored input, if any, is dropped
                        written = job.writer.write_record(redact_record(record, m.finding.sample.segments))
                    else:
                        written = job.writer.write(m.finding)
                    triage.add(written, m.finding.sample, m.replay, m.replay_note)
        outcome = triage.finish(reference, opts.minimize_budget_s, known, allowlist)
        outcome.write(job.out)
        job.candidates = sorted(set(replays.used.values()))
        identity = job.pool.identities().get(opts.reference)
        report = build_report(reference=identity, counts=comparer.counts, tokenizers=comparer.tokenizers,
                              outcome=outcome, known=known, allowlist=allowlist, redacted=opts.redact,
                              files=source.description["files"], replay_engines=dict(replays.used))
        write_report(job.out, report)
        job.extra.update({"shadow": {"schema": SCHEMA, "report": "shadow.json", "redacted": opts.redact,
                                     "verdict": report["verdict"], "counts": report["counts"]},
                          "reports": {"shadow": "shadow.md"}, "triage": outcome.summary.as_info()})
    from verify.reports.markdown import MAX_LISTED, write_summary
    from verify.triage import read_clusters, triaged_records

    # summary.md again, now with the clusters and each finding's triage
    write_summary(job.out, job.manifest, triaged_records(job.out, MAX_LISTED), read_clusters(job.out) or None,
                  title="verify shadow")
    return ShadowResult(job.out, comparer.counts, report)
