"""The check kinds of a gate suite: one row each -- its typed options, the options it
needs, what else it checks across options, and the function that runs it by calling the
job function of its command (``verify.jobs``, ``verify.driver``). No argv is rebuilt.

    kind        job function                       clusters from
    corpus      verify.driver.run_job (resumable)  clusters.json (triage)
    replay      run_job with traces (resumable)    clusters.json
    fuzz        verify.jobs.fuzz.fuzz_job          clusters.json + masked allowlisted
    unicode     verify.jobs.unicode.unicode_job    unicode.json
    vocab       verify.jobs.vocab.vocab_job        clusters.json
    recheck     verify.jobs.recheck.recheck_job    recheck.json
    metamorphic verify.jobs.check.check_job        clusters.json, per candidate (OUT/checks/NAME/N-SPEC)
    length      verify.jobs.length.length_job      clusters.json (the thresholds in length.json)

A new kind is one row of ``KINDS`` and one function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from verify.errors import ConfigError
from verify.gate import collect
from verify.gate.check_run import CheckContext, CheckRun, fresh_folder, tally
from verify.toml_config import POSITIVE, SEED, boolean, choices, fraction, integer, seconds, text, texts

Validator = Callable[[Any, str], Any]


def _cli_bounds() -> dict[str, Validator]:
    """The checks of the options whose bounds live with their hunts -- the very bounds the command
    line enforces (``--max-examples``, ``--pairs``, ``--max-chars``), so a suite is refused before
    any check runs for what the command would refuse when the check starts."""
    from verify.adversarial.certify.hunt import MAX_REPS
    from verify.adversarial.certify.space import MAX_K
    from verify.adversarial.fuzz.search import MAX_EXAMPLES
    from verify.adversarial.length.hunt import MAX_CHARS
    from verify.adversarial.vocab.hunt import MAX_PAIRS

    return {"examples": integer(1, MAX_EXAMPLES), "pairs": integer(0, MAX_PAIRS), "max_chars": integer(2, MAX_CHARS),
            "certify_k": integer(1, MAX_K), "certify_reps": integer(1, MAX_REPS)}


BOUNDS = _cli_bounds()


@dataclass(frozen=True)
class CheckKind:
    name: str
    options: dict[str, Validator]  # the row's own keys and their checkers
    run: Callable[[CheckContext, CheckRun], None]
    required: tuple[str, ...] = ()
    paths: frozenset[str] = field(default_factory=frozenset)  # always paths: resolved against the suite's folder
    validate: Callable[[dict[str, Any], str], None] | None = None  # checks across options (``at`` names the row)


def code_point_range(value, where):
    """``["0000", "3000"]``: first code point and one past the last (hex, ``U+`` allowed)."""
    if not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be [\"START\", \"STOP\"] in hex (STOP one past the last code point)")
    try:
        start, stop = (int(v.strip().removeprefix("U+").removeprefix("u+"), 16) for v in value)
    except ValueError:
        raise ConfigError(f"{where}: {value!r} is not a pair of hex code points") from None
    if not 0 <= start < stop <= 0x110000:
        raise ConfigError(f"{where}: need 0 <= START < STOP <= 110000, got {value!r}")
    return [start, stop]


def _job(ctx: CheckContext, out: Path | None = None, minimize_budget_s: float = 0.0):
    from verify.pipeline.hunt import JobOptions

    return JobOptions(out=out or ctx.out, engine=ctx.suite.engine_options(), workers=ctx.suite.workers,
                      progress=False, minimize_budget_s=minimize_budget_s, argv=list(ctx.argv))


# --- corpus and replay ---------------------------------------------------------------

def _pipeline(ctx: CheckContext, run: CheckRun, corpora: list[str], traces: list[str] | None = None) -> None:
    from verify.driver import RunOptions, run_job
    from verify.rundir.layout import RunFolder

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    resume = RunFolder(out).plan.is_file()
    if not resume:
        fresh_folder(out)
    run_job(RunOptions(
        reference=suite.reference, candidates=list(suite.candidates), corpora=corpora, traces=traces,
        trace_format=o.get("format"), trace_template=o.get("template"), out=out, text_field=o.get("text_field"),
        id_field=o.get("id_field"),
        limit=o.get("limit"), batch_size=o.get("batch_size"), sample_rate=o.get("sample"),
        sample_seed=o.get("seed"), isolate=not suite.in_process, timeout_s=suite.timeout_s,
        memory_limit_mb=suite.memory_limit_mb, load_timeout_s=suite.load_timeout_s, workers=suite.workers,
        progress=False,
        minimize_budget_s=ctx.spec.minimize_budget, resume=resume, argv=ctx.argv))
    if resume:
        run.notes.append("resumed: only shards not committed before ran")
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(), 0.0)
    tally(run, [out], ctx.spec.allow_skipped)


def run_corpus(ctx: CheckContext, run: CheckRun) -> None:
    _pipeline(ctx, run, ctx.spec.options["corpus"])


def run_replay(ctx: CheckContext, run: CheckRun) -> None:
    from verify.executors.pool import EnginePool

    with EnginePool(ctx.suite.engine_options()) as pool:
        stateless = [ex.spec for ex in pool.start(list(ctx.suite.candidates)) if not ex.capabilities.sessions]
    _pipeline(ctx, run, [], ctx.spec.options["traces"])
    if stateless:
        run.notes.append(f"{', '.join(stateless)} has no stateful sessions: each turn's whole transcript was "
                         f"encoded from scratch; the session path is not tested")
        if len(stateless) == len(ctx.suite.candidates):
            run.state = "skipped"


def _corpus_seed(options: dict[str, Any], at: str) -> None:
    if "seed" in options and "sample" not in options:
        raise ConfigError(f"{at}: 'seed' goes with 'sample'")


# --- hunts -----------------------------------------------------------------------------

def run_fuzz(ctx: CheckContext, run: CheckRun) -> None:
    from verify.adversarial.fuzz.hunt import DEFAULT_MAX_FINDINGS
    from verify.jobs.fuzz import fuzz_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    fresh_folder(out)
    database = Path(o["database"]) if "database" in o else out.resolve() / "hypothesis"
    result = fuzz_job(suite.reference, list(suite.candidates), _job(ctx), max_examples=o.get("examples"),
                      budget_s=o.get("seconds"), seed=o.get("seed"), database_dir=database.resolve(),
                      max_findings=o.get("max_findings", DEFAULT_MAX_FINDINGS), allowlist=ctx.allowlist, tags=[],
                      stress=o.get("stress", True))
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(),
                                            ctx.spec.minimize_budget)
    run.clusters += collect.masked_fuzz_clusters(result.manifest, suite.reference, ctx.spec.name, ctx.rel)
    tally(run, [out], ctx.spec.allow_skipped)


def run_unicode(ctx: CheckContext, run: CheckRun) -> None:
    from verify.adversarial.unicode.contexts import MAX_CP
    from verify.jobs.unicode import unicode_job

    fresh_folder(ctx.out)
    start, stop = ctx.spec.options.get("range", [0, MAX_CP + 1])
    unicode_job(ctx.suite.reference, list(ctx.suite.candidates), _job(ctx), start=start, stop=stop)
    run.clusters = collect.unicode_clusters(ctx.out, ctx.spec.name, ctx.rel)
    tally(run, [ctx.out], ctx.spec.allow_skipped)


def _unicode_range(options: dict[str, Any], at: str) -> None:
    if "range" in options and options.get("full"):
        raise ConfigError(f"{at}: give 'range' or 'full = true', not both")


def run_vocab(ctx: CheckContext, run: CheckRun) -> None:
    from verify.jobs.vocab import vocab_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    fresh_folder(out)
    vocab_job(suite.reference, list(suite.candidates), _job(ctx, minimize_budget_s=ctx.spec.minimize_budget),
              **{k: o[k] for k in ("limit", "pairs", "seed", "max_findings") if k in o},
              parts=o.get("parts"))
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(), 0.0)
    tally(run, [out], ctx.spec.allow_skipped)


def run_recheck(ctx: CheckContext, run: CheckRun) -> None:
    import shutil

    from verify.adversarial.regressions.cases import load_cases
    from verify.config import declared
    from verify.jobs.recheck import recheck_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    folder = Path(o.get("cases") or declared("adversarial", "regressions"))
    cases = [c for c in load_cases(folder) if any(cand.builds_same_engine(c.engine) for cand in suite.candidates)]
    fresh_folder(out)
    if not cases:
        run.state = "skipped"
        run.notes.append(f"no regression case in {folder} is for {', '.join(suite.candidates)}")
        return
    chosen = out / "cases"  # exactly the cases replayed, kept beside the report
    chosen.mkdir()
    for case in cases:
        shutil.copy2(case.path, chosen / case.path.name)
    result = recheck_job(load_cases(chosen), _job(ctx), allow_unavailable=o.get("allow_unavailable", False),
                         cases_dir=chosen)
    run.clusters = collect.recheck_clusters(out, ctx.spec.name, ctx.rel)
    if result.report.get("as_recorded", 0) == 0 and not result.report.get("changed"):
        run.problems.append("no regression case could be replayed: nothing was checked")
    run.notes.append(f"{len(cases)} cases of {folder} replayed")
    tally(run, [out], ctx.spec.allow_skipped)


def run_metamorphic(ctx: CheckContext, run: CheckRun) -> None:
    from verify.jobs.check import check_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    fresh_folder(out)
    outs = []
    checks = list(o.get("checks") or []) or None
    if o.get("stress") is False:
        from verify.adversarial.checks.metamorphic import CHECKS

        checks = [c for c in (checks or CHECKS) if c != "stress"]
    for i, engine in enumerate(suite.candidates, 1):
        sub = out if len(suite.candidates) == 1 else out / f"{i}-{''.join(c if c.isalnum() else '-' for c in engine)}"
        check_job(engine, _job(ctx, sub, minimize_budget_s=ctx.spec.minimize_budget),
                  corpora=list(o.get("corpus", ["smoke"])), limit=o.get("limit"), checks=checks,
                  stress_budget_s=o.get("stress_seconds"), reference=suite.reference,
                  stress_phases=o.get("stress_phases"))
        rel = ctx.rel if sub == out else f"{ctx.rel}/{sub.name}"
        run.clusters += collect.triaged_clusters(sub, ctx.spec.name, rel, suite.engine_options(),
                                                 ctx.spec.minimize_budget)
        outs.append(sub)
    tally(run, outs, ctx.spec.allow_skipped)


def run_length(ctx: CheckContext, run: CheckRun) -> None:
    from verify.jobs.length import length_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    fresh_folder(out)
    result = length_job(suite.reference, list(suite.candidates), _job(ctx, minimize_budget_s=ctx.spec.minimize_budget),
                        max_chars=o.get("max_chars"), kinds=o.get("kinds"), families=o.get("families"))
    for spec, doc in result.report["candidates"].items():
        if doc["thresholds"]:
            run.notes.append(f"{spec}: first divergent lengths " + ", ".join(
                f"{t['length']:,} ({len(t['families'])} families)" for t in doc["thresholds"][:5]))
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(), 0.0)
    tally(run, [out], ctx.spec.allow_skipped)


def run_certificate(ctx: CheckContext, run: CheckRun) -> None:
    """Bounded-exhaustive parity (``verify certify``): every string of at most ``k`` atoms. Its
    verdict follows from ``k`` and ``reps`` alone, never from the machine's load."""
    from verify.jobs.certify import certify_job

    suite, o, out = ctx.suite, ctx.spec.options, ctx.out
    fresh_folder(out)
    result = certify_job(suite.reference, list(suite.candidates), _job(ctx, minimize_budget_s=ctx.spec.minimize_budget),
                         k=o.get("k"), reps=o.get("reps"))
    doc = result.certificate
    run.notes.append(doc.get("statement") or f"certificate: {doc['verdict']}")
    if doc["verdict"] != "equal":
        run.problems.append(f"certificate verdict: {doc['verdict']} (every string of at most {doc['k']} atoms)")
    run.clusters = collect.triaged_clusters(out, ctx.spec.name, ctx.rel, suite.engine_options(), 0.0)
    tally(run, [out], ctx.spec.allow_skipped)


