"""`verify sweep`: every installed engine against each reference vocabulary, in one command.

For each reference (default: the four families our users ship) it runs
`verify run --reference R --candidate all` on the same corpus into OUT/<R>/ and
writes OUT/sweep.md, one table row per engine: the table in docs/sweep.md comes
from here.
"""

from __future__ import annotations

from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_pool_options, default_out, engine_options
from verify.errors import UsageError

DEFAULT_REFERENCES = ["tiktoken-cl100k", "tiktoken-o200k", "hf-deepseek-v3", "tekken-tekken"]


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run every installed engine against each reference vocabulary")
    p.add_argument("--reference", action="append", metavar="SPEC",
                   help=f"repeatable; default {', '.join(DEFAULT_REFERENCES)}")
    p.add_argument("--corpus", action="append", metavar="NAME|PATH", help="default: the run default corpus")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N samples per corpus")
    p.add_argument("--out", type=Path, help="default reports/sweep-TIMESTAMP")
    p.add_argument("--workers", type=int, metavar="N", help="shard workers (default: the machine's cores)")
    add_pool_options(p)
    p.add_argument("--minimize-budget", type=float, default=60.0, metavar="S",
                   help="seconds per reference for clustering and minimising findings (0 disables)")
    p.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    from verify.executors.workers import default_workers
    from verify.pipeline.run import RunOptions, run_job

    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    engine = engine_options(args)
    out = args.out or default_out("sweep")
    rows: list[str] = []
    clean = True
    for reference in args.reference or DEFAULT_REFERENCES:
        result = run_job(RunOptions(
            reference=reference, candidates=["all"], corpora=args.corpus, out=out / reference, limit=args.limit,
            isolate=engine.isolate, timeout_s=engine.timeout_s, memory_limit_mb=engine.memory_limit_mb,
            workers=args.workers or default_workers(), minimize_budget_s=args.minimize_budget,
            progress=False if args.no_progress else None,
        ))
        clean &= result.counts.all_verified and result.complete
        rows += table_rows(result.manifest, out / reference)
        print(f"{reference}: {result.counts.samples} samples -> {out / reference}")
    header = ["| reference | engine | version | verified | diverged | error | crash | timeout | skipped | largest cluster |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    (out / "sweep.md").write_text("\n".join(header + rows) + "\n", encoding="utf-8")
    print(f"sweep table -> {out / 'sweep.md'}")
    return EXIT_OK if clean else EXIT_FINDINGS


def table_rows(manifest: dict, out: Path) -> list[str]:
    reference = manifest["reference"]
    versions = {c["spec"]: c.get("package_version") for c in manifest["candidates"]}
    clusters = _largest_cluster_per_engine(out)
    rows = []
    for spec, tally in manifest["counts"]["per_engine"].items():
        if spec == reference["spec"]:
            continue
        rows.append(f"| `{reference['spec']}` | `{spec}` | {versions.get(spec) or '-'} | "
                    + " | ".join(str(tally[k]) for k in ("verified", "diverged", "error", "crash", "timeout", "skipped"))
                    + f" | {clusters.get(spec, '')} |")
    for spec, note in manifest.get("engine_notes", {}).items():
        if "not_loaded" in note:
            rows.append(f"| `{reference['spec']}` | `{spec}` | - | not loaded: {note['not_loaded'][:80]} |||||||")
    return rows


def _largest_cluster_per_engine(out: Path) -> dict[str, str]:
    from verify.triage import read_clusters

    largest: dict[str, dict] = {}
    for cluster in read_clusters(out):
        if cluster["count"] > largest.get(cluster["engine"], {"count": 0})["count"]:
            largest[cluster["engine"]] = cluster
    cells = {}
    for engine, cluster in largest.items():
        example = cluster.get("example")  # the minimised input: [[text, allow_special], ...]
        text = repr("".join(t for t, _ in example))[:40] if example else ""
        cells[engine] = f"`{cluster['key']}` ×{cluster['count']} {text}".replace("|", "\\|")
    return cells
