"""Run one check of a gate suite into ``OUT/checks/NAME/`` through the command code that
exists for it, in this process, and read back what it committed.

    run_check(context) -> CheckRun

kind        runs                                                  clusters from
corpus      verify.pipeline.run.run_job (resumable)               clusters.json (triage)
replay      run_job with traces (resumable)                       clusters.json
fuzz        verify.adversarial.fuzz.search.fuzz (the allowlist masks)    clusters.json + masked allowlisted
unicode     verify.commands.unicode.unicode_job                   unicode.json
vocab       `verify vocab sweep` (its command function)           clusters.json
recheck     `verify recheck` on the cases of the candidates       recheck.json
metamorphic `verify check` per candidate (OUT/checks/NAME/N-SPEC) clusters.json

Commands that print (vocab, recheck, metamorphic) print into ``output.txt`` beside
their report. A ``CheckRun`` says how the check ran (``ran``, ``skipped`` when its
capability is missing -- e.g. a replay whose candidates have no sessions, which still
replays whole transcripts --, ``error`` with ``error_class`` config or harness), its
counts and throughput from the manifests, the clusters found, and ``problems``:
failures that are no cluster (skipped samples, an incomplete run, unverified samples
that no cluster explains). Whether it passes is decided with the allowlist
(``verify.gate.verdict``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from verify.counts import STATES, Counts
from verify.errors import VerifyError
from verify.gate import collect
from verify.gate.suite import CheckSpec, Suite
from verify import atomic

RESULT_FILE = "gate-check.json"
RESULT_SCHEMA = "verify.gate-check/1"
OUTPUT_FILE = "output.txt"


@dataclass
class CheckContext:
    suite: Suite
    spec: CheckSpec
    out: Path  # OUT/checks/NAME
    rel: str  # "checks/NAME", as gate.json names it
    allowlist: Any  # verify.allowlist.Allowlist
    argv: list[str] = field(default_factory=list)


@dataclass
class CheckRun:
    name: str
    kind: str
    digest: str
    state: str = "ran"  # ran | skipped | error
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    throughput: dict[str, float | None] = field(default_factory=dict)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    error_class: str | None = None  # config | harness
    detail: str | None = None  # a harness bug's whole message (a worker's traceback)

    def to_json(self) -> dict[str, Any]:
        return {"schema": RESULT_SCHEMA, **asdict(self)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "CheckRun":
        return cls(**{k: v for k, v in doc.items() if k != "schema"})


# --- helpers ---------------------------------------------------------------------------

def _pool_argv(suite: Suite) -> list[str]:
    argv = ["--in-process"] if suite.in_process else []
    if suite.timeout_s is not None:
        argv += ["--timeout", str(suite.timeout_s)]
    if suite.memory_limit_mb is not None:
        argv += ["--memory-limit-mb", str(suite.memory_limit_mb)]
    return argv


def _command(argv: list[str], out: Path) -> int:
    """Run a ``verify`` subcommand's own function in this process, its output into OUT/output.txt."""
    from verify.cli import _module, build_parser

    args = build_parser().parse_args(argv)
    args.argv = argv
    out.mkdir(parents=True, exist_ok=True)
    with open(out / OUTPUT_FILE, "a", encoding="utf-8") as log, contextlib.redirect_stdout(log), \
            contextlib.redirect_stderr(log):
        return _module(args.command).run(args)


def _manifest(out: Path) -> dict[str, Any]:
    path = out / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _tally(run: CheckRun, outs: list[Path], allow_skipped: bool) -> None:
    """Counts, throughput and the failures that are no cluster, from the manifests in ``outs``."""
    total, seconds = Counts(), 0.0
    for out in outs:
        manifest = _manifest(out)
        if not manifest:
            run.problems.append(f"{out.name}: no manifest.json: the command wrote no report")
            continue
        total.add(Counts.from_dict(manifest.get("counts") or {}))
        seconds += float(manifest.get("seconds") or 0.0)
        if not manifest.get("complete", False):
            run.problems.append(f"incomplete: {manifest.get('aborted') or 'shards failed or were not run'} "
                                f"(see {out.name}/manifest.json; verify gate --resume retries)")
    counts = total.as_dict()
    per_engine = counts.pop("per_engine")
    run.counts = counts
    run.throughput = {"samples_per_s": round(total.samples / seconds, 3) if seconds else None,
                      "mb_per_s": round(total.bytes / 1e6 / seconds, 6) if seconds else None,
                      "seconds": round(seconds, 3)}
    skipped = {spec: t["skipped"] for spec, t in per_engine.items() if t.get("skipped")}
    if skipped:
        text = "; ".join(f"{spec}: {n} samples skipped" for spec, n in skipped.items()) + \
            " (the engine cannot take them, e.g. special-token segments without special-token support)"
        (run.notes if allow_skipped else run.problems).append(text + (" -- allowed by allow_skipped" if allow_skipped
                                                                      else " -- allow_skipped = true accepts this"))
    unverified = sum(counts[s] for s in STATES if s not in ("verified", "skipped")) + counts["bad_records"]
    if unverified and not run.clusters:
        run.problems.append(f"{unverified} samples not verified and no cluster explains them")


