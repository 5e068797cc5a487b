"""`verify recheck`: replay every regression case (adversarial/regressions/) and say what changed.

Engines start through the job's ``EnginePool`` (isolated workers by default; ``--in-process``,
``--timeout``, ``--memory-limit-mb`` as in every command), each spec once. Writes
``OUT/recheck.json`` (one result per case, with its ``input_key``) and the ``CommandJob``
manifest and summary, where every replayed case is one sample: verified when it behaves as
recorded. A case allowed to be unavailable (``--allow-unavailable``) is not counted.

Exit codes (for a nightly gate):
  0  every case behaves as recorded: ``open`` cases still diverge with the recorded ids (or error type),
     ``fixed`` cases still equal the reference
  1  anything changed: a bug got fixed (mark the case ``"status": "fixed"``), a new behaviour (other ids,
     a new error), a reference that no longer gives ``expected``, or an engine that is not available
     (unless ``--allow-unavailable``)
  2  usage or configuration error (a malformed case file, an unknown ``--engine``)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_out_option, add_pool_options, engine_options, out_dir
from verify.errors import UsageError
from verify import atomic


def _default_cases() -> Path:
    from verify.config import project_dir

    return project_dir() / "adversarial" / "regressions"


def add_parser(sub) -> None:
    p = sub.add_parser("recheck", help="replay the regression cases and report what changed")
    p.add_argument("--cases", type=Path, metavar="DIR", help="case folder (default adversarial/regressions)")
    p.add_argument("--engine", action="append", metavar="SPEC",
                   help="only cases whose engine is SPEC (as written in the case, or a substring of it); repeatable")
    add_out_option(p, "recheck")
    p.add_argument("--allow-unavailable", action="store_true",
                   help="an engine that is not installed does not fail the run (it is still reported)")
    p.add_argument("--add", metavar="ID", help="record a new case instead: --engine SPEC --reference SPEC --text T")
    p.add_argument("--reference", metavar="SPEC", help="with --add: the reference")
    p.add_argument("--text", metavar="TEXT", help="with --add: the input (plain text; \\uXXXX escapes allowed)")
    p.add_argument("--title", default="", help="with --add: one line, what goes wrong")
    p.add_argument("--notes", default="", help="with --add: the command that found it, the suspected cause")
    add_pool_options(p)


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


def _state(result, verdict: str) -> str | None:
    """The ``verify.counts`` state of a case: verified (as recorded), the failure kind of an
    ``error``, skipped (unavailable, not allowed), diverged (anything else that changed);
    None for a case allowed to be unavailable (not replayed, not counted)."""
    if verdict == "ok":
        return "verified"
    if verdict == "skipped":
        return None
    if result.status == "engine-unavailable":
        return "skipped"
    if result.status == "error":
        return (result.error or {}).get("kind", "error")
    return "diverged"


def _specs(cases) -> tuple[str | None, list[str]]:
    """The manifest's reference (the cases' one reference, if they share it) and the other engines."""
    references = list(dict.fromkeys(c.reference for c in cases))
    every = list(dict.fromkeys(s for c in cases for s in (c.reference, c.engine)))
    reference = references[0] if len(references) == 1 else None
    return reference, [s for s in every if s != reference]


def add_case(args) -> int:
    """``verify recheck --add ID``: encode the input on both engines and write the case."""
    from verify.adversarial.regressions.record import record_case, write_case
    from verify.executors.pool import EnginePool
    from verify.sample import Sample

    if not (args.engine and len(args.engine) == 1 and args.reference and args.text is not None):
        raise UsageError("--add ID needs one --engine SPEC, --reference SPEC and --text TEXT")
    text = args.text.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in args.text \
        else args.text
    with EnginePool(engine_options(args)) as pool:
        reference, engine = pool.start([args.reference, args.engine[0]])
        doc = record_case(args.add, args.title, engine, reference, Sample.plain(args.add, text), args.notes)
    path = write_case(args.cases or _default_cases(), doc)
    print(f"recorded {path}: token {doc.get('token_index')} differs")
    return EXIT_OK


def run(args) -> int:
    from verify.adversarial.regressions.cases import load_cases, replay_all
    from verify.comparison import sample_size
    from verify.job import CommandJob

    if args.add:
        return add_case(args)
    options = engine_options(args)
    folder = args.cases or _default_cases()
    cases = load_cases(folder)
    if args.engine:
        cases = [c for c in cases if any(f == c.engine or f in c.engine for f in args.engine)]
        if not cases:
            raise UsageError(f"no regression case in {folder} has engine {', '.join(args.engine)}")
    if not cases:
        raise UsageError(f"no regression cases (*.json) in {folder}")
    out = out_dir(args, "recheck")

    started = time.time()
    width = max(len(c.id) for c in cases)

    def show(result) -> None:
        verdict = _verdict(result, args.allow_unavailable)
        print(f"{_label(result):19} {result.case.id:{width}}  {verdict}: {result.detail}", flush=True)

    with CommandJob("recheck", out, args.argv, options) as job:
        job.reference, job.candidates = _specs(cases)
        job.sources = [{"name": str(folder), "kind": "regression-cases", "cases": len(cases)}]
        results = replay_all(cases, job.pool, on_result=show)
        versions = {spec: {"package": ident.get("package"), "version": ident.get("package_version")}
                    if "identity_error" not in ident else {"identity_error": ident["identity_error"]}
                    for spec, ident in job.pool.identities().items()}
        versions |= {spec: {"unavailable": why} for spec, why in job.pool.not_loaded.items()}

        verdicts = [_verdict(r, args.allow_unavailable) for r in results]
        failing = [r for r, v in zip(results, verdicts) if v not in ("ok", "skipped")]
        skipped = sum(v == "skipped" for v in verdicts)  # allowed to be unavailable: not replayed, not "as recorded"
        as_recorded = len(results) - len(failing) - skipped
        counts: dict[str, int] = {}
        for r, v in zip(results, verdicts):
            counts[r.status] = counts.get(r.status, 0) + 1
            state = _state(r, v)
            if state is not None:
                chars, nbytes = sample_size(r.case.sample)
                job.counts.samples += 1
                job.counts.chars += chars
                job.counts.bytes += nbytes
                job.counts.states[state] += 1
                job.counts.engine(r.case.engine)[state] += 1
        fixed = [r.case.id for r in results if r.status == "fixed" and r.case.status != "fixed"]
        report = {
            "schema": "verify.recheck/1",
            "argv": args.argv,
            "cases_dir": str(folder),
            "started": started,
            "finished": time.time(),
            "engines": versions,
            "counts": counts,
            "as_recorded": as_recorded,
            "skipped": skipped,
            "changed": [r.case.id for r in failing],
            "newly_fixed": fixed,
            "results": [r.to_json() | {"verdict": v} for r, v in zip(results, verdicts)],
        }
        job.extra["recheck"] = {k: report[k] for k in ("counts", "as_recorded", "skipped", "changed", "newly_fixed")}
        atomic.write_json(out / "recheck.json", report)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    print(f"{len(results)} cases: {summary}; {as_recorded} as recorded, {len(failing)} changed, "
          f"{skipped} not replayed -> {out / 'recheck.json'}")
    if fixed:
        print(f"FIXED upstream ({len(fixed)}): {', '.join(fixed)} -- mark them \"status\": \"fixed\"")
    if not failing and as_recorded == 0:
        print("verify: no case could be replayed: nothing was checked", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_FINDINGS if failing else EXIT_OK
