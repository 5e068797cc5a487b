"""`verify shadow`: production shadow samples re-encoded by the reference.

    verify shadow FILE.jsonl|FILE.parquet [more] --reference SPEC [--out DIR] [--redact]
                  [--allowlist FILE] [--known-clusters PREVIOUS_OUT] [--engine [NAME=]SPEC ...]
                  [--workers N] [--executor ray] [--resume]

Each ``verify.shadow/1`` record (docs/shadow.md) whose ids (or digest and length) equal
the reference's is confirmed; every other one is a finding, clustered, minimised where
a replay of production's tokenizer reproduces it, and de-duplicated against known
clusters and the allowlist. A hunt on the one pipeline (``verify.shadow.hunt``): each file
is a shard, so ``--workers N``, ``--executor ray``, ``--resume --out OUT`` (files, reference
and engines then come from the saved run) and the live status work as for ``verify run``.
Exit 0 when every record is confirmed (or its cluster is allowlisted), 1 when a record
mismatched, was bad or could not be checked.
"""

from __future__ import annotations

from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_job_options, add_out_option, add_pool_options, job_options
from verify.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("shadow", help="verify production shadow samples (verify.shadow/1) against a reference")
    p.add_argument("files", nargs="*", metavar="FILE", help="shadow records: .jsonl/.ndjson (.gz/.zst) or .parquet "
                                                           "files, directories or globs")
    p.add_argument("--reference", metavar="SPEC", help="the reference engine (required, unless --resume)")
    add_out_option(p, "shadow")
    p.add_argument("--redact", action="store_true",
                   help="keep only hashes, minimised reproducers and a short window around each first difference "
                        "under OUT, never a full production input")
    p.add_argument("--allowlist", type=Path, metavar="FILE",
                   help="TOML [[allow]] rows (verify.allowlist): accepted clusters are reported, not failed")
    p.add_argument("--known-clusters", type=Path, metavar="PREVIOUS_OUT",
                   help="a previous OUT: its clusters are reported as known, not new")
    p.add_argument("--engine", action="append", default=[], metavar="[NAME=]SPEC",
                   help="production's tokenizer run here, to minimise mismatches (NAME: the records' tokenizer.name; "
                        "without it, for every tokenizer); repeatable")
    p.add_argument("--minimize-budget", type=float, default=60.0, metavar="S",
                   help="seconds for minimising, shared by the clusters; 0 clusters only (default %(default)s)")
    p.add_argument("--per-cluster", type=int, default=1, metavar="N", help="findings minimised per cluster")
    add_job_options(p, minimize_budget=None)
    add_pool_options(p)


def run(args) -> int:
    from verify.jobs.shadow import ShadowOptions, shadow_job

    if args.minimize_budget < 0 or args.per_cluster < 1:
        raise UsageError("--minimize-budget must be 0 or positive, --per-cluster at least 1")
    if not args.resume and (not args.files or not args.reference):
        raise UsageError("verify shadow needs FILE ... and --reference SPEC (or --resume --out OUT)")
    job = job_options(args, "shadow")
    result = shadow_job(ShadowOptions(
        files=list(args.files), reference=args.reference, out=job.out, redact=args.redact,
        allowlist=args.allowlist, known_clusters=args.known_clusters, engines=list(args.engine),
        minimize_budget_s=args.minimize_budget, per_cluster=args.per_cluster, engine_options=job.engine,
        argv=job.argv, workers=job.workers, executor=job.executor, ray=job.ray, progress=job.progress,
        resume=job.resume))
    c = result.report["counts"]
    print(f"{c['records']} records: {c['confirmed']} confirmed, {c['mismatched']} mismatched, "
          f"{c['reference_failed']} reference failures, {c['bad_records']} bad; {c['clusters']} clusters "
          f"({c['new_clusters']} new) -> {result.out / 'shadow.md'}")
    return EXIT_OK if result.passed else EXIT_FINDINGS