def _one_line(text: str, limit: int = 400) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = " (more in gate-check.json)" if "\n" in text.strip() else ""
    return (first[:limit] + ("..." if len(first) > limit else "")) + more


def _fresh(out: Path) -> None:
    """A check that cannot resume starts again in an empty folder."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)


# --- the kinds ---------------------------------------------------------------------------

def _pipeline(ctx: CheckContext, run: CheckRun, corpora: list[str], traces: list[str] | None = None) -> None:
    from verify.rundir.plan import PLAN_FILE
    from verify.driver import RunOptions, run_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    resume = (out / PLAN_FILE).is_file()
    if not resume:
        _fresh(out)
    run_job(RunOptions(
        reference=suite.reference, candidates=list(suite.candidates), corpora=corpora, traces=traces,
        trace_format=o.get("format"), out=out, text_field=o.get("text_field"), id_field=o.get("id_field"),
        limit=o.get("limit"), batch_size=o.get("batch_size"), sample_rate=o.get("sample"),
        sample_seed=o.get("seed"), isolate=not suite.in_process, timeout_s=suite.timeout_s,
        memory_limit_mb=suite.memory_limit_mb, workers=suite.workers, progress=False,
        minimize_budget_s=ctx.spec.minimize_budget, resume=resume, argv=ctx.argv))
    if resume:
        run.notes.append("resumed: only shards not committed before ran")
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(), 0.0)
    _tally(run, [out], ctx.spec.allow_skipped)


def _corpus(ctx: CheckContext, run: CheckRun) -> None:
    _pipeline(ctx, run, ctx.spec.options["corpus"])


def _replay(ctx: CheckContext, run: CheckRun) -> None:
    from verify.executors.pool import EnginePool

    with EnginePool(ctx.suite.engine_options()) as pool:
        stateless = [ex.spec for ex in pool.start(list(ctx.suite.candidates)) if not ex.capabilities.sessions]
    _pipeline(ctx, run, [], ctx.spec.options["traces"])
    if stateless:
        run.notes.append(f"{', '.join(stateless)} has no stateful sessions: each turn's whole transcript was "
                         f"encoded from scratch; the session path is not tested")
        if len(stateless) == len(ctx.suite.candidates):
            run.state = "skipped"


def _fuzz(ctx: CheckContext, run: CheckRun) -> None:
    from verify.adversarial.fuzz.search import DEFAULT_MAX_FINDINGS, fuzz

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    _fresh(out)
    database = Path(o["database"]) if "database" in o else out.resolve() / "hypothesis"
    result = fuzz(suite.reference, list(suite.candidates), out_dir=out, max_examples=o.get("examples"),
                  budget_s=o.get("seconds"), seed=o.get("seed"), database_dir=database.resolve(),
                  engine=suite.engine_options(), max_findings=o.get("max_findings", DEFAULT_MAX_FINDINGS),
                  argv=ctx.argv, allowlist=ctx.allowlist, tags=[], stress=o.get("stress", True))
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(),
                                            ctx.spec.minimize_budget)
    run.clusters += collect.masked_fuzz_clusters(result.manifest, suite.reference, ctx.spec.name, ctx.rel)
    _tally(run, [out], ctx.spec.allow_skipped)


def _unicode(ctx: CheckContext, run: CheckRun) -> None:
    from verify.adversarial.unicode.contexts import MAX_CP
    from verify.jobs.unicode import unicode_job
    from verify.pipeline.hunt import JobOptions

    _fresh(ctx.out)
    start, stop = ctx.spec.options.get("range", [0, MAX_CP + 1])
    unicode_job(ctx.suite.reference, list(ctx.suite.candidates),
                JobOptions(out=ctx.out, engine=ctx.suite.engine_options(), workers=ctx.suite.workers,
                           progress=False, argv=ctx.argv), start=start, stop=stop)
    run.clusters = collect.unicode_clusters(ctx.out, ctx.spec.name, ctx.rel)
    _tally(run, [ctx.out], ctx.spec.allow_skipped)


def _vocab(ctx: CheckContext, run: CheckRun) -> None:
    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    _fresh(out)
    argv = ["vocab", "sweep", "--reference", suite.reference, *[a for c in suite.candidates for a in ("--candidate", c)],
            "--out", str(out), "--minimize-budget", str(ctx.spec.minimize_budget), "--no-progress", *_pool_argv(suite)]
    for key, flag in (("limit", "--limit"), ("pairs", "--pairs"), ("seed", "--seed"), ("max_findings", "--max-findings")):
        if key in o:
            argv += [flag, str(o[key])]
    argv += [a for part in o.get("parts", []) for a in ("--part", part)]
    _command(argv, out)
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(), 0.0)
    _tally(run, [out], ctx.spec.allow_skipped)


def _same_engine(a: str, b: str) -> bool:
    from verify.engines.registry import parse_spec

    pa, pb = parse_spec(a), parse_spec(b)
    return (pa.adapter, pa.target, pa.options) == (pb.adapter, pb.target, pb.options)


def _recheck(ctx: CheckContext, run: CheckRun) -> None:
    from verify.adversarial.regressions.cases import load_cases
    from verify.config import project_dir

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    folder = Path(o.get("cases") or project_dir() / "adversarial" / "regressions")
    cases = [c for c in load_cases(folder) if any(_same_engine(c.engine, cand) for cand in suite.candidates)]
    _fresh(out)
    if not cases:
        run.state = "skipped"
        run.notes.append(f"no regression case in {folder} is for {', '.join(suite.candidates)}")
        return
    chosen = out / "cases"  # exactly the cases replayed, kept beside the report
    chosen.mkdir()
    for case in cases:
        shutil.copy2(case.path, chosen / case.path.name)
    argv = ["recheck", "--cases", str(chosen), "--out", str(out), *_pool_argv(suite)]
    if o.get("allow_unavailable"):
        argv.append("--allow-unavailable")
    _command(argv, out)
    run.clusters = collect.recheck_clusters(out, ctx.spec.name, ctx.rel)
    report = json.loads((out / "recheck.json").read_text(encoding="utf-8"))
    if report.get("as_recorded", 0) == 0 and not report.get("changed"):
        run.problems.append("no regression case could be replayed: nothing was checked")
    run.notes.append(f"{len(cases)} cases of {folder} replayed")
    _tally(run, [out], ctx.spec.allow_skipped)


def _metamorphic(ctx: CheckContext, run: CheckRun) -> None:
    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    _fresh(out)
    outs = []
    for i, engine in enumerate(suite.candidates, 1):
        sub = out if len(suite.candidates) == 1 else out / f"{i}-{''.join(c if c.isalnum() else '-' for c in engine)}"
        argv = ["check", "--engine", engine, "--out", str(sub), *_pool_argv(suite),
                *[a for c in o.get("corpus", ["smoke"]) for a in ("--corpus", c)],
                *[a for c in o.get("checks", []) for a in ("--check", c)]]
        if "limit" in o:
            argv += ["--limit", str(o["limit"])]
        if o.get("stress") is False:
            argv.append("--no-stress")
        if "stress_seconds" in o:
            argv += ["--stress-budget", str(o["stress_seconds"])]
        _command(argv, sub)
        rel = ctx.rel if sub == out else f"{ctx.rel}/{sub.name}"
        run.clusters += collect.triaged_clusters(sub, ctx.spec.name, rel, suite.engine_options(),
                                                 ctx.spec.minimize_budget)
        outs.append(sub)
    _tally(run, outs, ctx.spec.allow_skipped)


RUNNERS: dict[str, Callable[[CheckContext, CheckRun], None]] = {
    "corpus": _corpus, "replay": _replay, "fuzz": _fuzz, "unicode": _unicode, "vocab": _vocab,
    "recheck": _recheck, "metamorphic": _metamorphic,
}


def run_check(ctx: CheckContext) -> CheckRun:
    """Run the check; an error is recorded in the result (``state`` error), never raised,
    except Ctrl-C. ``$VERIFY_DEBUG`` lets a harness bug through with its traceback."""
    run = CheckRun(ctx.spec.name, ctx.spec.kind, ctx.spec.digest())
    started = time.monotonic()
    try:
        RUNNERS[ctx.spec.kind](ctx, run)
    except KeyboardInterrupt:
        raise
    except VerifyError as exc:
        run.state, run.error_class = "error", "config"
        run.notes.append(_one_line(str(exc)))
    except Exception as exc:  # a bug in verify itself
        if os.environ.get("VERIFY_DEBUG"):
            raise
        run.state, run.error_class = "error", "harness"
        run.notes.append(_one_line(f"harness bug: {type(exc).__name__}: {exc}"))
        run.detail = str(exc)
    run.seconds = round(time.monotonic() - started, 3)
    return run


def save_run(run: CheckRun, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / RESULT_FILE, run.to_json())


def load_run(out: Path) -> CheckRun | None:
    path = out / RESULT_FILE
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    return CheckRun.from_json(doc) if doc.get("schema") == RESULT_SCHEMA else None
