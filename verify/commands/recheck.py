"""`verify recheck`: replay every regression case (adversarial/regressions/) and say what changed.

A hunt on the one pipeline (``verify.adversarial.regressions.hunt``): groups of cases in
case-file order are its shards, so ``--workers N``, ``--executor ray``, ``--resume --out OUT``
and the live status work as for ``verify run``. Every worker starts each engine the cases
name once (isolated workers by default; ``--in-process``, ``--timeout``,
``--memory-limit-mb`` as in every command). Writes ``OUT/recheck.json`` (one result per
case, with its ``input_key``), the manifest and summary, where every replayed case is one
sample: verified when it behaves as recorded. A case allowed to be unavailable
(``--allow-unavailable``) is not counted.

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
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_job_options, add_out_option, add_pool_options, engine_options, job_options
from verify.errors import UsageError


def _default_cases() -> Path:
    from verify.config import declared

    return declared("adversarial", "regressions")


def add_parser(sub) -> None:
    p = sub.add_parser("recheck", help="replay the regression cases and report what changed")
    p.add_argument("--cases", type=Path, metavar="DIR", help="case folder (default adversarial/regressions)")
    p.add_argument("--engine", action="append", metavar="SPEC",
                   help="only cases whose engine is SPEC (as written in the case, or a substring of it); repeatable")
    add_out_option(p, "recheck")
    p.add_argument("--allow-unavailable", action="store_true",
                   help="an engine that is not installed does not fail the run (it is still reported)")
    p.add_argument("--add", metavar="ID", help="record a new case instead: --engine SPEC --reference SPEC --text T, "
                                               "or --from OUT --cluster KEY")
    p.add_argument("--from", dest="from_out", type=Path, metavar="OUT",
                   help="with --add: a hunt's OUT whose cluster --cluster KEY gives the case (its minimised "
                        "reproducer, and the calls before it when it depends on history)")
    p.add_argument("--cluster", metavar="KEY", help="with --from: the cluster's key (clusters.json)")
    p.add_argument("--reference", metavar="SPEC", help="with --add: the reference")
    p.add_argument("--text", metavar="TEXT", help="with --add: the input (plain text; \\uXXXX escapes allowed)")
    p.add_argument("--title", default="", help="with --add: one line, what goes wrong")
    p.add_argument("--notes", default="", help="with --add: the command that found it, the suspected cause")
    add_job_options(p, minimize_budget=None)
    add_pool_options(p)


def _from_cluster(args):
    """``(engine spec, reference spec, sample, history or None)`` of ``--cluster KEY`` in ``--from OUT``."""
    from verify.history import History
    from verify.sample import Sample
    from verify.triage import read_clusters

    if not args.cluster:
        raise UsageError("--from OUT needs --cluster KEY (a key of OUT/clusters.json)")
    try:
        clusters = read_clusters(args.from_out)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--from {args.from_out}: no readable clusters.json ({exc})") from None
    found = [c for c in clusters if c.get("key") == args.cluster]
    if not found:
        raise UsageError(f"--cluster {args.cluster!r}: not among the {len(clusters)} clusters of "
                         f"{args.from_out}/clusters.json")
    block = found[0].get("example_minimized")
    if not block or not block.get("input"):
        raise UsageError(f"--cluster {args.cluster!r} has no minimised reproducer to record")
    sample = Sample.from_segments(args.add, [(t, bool(a)) for t, a in block["input"]])
    history = History.from_json(block["history"], sample_id=args.add) if block.get("history") else None
    if history is not None and (history.victim_sample is None or history.victim_sample.segments != sample.segments):
        raise UsageError(f"--cluster {args.cluster!r}: its history's victim is a whole batch call, which a "
                         "case cannot hold yet")
    return found[0]["engine"], found[0]["reference"], sample, history


def add_case(args) -> int:
    """``verify recheck --add ID``: encode the input on both engines and write the case."""
    from verify.adversarial.regressions.record import check_case_id, record_case, write_case
    from verify.executors.pool import EnginePool
    from verify.sample import Sample

    check_case_id(args.add)  # before any engine starts
    if args.from_out is not None:
        engine_spec, reference_spec, sample, history = _from_cluster(args)
    elif args.engine and len(args.engine) == 1 and args.reference and args.text is not None:
        text = args.text.encode("latin-1", "backslashreplace").decode("unicode_escape") if "\\" in args.text \
            else args.text
        engine_spec, reference_spec, sample, history = args.engine[0], args.reference, Sample.plain(args.add, text), None
    else:
        raise UsageError("--add ID needs one --engine SPEC, --reference SPEC and --text TEXT, or --from OUT "
                         "--cluster KEY")
    with EnginePool(engine_options(args)) as pool:
        reference, engine = pool.start([reference_spec, engine_spec])
        doc = record_case(args.add, args.title, engine, reference, sample, args.notes, history=history)
    path = write_case(args.cases or _default_cases(), doc)
    print(f"recorded {path}: token {doc.get('token_index')} differs")
    return EXIT_OK


def run(args) -> int:
    from verify.adversarial.regressions.cases import load_cases
    from verify.adversarial.regressions.hunt import label
    from verify.jobs.recheck import recheck_job

    if args.add:
        return add_case(args)
    folder = args.cases or _default_cases()
    cases = load_cases(folder)
    if args.engine:
        cases = [c for c in cases if any(f == c.engine or f in c.engine for f in args.engine)]
        if not cases:
            raise UsageError(f"no regression case in {folder} has engine {', '.join(args.engine)}")
    if not cases:
        raise UsageError(f"no regression cases (*.json) in {folder}")
    result = recheck_job(cases, job_options(args, "recheck"), allow_unavailable=args.allow_unavailable,
                         cases_dir=folder)
    width = max(len(c.id) for c in cases)
    for doc in result.results:
        print(f"{label(doc):19} {doc['id']:{width}}  {doc['verdict']}: {doc['detail']}")
    report, out = result.report, result.out
    summary = ", ".join(f"{n} {s}" for s, n in sorted(report["counts"].items()))
    print(f"{len(result.results)} cases: {summary}; {report['as_recorded']} as recorded, {len(report['changed'])} "
          f"changed, {report['skipped']} not replayed -> {out / 'recheck.json'}")
    fixed = report["newly_fixed"]
    if fixed:
        print(f"FIXED upstream ({len(fixed)}): {', '.join(fixed)} -- mark them \"status\": \"fixed\"")
    if not result.complete:
        print(f"verify: the recheck did not finish: continue it with --resume --out {out}", file=sys.stderr)
        return EXIT_FINDINGS
    if not report["changed"] and report["as_recorded"] == 0:
        print("verify: no case could be replayed: nothing was checked", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_FINDINGS if report["changed"] else EXIT_OK
