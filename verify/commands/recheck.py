"""`verify recheck`: replay every regression case (adversarial/regressions/) and say what changed.

Exit codes (for a nightly gate):
  0  every case behaves as recorded: ``open`` cases still diverge with the recorded ids (or error type),
     ``fixed`` cases still equal the reference
  1  anything changed: a bug got fixed (mark the case ``"status": "fixed"``), a new behaviour (other ids,
     a new error), a reference that no longer gives ``expected``, or an engine that is not available
     (unless ``--allow-unavailable``)
  2  usage or configuration error (a malformed case file, an unknown ``--engine``)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import default_out
from verify.errors import UsageError


def _default_cases() -> Path:
    from verify.config import project_dir

    return project_dir() / "adversarial" / "regressions"


def add_parser(sub) -> None:
    p = sub.add_parser("recheck", help="replay the regression cases and report what changed")
    p.add_argument("--cases", type=Path, metavar="DIR", help="case folder (default adversarial/regressions)")
    p.add_argument("--engine", action="append", metavar="SPEC",
                   help="only cases whose engine is SPEC (as written in the case, or a substring of it); repeatable")
    p.add_argument("--out", type=Path, metavar="DIR", help="report directory (default reports/recheck-TIMESTAMP)")
    p.add_argument("--allow-unavailable", action="store_true",
                   help="an engine that is not installed does not fail the run (it is still reported)")
    p.add_argument("--in-process", action="store_true",
                   help="run engines inside this process (faster start; a crash or hang ends the run)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="per-case timeout in seconds for isolated engines (default %(default)s)")


def _label(result) -> str:
    if result.status == "still-diverges":
        return "still-diverges" if result.same_actual else "still-diverges*"
    return result.status


def _verdict(result, allow_unavailable: bool) -> str:
    """ok | CHANGED | FIXED | UNAVAILABLE: what the line says beyond the status."""
    if result.as_recorded:
        return "ok"
    if result.status == "engine-unavailable":
        return "skipped" if allow_unavailable else "UNAVAILABLE"
    if result.status == "fixed":
        return "FIXED: set \"status\": \"fixed\" in the case"
    if result.status == "reference-changed":
        return "REFERENCE CHANGED: the case is suspect"
    if result.case.status == "fixed":
        return "REGRESSED: a fixed bug is back"
    return "CHANGED: new behaviour"


def run(args) -> int:
    from verify.adversarial.regressions import EnginePool, load_cases, replay

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    folder = args.cases or _default_cases()
    cases = load_cases(folder)
    if args.engine:
        cases = [c for c in cases if any(f == c.engine or f in c.engine for f in args.engine)]
        if not cases:
            raise UsageError(f"no regression case in {folder} has engine {', '.join(args.engine)}")
    if not cases:
        raise UsageError(f"no regression cases (*.json) in {folder}")
    out = args.out or default_out("recheck")
    out.mkdir(parents=True, exist_ok=True)

    pool = EnginePool(isolate=not args.in_process, timeout_s=args.timeout)
    results = []
    started = time.time()
    width = max(len(c.id) for c in cases)
    try:
        for case in cases:
            result = replay(case, pool.get(case.reference), pool.get(case.engine))
            results.append(result)
            verdict = _verdict(result, args.allow_unavailable)
            print(f"{_label(result):19} {case.id:{width}}  {verdict}: {result.detail}", flush=True)
        versions = pool.versions()
    finally:
        pool.close()

    verdicts = [_verdict(r, args.allow_unavailable) for r in results]
    failing = [r for r, v in zip(results, verdicts) if v not in ("ok", "skipped")]
    skipped = sum(v == "skipped" for v in verdicts)  # allowed to be unavailable: not replayed, not "as recorded"
    as_recorded = len(results) - len(failing) - skipped
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    fixed = [r.case.id for r in results if r.status == "fixed" and r.case.status != "fixed"]
    report = {
        "schema": "verify.recheck/1",
        "argv": sys.argv[1:],
        "cases_dir": str(folder),
        "started": started,
        "finished": time.time(),
        "engines": versions,
        "counts": counts,
        "as_recorded": as_recorded,
        "skipped": skipped,
        "changed": [r.case.id for r in failing],
        "newly_fixed": fixed,
        "results": [r.to_json() | {"verdict": _verdict(r, args.allow_unavailable)} for r in results],
    }
    (out / "recheck.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"{len(results)} cases: {summary}; {as_recorded} as recorded, {len(failing)} changed, "
          f"{skipped} not replayed -> {out / 'recheck.json'}")
    if fixed:
        print(f"FIXED upstream ({len(fixed)}): {', '.join(fixed)} -- mark them \"status\": \"fixed\"")
    if not failing and as_recorded == 0:
        print("verify: no case could be replayed: nothing was checked", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_FINDINGS if failing else EXIT_OK
