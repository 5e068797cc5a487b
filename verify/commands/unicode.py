"""`verify unicode`: sweep every code point through the reference and each candidate,
and name the Unicode version whose character tables explain the mismatches.

Engines start through the job's ``EnginePool`` (isolated workers by default, so a
crash or hang marks its code points instead of ending the sweep); ``--candidate
all`` adds every installed engine on the reference's vocabulary, and those that
fail to load are reported, not fatal. OUT gets unicode.json / unicode.md (the
sweep's report) and manifest.json / summary.md (every command's), where each
swept code point counts as one sample.
"""

from __future__ import annotations

import sys

import numpy as np

from verify.adversarial.unicode.contexts import MAX_CP
from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import (add_engine_options, add_out_option, add_pool_options, engine_options, out_dir,
                                     reference_and_candidates)
from verify.counts import Counts
from verify.errors import UsageError


def _code_point(text: str) -> int:
    value = int(text.removeprefix("U+").removeprefix("u+"), 16)
    if not 0 <= value <= 0x110000:
        raise ValueError(text)
    return value


def add_parser(sub) -> None:
    p = sub.add_parser("unicode", help="sweep every code point; attribute mismatches to a Unicode version")
    add_engine_options(p, allow_all=True)
    add_out_option(p, "unicode")
    p.add_argument("--start", type=_code_point, default=0, metavar="HEX", help="first code point (default 0)")
    p.add_argument("--stop", type=_code_point, default=0x110000, metavar="HEX",
                   help="one past the last code point (default 110000)")
    p.add_argument("--no-progress", action="store_true")
    add_pool_options(p)


def sweep_counts(results) -> Counts:
    """Each swept code point is one sample: ``error`` where an engine failed on it,
    ``diverged`` where it mismatched (or only its pack did), else ``verified``."""
    counts = Counts()
    if not results:
        return counts
    n = counts.samples = results[0].code_points
    failed_any, diverged_any = _mask([]), _mask([])
    for r in results:
        failed = _mask(r.errors)
        diverged = (_mask(r.mismatched) | _mask(r.pack_only)) & ~failed
        n_failed, n_diverged = int(failed.sum()), int(diverged.sum())
        counts.engine(r.candidate).update(verified=n - n_failed - n_diverged, diverged=n_diverged, error=n_failed)
        failed_any |= failed
        diverged_any |= diverged
    counts.states["error"] = int(failed_any.sum())
    counts.states["diverged"] = int((diverged_any & ~failed_any).sum())
    counts.states["verified"] = n - counts.states["error"] - counts.states["diverged"]
    return counts


def _mask(ranges: list[list[int]]) -> np.ndarray:
    mask = np.zeros(MAX_CP + 1, dtype=bool)
    for a, b in ranges:
        mask[a:b + 1] = True
    return mask


def _summary(r) -> dict:
    return {"ok": r.ok, "count": r.count, "ranges": len(r.mismatched), "unicode_version": r.unicode_version,
            "reference_unicode_version": r.reference_unicode_version, "version_basis": r.version_basis,
            "explained": round(r.explained, 4), "whitespace": r.whitespace, "errors": r.errors,
            "pack_only": len(r.pack_only)}


def unicode_job(reference: str, requested: list[str], out, options, argv: list[str], *, start: int = 0,
                stop: int = MAX_CP + 1, progress: bool | None = None) -> list:
    """One Unicode sweep of every candidate against ``reference`` into ``out`` (``all``
    expands to every installed engine on the reference's vocabulary; those that do not
    load are reported, not fatal). Returns the ``SweepResult``s."""
    from verify.adversarial.unicode.sweep import sweep_many
    from verify.job import CommandJob
    from verify.engines.catalogue import expand_candidates
    from verify.progress import progress_bar
    from verify.reports.unicode import write_unicode_report

    candidates, swept_in = expand_candidates(reference, requested)
    with CommandJob("unicode", out, argv, options) as job:
        job.reference = reference
        job.sources = [{"name": f"code points U+{start:04X}..U+{stop - 1:04X}", "kind": "unicode",
                        "start": start, "stop": stop}]
        ref, *cands = job.pool.start([reference, *candidates], optional=swept_in)
        job.candidates = [c for c in candidates if c not in job.pool.not_loaded]
        for spec, why in job.pool.not_loaded.items():
            print(f"{spec}: not loaded ({why})", file=sys.stderr)
        results = []
        if cands:
            with progress_bar("verify unicode", enabled=progress) as bar:
                results = sweep_many(ref, cands, start=start, stop=stop, progress=bar.update)
        write_unicode_report(results, out)
        job.counts = sweep_counts(results)
        job.extra["unicode"] = {r.candidate: _summary(r) for r in results}
        job.extra["reports"] = {"Unicode sweep": "unicode.md"}
    return results


def run(args) -> int:
    if args.start >= args.stop:
        raise UsageError("--start must be below --stop")
    options = engine_options(args)
    reference, requested = reference_and_candidates(args)
    out = out_dir(args, "unicode")
    results = unicode_job(reference, requested, out, options, args.argv, start=args.start, stop=args.stop,
                          progress=False if args.no_progress else None)
    for result in results:
        version = f", tables match Unicode {result.unicode_version} ({result.explained:.0%} explained)" \
            if result.count and result.unicode_version else ""
        print(f"{result.candidate}: {result.count} mismatching code points in {len(result.mismatched)} ranges"
              f"{version}")
    print(f"-> {out / 'unicode.json'}, {out / 'unicode.md'}, {out / 'summary.md'}")
    return EXIT_OK if results and all(r.ok for r in results) else EXIT_FINDINGS