def _metamorphic_checks(options: dict[str, Any], at: str) -> None:
    if "checks" in options:
        from verify.adversarial.checks.metamorphic import CHECKS

        options["checks"] = choices(*CHECKS)(options["checks"], f"{at}: 'checks'")
    if "stress_phases" in options:
        from verify.adversarial.checks.stress import PHASES

        options["stress_phases"] = choices(*PHASES)(options["stress_phases"], f"{at}: 'stress_phases'")


KINDS: dict[str, CheckKind] = {k.name: k for k in [
    CheckKind("corpus", {"corpus": texts, "sample": fraction, "seed": SEED, "limit": POSITIVE,
                         "text_field": text, "id_field": text, "batch_size": POSITIVE},
              run_corpus, required=("corpus",), validate=_corpus_seed),
    CheckKind("replay", {"traces": texts, "format": text, "template": text, "limit": POSITIVE}, run_replay,
              required=("traces",)),
    CheckKind("fuzz", {"examples": BOUNDS["examples"], "seconds": seconds(True), "seed": SEED,
                       "max_findings": POSITIVE, "stress": boolean, "database": text},
              run_fuzz, paths=frozenset({"database"})),
    CheckKind("unicode", {"range": code_point_range, "full": boolean}, run_unicode, validate=_unicode_range),
    CheckKind("vocab", {"limit": POSITIVE, "parts": choices("tokens", "pairs", "special"), "pairs": BOUNDS["pairs"],
                        "seed": SEED, "max_findings": POSITIVE}, run_vocab),
    CheckKind("recheck", {"cases": text, "allow_unavailable": boolean}, run_recheck, paths=frozenset({"cases"})),
    CheckKind("length", {"max_chars": BOUNDS["max_chars"], "kinds": choices("run", "block", "separator", "token", "special"),
                         "families": texts}, run_length),
    CheckKind("certificate", {"k": BOUNDS["certify_k"], "reps": BOUNDS["certify_reps"]}, run_certificate),
    CheckKind("metamorphic", {"corpus": texts, "limit": POSITIVE, "checks": texts, "stress": boolean,
                              "stress_seconds": seconds(True), "stress_phases": texts}, run_metamorphic,
              validate=_metamorphic_checks),
]}
