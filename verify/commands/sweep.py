"""`verify sweep`: every installed engine against each reference vocabulary, in one command.

For each reference (default: every reference vocabulary that loads offline) it runs
`verify run --reference R --candidate all` on the same corpus into OUT/<R>/ and, with
``--unicode``, `verify unicode --reference R --candidate all` into OUT/<R>/unicode/
(the reference encodes each probe pack once for all its candidates), and writes
OUT/sweep.md: one table row per engine and, with ``--unicode``, one per engine for the
Unicode sweep (``verify/reports/templates/sweep.md.j2``). The tables in docs/sweep.md and
docs/unicode.md come from here.
"""

from __future__ import annotations

from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_pool_options, check_workers, engine_options, out_dir
from verify.errors import UsageError
from verify import atomic
from verify.reports.md_templates import render

DEFAULT_REFERENCES = ["tiktoken-cl100k", "tiktoken-o200k", "tiktoken-p50k", "hf-deepseek-v3", "hf-anthropic",
                      "tekken-tekken", "sentencepiece-spm-v3"]


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
    p.add_argument("--unicode", action="store_true", help="also sweep every code point for every candidate")
    p.add_argument("--unicode-only", action="store_true", help="only the Unicode sweeps, no corpus runs")
    p.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    from verify.executors.workers import default_workers
    from verify.driver import RunOptions, run_job

    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    check_workers(args.workers, "--workers")
    engine = engine_options(args)
    out = out_dir(args, "sweep")
    rows: list[dict] = []
    unicode_rows: list[dict] = []
    clean = True
    skipped: list[str] = []
    from verify.engines.catalogue import engine_values, expand_candidates

    for given in args.reference or DEFAULT_REFERENCES:
        reference = engine_values(given, [])[0]
        if not expand_candidates(reference, ["all"])[0]:
            # nothing installed runs on this vocabulary: say so, and sweep the other references
            print(f"{reference}: no installed candidate engine runs on this vocabulary (engines/*.toml); skipped")
            skipped.append(reference)
            continue
        if args.unicode or args.unicode_only:
            from verify.jobs.unicode import unicode_job
            from verify.pipeline.hunt import JobOptions

            results, _ = unicode_job(reference, ["all"], JobOptions(
                out=out / reference / "unicode", engine=engine, workers=args.workers or default_workers(),
                progress=False if args.no_progress else None, argv=list(args.argv)))
            clean &= all(r.ok for r in results)
            unicode_rows += [unicode_row(r) for r in results]
            print(f"{reference}: Unicode sweep of {len(results)} candidates -> {out / reference / 'unicode'}")
        if args.unicode_only:
            continue
        result = run_job(RunOptions(
            reference=reference, candidates=["all"], corpora=args.corpus, out=out / reference, limit=args.limit,
            isolate=engine.isolate, timeout_s=engine.timeout_s, memory_limit_mb=engine.memory_limit_mb,
            workers=args.workers or default_workers(), minimize_budget_s=args.minimize_budget,
            progress=False if args.no_progress else None,
        ))
        clean &= result.counts.all_verified and result.complete
        rows += table_rows(result.manifest, out / reference)
        print(f"{reference}: {result.counts.samples} samples -> {out / reference}")
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "sweep.md", render("sweep.md.j2", rows=rows, unicode_rows=unicode_rows, skipped=skipped))
    print(f"sweep table -> {out / 'sweep.md'}")
    return EXIT_OK if clean else EXIT_FINDINGS


def unicode_row(r) -> dict:
    """One Unicode sweep's row: its result, and its whitespace and error ranges in short."""
    def ranges(rs: list[list[int]]) -> str:
        shown = ", ".join(f"U+{a:04X}" if a == b else f"U+{a:04X}..U+{b:04X}" for a, b in rs[:4])
        return shown + (f" (+{len(rs) - 4})" if len(rs) > 4 else "") if rs else "-"

    return {"result": r, "whitespace": ranges(r.whitespace), "errors": ranges(r.errors)}


def table_rows(manifest: dict, out: Path) -> list[dict]:
    """A row per candidate of one reference's run: its counts and largest cluster, or why it did not load."""
    reference = manifest["reference"]["spec"]
    versions = {c["spec"]: c.get("package_version") for c in manifest["candidates"]}
    clusters = _largest_cluster_per_engine(out)
    rows = [{"reference": reference, "engine": spec, "version": versions.get(spec), "not_loaded": None,
             "tally": [tally[k] for k in ("verified", "diverged", "error", "crash", "timeout", "skipped")],
             "cluster": clusters.get(spec)}
            for spec, tally in manifest["counts"]["per_engine"].items() if spec != reference]
    rows += [{"reference": reference, "engine": spec, "not_loaded": note["not_loaded"][:80]}
             for spec, note in manifest.get("engine_notes", {}).items() if "not_loaded" in note]
    return rows


def _largest_cluster_per_engine(out: Path) -> dict[str, dict]:
    from verify.triage import read_clusters

    largest: dict[str, dict] = {}
    for cluster in read_clusters(out):
        if cluster["count"] > largest.get(cluster["engine"], {"count": 0})["count"]:
            largest[cluster["engine"]] = cluster
    cells = {}
    for engine, cluster in largest.items():
        example = cluster.get("example")  # the minimised input: [[text, allow_special], ...]
        cells[engine] = {"key": cluster["key"], "count": cluster["count"],
                         "text": repr("".join(t for t, _ in example))[:40] if example else ""}
    return cells
