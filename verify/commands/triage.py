"""`verify triage OUT`: cluster and minimise the committed findings of a run, on engines
of its own; writes triage.jsonl, clusters.json and triage.json beside the findings and
renders the manifest and summary again. Runs after a crash, on a resumed run, later or
on another machine; twice gives the same triage.jsonl and clusters.json."""

from __future__ import annotations

from pathlib import Path

from verify.commands import EXIT_OK
from verify.commands.options import add_pool_options, engine_options
from verify.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("triage", help="cluster and minimise the findings of a run directory")
    p.add_argument("out", type=Path, metavar="OUT", help="a run directory (verify run --out)")
    p.add_argument("--minimize-budget", type=float, default=120.0, metavar="S",
                   help="seconds for minimising, shared by the clusters; 0 clusters only (default %(default)s)")
    p.add_argument("--per-cluster", type=int, default=1, metavar="N", help="findings minimised per cluster")
    add_pool_options(p)


def run(args) -> int:
    from verify.rundir.layout import FINDINGS_FILE, PLAN_FILE, RunFolder
    from verify.rundir.plan import load_plan
    from verify.reports.render import render_reports
    from verify.triage import run_triage

    out = args.out
    if not out.is_dir():
        raise UsageError(f"{out}: not a directory")
    folder = RunFolder(out)
    if not folder.plan.is_file() and not folder.findings.is_file():
        raise UsageError(f"{out}: no committed findings here (no {PLAN_FILE} or {FINDINGS_FILE})")
    if args.minimize_budget < 0 or args.per_cluster < 1:
        raise UsageError("--minimize-budget must be 0 or positive, --per-cluster at least 1")
    options = engine_options(args)
    if folder.plan.is_file() and args.timeout is None:  # the run's own hang timeout
        options = options.with_(timeout_s=load_plan(out).options.get("timeout_s", options.timeout_s))
    hunt = load_plan(out).hunt if folder.plan.is_file() else None
    if hunt == "shadow":  # its clusters are judged against the known clusters and allowlist it was given
        from verify.shadow.hunt import saved_triage_inputs, triage_out

        known, allowlist = saved_triage_inputs(out)
        report = triage_out(out, options, budget_s=args.minimize_budget, per_cluster=args.per_cluster, known=known,
                            allowlist=allowlist)
        render_reports(out)
        c = report["counts"]
        print(f"{c['clusters']} clusters ({c['new_clusters']} new) -> {out / 'clusters.json'}, {out / 'shadow.md'}")
        return EXIT_OK
    summary = run_triage(out, engine=options, budget_s=args.minimize_budget, per_cluster=args.per_cluster)
    if hunt is not None:
        render_reports(out)
    print(f"{summary.records} findings, {len(summary.clusters)} clusters, {summary.minimized} minimised "
          f"-> {out / 'clusters.json'}, {out / 'triage.jsonl'}")
    return EXIT_OK
