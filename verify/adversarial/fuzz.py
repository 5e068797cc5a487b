"""Differential fuzzing (``verify fuzz``): hypothesis generates hostile samples
(``verify.adversarial.strategies``), every engine encodes each one, and the first
sample on which a candidate differs from the reference -- or on which any engine
raises, crashes or hangs -- is shrunk by hypothesis and written as a finding.

Design. Engines are started once (isolated workers by default) and reused for
every example. One hypothesis run compares all candidates in the pool on each
example; it stops at its first failing example, which hypothesis shrinks (it may
slip to a smaller failure of another engine). The shrunk example is written as
one finding per engine that fails on it, and each finding's ``signature`` (engine,
kind, the two ids at the first difference or the exception type) becomes *known*.
Then a fresh run goes on, in which an example whose failures are all known counts
as diverged but does not stop the run: the search (and the shrinker) look for a
different bug. An engine leaves the pool after ``max_findings`` findings (default
5; 1 gives one smallest reproducer per engine); fuzzing ends when the pool is
empty, the reference has ``max_findings`` findings, or the budget is spent.

Comparison, counting and finding records are the ordinary pipeline's:
``verify.comparison.compare_batch`` on one-sample batches, engines from the
job's ``EnginePool``, the manifest and summary of ``verify.job.CommandJob``. Every example hypothesis executes
(search and shrink steps) is one sample in ``counts``; ``verified`` counts the
examples on which every engine agreed.

Budget: ``max_examples`` examples and ``budget_s`` seconds of searching,
whichever comes first (defaults 2000 or ``$VERIFY_FUZZ_EXAMPLES``, and 60 s).
Shrinking a found failure is not cut by ``budget_s``; it has its own limit of
``SHRINK_S`` seconds per finding (hypothesis' own limit is 500 shrinks).

Replay: hypothesis' example database (``adversarial/hypothesis/`` under the
project directory by default) keeps failing examples keyed by the reference, the
candidates still in the pool and the round, so the next ``verify fuzz`` with the same
engines tries them first.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from verify.comparison import Side, compare_batch
from verify.counts import Counts
from verify.errors import UsageError
from verify.executors.pool import EngineOptions
from verify.findings import Finding
from verify.pipeline.shard_task import encode_all

DEFAULT_EXAMPLES = 2000
DEFAULT_BUDGET_S = 60.0
DEFAULT_DATABASE = Path("adversarial/hypothesis")
DEFAULT_MAX_FINDINGS = 5
SHRINK_S = 120.0
EXAMPLES_ENV = "VERIFY_FUZZ_EXAMPLES"
SOURCE = "fuzz"


class Divergence(Exception):
    """Raised inside the hypothesis test when an example fails: carries the sample
    and the findings the comparison produced for it."""

    def __init__(self, sample, findings: list[Finding]):
        self.sample = sample
        self.findings = findings
        kinds = ", ".join(f"{f.kind} in {f.engine}" for f in findings)
        super().__init__(f"{kinds} on {sample.text[:200]!r}")


class _BudgetSpent(BaseException):
    """Stops a hypothesis run when the time budget is spent (a BaseException, so
    hypothesis does not take it for a failure and shrink it)."""


@dataclass
class Round:
    candidates: list[str]
    examples: int = 0  # generated while searching (counted against max_examples)
    shrink_examples: int = 0  # run while shrinking a failure
    found: list[str] = field(default_factory=list)
    ended: str = ""  # "finding" | "examples" | "time" | "shrink-time" | "flaky"
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"candidates": self.candidates, "examples": self.examples, "shrink_examples": self.shrink_examples,
                "found": self.found,
                "ended": self.ended, "seconds": round(self.seconds, 3)}


@dataclass
class FuzzResult:
    counts: Counts
    out: Path
    manifest: dict
    findings: list[dict]
    rounds: list[Round]

    @property
    def found(self) -> bool:
        return bool(self.findings)


def default_examples() -> int:
    raw = os.environ.get(EXAMPLES_ENV)
    if not raw:
        return DEFAULT_EXAMPLES
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"${EXAMPLES_ENV} must be an integer, got {raw!r}") from None
    if value < 1:
        raise UsageError(f"${EXAMPLES_ENV} must be at least 1")
    return value


def resolve_database(database_dir: Path | None) -> Path | None:
    if database_dir is None:
        return None
    if not database_dir.is_absolute():
        from verify.config import project_dir

        database_dir = project_dir() / database_dir
    return database_dir


def signature(finding: Finding) -> frozenset[tuple]:
    """What counts as 'the same bug' while searching. A finding is known when any
    of its keys is: for ``ids`` the reference's id and the candidate's id at the
    first difference (each with the engine), for ``error`` the exception type, for
    ``crash``/``timeout`` the kind. Coarse on purpose: a candidate that matches
    ``<|endoftext|>`` in plain text differs in many contexts (``<|``, ``:<|``,
    `` <|`` in the reference) but always emits the same special id, and counts once."""
    fields = finding.fields
    if finding.kind == "ids":
        keys = set()
        for side in ("expected", "actual"):
            window = fields[side]
            i = fields["token_index"] - window["start"]
            if i < len(window["ids"]):
                keys.add((finding.engine, "ids", side, window["ids"][i]))
        return frozenset(keys or {(finding.engine, "ids")})
    if finding.kind == "error":
        return frozenset({(finding.engine, "error", fields.get("error", {}).get("type"))})
    return frozenset({(finding.engine, finding.kind)})


def _sort_key(sample) -> tuple:
    """Hypothesis-like order for 'smaller': fewer characters, fewer segments, lower code points."""
    return (len(sample.text), len(sample.segments), sample.text)


def fuzz(reference_spec: str, candidate_specs: Sequence[str], *, out_dir: Path, max_examples: int | None = None,
         budget_s: float | None = None, seed: int | None = None, database_dir: Path | None = DEFAULT_DATABASE,
         engine: EngineOptions | None = None, long_max: int | None = None,
         max_findings: int = DEFAULT_MAX_FINDINGS, argv: list[str] | None = None) -> FuzzResult:
    """Fuzz ``candidate_specs`` against ``reference_spec``; write findings, manifest
    and summary into ``out_dir``. ``database_dir=None`` keeps no example database;
    a relative one is taken from the project directory."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Flaky

    from verify.adversarial import strategies
    from verify.job import CommandJob

    candidates = list(candidate_specs)
    if not candidates:
        raise UsageError("no candidate engine: pass --candidate SPEC")
    if reference_spec in candidates:
        raise UsageError(f"'{reference_spec}' is both the reference and a candidate")
    max_examples = default_examples() if max_examples is None else max_examples
    budget_s = DEFAULT_BUDGET_S if budget_s is None else budget_s
    if max_examples < 1:
        raise UsageError("--max-examples must be at least 1")
    if budget_s <= 0:
        raise UsageError("--budget must be positive")
    if max_findings < 1:
        raise UsageError("--max-findings must be at least 1")
    database_dir = resolve_database(database_dir)
    database = DirectoryBasedExampleDatabase(str(database_dir)) if database_dir is not None else None
    long_max = strategies.LONG_RUN_MAX if long_max is None else long_max

    with CommandJob("fuzz", out_dir, argv or [], engine) as job:
        reference, *pool = job.pool.start([reference_spec, *candidates])
        job.reference, job.candidates = reference_spec, candidates
        special = all(ex.capabilities.special_tokens for ex in [reference, *pool])
        documents = strategies.documents(special=special, long_max=long_max)
        job.sources = [{"name": SOURCE, "kind": "hypothesis", "strategies": sorted(strategies.STRATEGIES),
                        "special_segments": special, "long_run_max": long_max}]
        counts = job.counts
        records: list[dict] = []
        rounds: list[Round] = []
        known: set[tuple] = set()
        per_engine: dict[str, int] = {}
        search_deadline = time.monotonic() + budget_s
        examples_left = max_examples
        job.extra["fuzz"] = {"max_examples": max_examples, "budget_s": budget_s, "seed": seed, "shrink_s": SHRINK_S,
                             "max_findings": max_findings,
                             "database": str(database_dir) if database_dir is not None else None, "rounds": []}

        def compare(sample, active) -> list[Finding]:
            executors = [reference, *active]
            delta, findings = compare_batch([sample], encode_all(executors, [sample]),
                                            [Side(ex.spec, ex.token_bytes) for ex in executors], SOURCE)
            counts.add(delta)
            return findings

        def one_round(rnd: Round, active: list) -> tuple[object, list[Finding]] | None:
            """One hypothesis run over the engines still searched. Returns (sample, findings) of its
            shrunk failing example, or None when the budget ended it without one."""
            best: list = []  # smallest failing example seen, in case the run is cut short
            shrink_deadline: list[float] = []

            def check(sample) -> None:
                now = time.monotonic()
                if not shrink_deadline and now > search_deadline:
                    rnd.ended = "time"
                    raise _BudgetSpent
                if shrink_deadline and now > shrink_deadline[0]:
                    rnd.ended = "shrink-time"
                    raise _BudgetSpent
                findings = compare(sample, active)
                if shrink_deadline:
                    rnd.shrink_examples += 1
                else:
                    rnd.examples += 1
                new = [f for f in findings if not signature(f) & known]
                if new:
                    if not shrink_deadline:
                        shrink_deadline.append(now + SHRINK_S)
                    if not best or _sort_key(sample) < _sort_key(best[0]):
                        best[:] = [sample, new]
                    raise Divergence(sample, new)

            # Saved examples are keyed by the engines compared and the round, so they replay
            # for the same pool and are not dropped by a round in which they are known.
            key = "\n".join([reference_spec, *rnd.candidates, str(special), str(long_max), str(len(rounds))])
            check._hypothesis_internal_add_digest = hashlib.sha256(key.encode()).digest()
            test = settings(
                max_examples=examples_left, deadline=None, database=database, derandomize=False,
                suppress_health_check=list(HealthCheck), report_multiple_bugs=False, print_blob=False,
                verbosity=Verbosity.quiet, phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
            )(given(documents)(check))
            if seed is not None:
                test = hypothesis_seed(seed + len(rounds))(test)
            try:
                test()
            except Divergence as exc:
                rnd.ended = "finding"
                return exc.sample, exc.findings
            except Flaky:
                rnd.ended = "flaky"  # the shrunk example did not fail again (a timeout, say): keep the best seen
            except _BudgetSpent:
                pass
            else:
                rnd.ended = rnd.ended or "examples"
            return (best[0], best[1]) if best else None

        active = list(pool)
        while active and examples_left > 0 and time.monotonic() < search_deadline:
            rnd = Round([ex.spec for ex in active])
            rounds.append(rnd)
            t0 = time.monotonic()
            found = one_round(rnd, active)
            rnd.seconds = time.monotonic() - t0
            job.extra["fuzz"]["rounds"].append(rnd.as_dict())
            if found is None:
                break
            examples_left -= max(1, rnd.examples)
            sample, findings = found
            for finding in findings:
                records.append(job.writer.write(finding))
                rnd.found.append(finding.engine)
                known |= signature(finding)
                per_engine[finding.engine] = per_engine.get(finding.engine, 0) + 1
            if per_engine.get(reference.spec, 0) >= max_findings:
                break
            active = [ex for ex in active if per_engine.get(ex.spec, 0) < max_findings]
    return FuzzResult(counts, out_dir, job.manifest, records, rounds)
