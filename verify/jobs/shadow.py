"""``verify shadow`` as a function: production shadow samples re-encoded by the reference.

    shadow_job(ShadowOptions(files=[...], reference="tiktoken:cl100k_base", out=OUT)) -> ShadowResult

The shadow hunt (``verify.shadow.hunt``) on the one driver: the files' shards through the
reference (and the replay engines) on ``workers`` workers or Ray, committed shard by shard
(``--resume`` continues), then the shadow triage as the driver's triage stage, then the
reports. A bad allowlist, an unreadable ``--known-clusters`` folder, a bad ``--engine`` or a
missing file fails before any engine starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verify.counts import Counts
from verify.driver import run_hunt
from verify.executors.pool import EngineOptions
from verify.executors.setup import RayOptions
from verify.pipeline.hunt import JobOptions
from verify.shadow.hunt import ShadowHunt, shadow_triage

@dataclass
class ShadowOptions:
    files: list[str]
    reference: str | None
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
    # how it runs (verify.pipeline.hunt.JobOptions), never what it finds
    workers: int = 1
    executor: str = "local"  # local | ray
    ray: RayOptions | None = None
    progress: bool | None = None
    resume: bool = False

    def job(self) -> JobOptions:
        return JobOptions(out=Path(self.out), engine=self.engine_options, workers=self.workers,
                          executor=self.executor, ray=self.ray, progress=self.progress,
                          minimize_budget_s=self.minimize_budget_s, resume=self.resume, argv=list(self.argv))


@dataclass
class ShadowResult:
    out: Path
    counts: Counts
    report: dict[str, Any]

    @property
    def passed(self) -> bool:
        return self.report["verdict"] == "pass"


def shadow_job(opts: ShadowOptions) -> ShadowResult:
    from verify.allowlist import load_allowlist
    from verify.rundir.plan import load_plan
    from verify.shadow.compare import parse_engine_mapping
    from verify.shadow.triage import KnownClusters

    allowlist = load_allowlist(opts.allowlist) if opts.allowlist is not None else None
    known = KnownClusters(opts.known_clusters)
    hunt = ShadowHunt(opts.files, opts.reference, parse_engine_mapping(opts.engines), redact=opts.redact,
                      batch_size=opts.batch_size, engine=opts.engine_options,
                      minimize_budget_s=opts.minimize_budget_s, per_cluster=opts.per_cluster, known=known,
                      allowlist=allowlist)
    job = opts.job()
    if job.resume:
        hunt.fill_from(load_plan(job.out))
    shards = len(hunt.source().shards())  # a missing file fails here
    job = replace(job, workers=max(1, min(job.workers, shards)))
    result = run_hunt(hunt, job, triage=shadow_triage)
    return ShadowResult(job.out, result.counts, hunt.report)
