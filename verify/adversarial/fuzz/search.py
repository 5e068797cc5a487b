"""Differential fuzzing (``verify fuzz``): hypothesis generates hostile samples
(``verify.adversarial.fuzz.strategies``), every engine encodes each one, and a sample on
which a candidate differs from the reference -- or on which any engine raises,
crashes or hangs -- is shrunk by hypothesis and written as a finding; then a
stress phase drives the engines the way a server does (``stress_phase``).

One bug must not hide another. Every finding falls in a cluster: its engine and
the signature key triage groups records by (``verify.adversarial.fuzz.clusters``). A
cluster is known once this run has written a finding of it, or when the
``--allowlist`` file or ``adversarial/tags.toml`` names it. Findings of known
clusters are counted (per cluster: ``hits`` and ``masked`` in the manifest's
``fuzz.clusters``) but masked: they neither stop the hypothesis run nor count
against any budget, so the search -- and the shrinker, which keeps only examples
that still fail in a new cluster -- goes on towards new clusters. Each new cluster
gets exactly one written finding, its shrunk example. A round is one hypothesis run;
it ends at the first example with a new cluster, which is shrunk and written, and
the next round starts with that cluster known. An engine leaves the pool after
``max_findings`` distinct clusters (default 20); fuzzing ends when the pool is
empty, the reference has ``max_findings`` clusters, or the budget is spent.

Comparison, counting and finding records are the ordinary pipeline's:
``verify.comparison.compare_batch``, engines from the job's ``EnginePool``, the
manifest and summary of ``verify.job.CommandJob``. Every example hypothesis
executes (search and shrink steps) is one sample in ``counts``, and so is every
stress sample; cluster ``hits`` count search examples and stress samples only.

Budget: ``max_examples`` examples and ``budget_s`` seconds (defaults 2000 or
``$VERIFY_FUZZ_EXAMPLES``, and 60 s). With the stress phase on (the default;
``stress=False`` / ``--no-stress`` skips it) the search stops at
``1 - STRESS_SHARE`` of the budget, and the stress phase runs until the budget
ends, but for at least ``STRESS_SHARE`` of it. Shrinking a found failure is not
cut by ``budget_s``; it has its own limit of ``SHRINK_S`` seconds per finding.

Replay: hypothesis' example database (``adversarial/hypothesis/`` under the
project directory by default) keeps failing examples keyed by the reference, the
candidates still in the pool and the round, so the next ``verify fuzz`` with the
same engines tries them first. Stress findings carry their recipe
(``fields["stress"]``, ``verify.adversarial.stress.shapes.from_recipe``).
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from verify.allowlist import Allowlist
from verify.comparison import Side, compare_batch
from verify.counts import Counts
from verify.errors import UsageError
from verify.executors.pool import EngineOptions
from verify.findings import Finding
from verify.batches import encode_all
from verify.sample import Sample

DEFAULT_EXAMPLES = 2000
DEFAULT_BUDGET_S = 60.0
DEFAULT_DATABASE = Path("adversarial/hypothesis")
DEFAULT_MAX_FINDINGS = 20
SHRINK_S = 120.0
MINIMISE_S = 10.0  # per cause: the minimiser's time and call limits
MINIMISE_CALLS = 2000
STRESS_SHARE = 0.25
EXAMPLES_ENV = "VERIFY_FUZZ_EXAMPLES"
SOURCE = "fuzz"


class Divergence(Exception):
    """Raised inside the hypothesis test when an example fails in a new cluster: carries
    the sample and its findings of new clusters."""

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
    masked: int = 0  # findings of known clusters met while searching
    folded: int = 0  # new clusters met while searching whose cause was found before
    found: list[str] = field(default_factory=list)  # the cluster keys written (engine: key)
    ended: str = ""  # "finding" | "examples" | "time" | "shrink-time" | "flaky"
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {"candidates": self.candidates, "examples": self.examples, "shrink_examples": self.shrink_examples,
                "masked": self.masked, "folded": self.folded, "found": self.found, "ended": self.ended, "seconds": round(self.seconds, 3)}


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

    @property
    def clusters(self) -> list[dict]:
        return self.manifest["fuzz"]["clusters"]


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


def cause_of(finding: Finding, reference, executor) -> tuple[str, list] | None:
    """``(cause_key, segments)`` of the finding's minimised reproducer (the minimiser and the
    predicate triage uses), or None when it does not reproduce or is too costly to minimise
    (crashes and timeouts: every try restarts a worker or waits out the timeout)."""
    if finding.kind not in ("ids", "error"):
        return None
    from verify.classify import cause_key
    from verify.minimize import minimise
    from verify.triage import still_fails

    error_type = (finding.fields.get("error") or {}).get("type")
    result = minimise(finding.sample, still_fails(finding.kind, reference, executor, error_type),
                      budget_s=MINIMISE_S, max_calls=MINIMISE_CALLS)
    if not result.reproduced:
        return None
    segments = [[s.text, s.allow_special] for s in result.sample.segments]
    return cause_key(finding.engine, finding.kind, segments), segments


def _sort_key(sample) -> tuple:
    """Hypothesis-like order for 'smaller': fewer characters, fewer segments, lower code points."""
    return (len(sample.text), len(sample.segments), sample.text)


def fuzz(reference_spec: str, candidate_specs: Sequence[str], *, out_dir: Path, max_examples: int | None = None,
         budget_s: float | None = None, seed: int | None = None, database_dir: Path | None = DEFAULT_DATABASE,
         engine: EngineOptions | None = None, long_max: int | None = None,
         max_findings: int = DEFAULT_MAX_FINDINGS, argv: list[str] | None = None,
         allowlist: Allowlist | None = None, tags: list | None = None, stress: bool = True,
         stress_cuts: tuple[int, ...] | None = None) -> FuzzResult:
    """Fuzz ``candidate_specs`` against ``reference_spec``; write findings, manifest
    and summary into ``out_dir``. ``database_dir=None`` keeps no example database;
    a relative one is taken from the project directory. ``tags`` are the known-cluster
    rules (default: ``adversarial/tags.toml``); ``stress_cuts`` the chunking thresholds
    of the stress phase (default ``stress.CUTS``)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis.database import DirectoryBasedExampleDatabase
    from hypothesis.errors import Flaky

    from verify.adversarial.fuzz import strategies
    from verify.adversarial.stress import shapes as stress_shapes
    from verify.adversarial.fuzz.clusters import ClusterBook
    from verify.adversarial.fuzz.stress_phase import StressPhase
    from verify.classify import load_tags
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
    book = ClusterBook(allowlist, load_tags() if tags is None else tags)

    with CommandJob("fuzz", out_dir, argv or [], engine) as job:
        reference, *pool = job.pool.start([reference_spec, *candidates])
        job.reference, job.candidates = reference_spec, candidates
        special = all(ex.capabilities.special_tokens for ex in [reference, *pool])
        documents = strategies.documents(special=special, long_max=long_max)
        job.sources = [{"name": SOURCE, "kind": "hypothesis", "strategies": sorted(strategies.STRATEGIES),
                        "special_segments": special, "long_run_max": long_max}]
        if stress:
            job.sources.append({"name": "fuzz-stress", "kind": "stress",
                                "big_batch_sizes": list(stress_shapes.BIG_BATCH_SIZES),
                                "cuts": sorted(stress_cuts or stress_shapes.CUTS),
                                "probes": len(stress_shapes.PROBES)})
        counts = job.counts
        records: list[dict] = []
        rounds: list[Round] = []
        started = time.monotonic()
        search_deadline = started + budget_s * ((1 - STRESS_SHARE) if stress else 1)
        examples_left = max_examples
        info = job.extra["fuzz"] = {
            "max_examples": max_examples, "budget_s": budget_s, "seed": seed, "shrink_s": SHRINK_S,
            "max_findings": max_findings, "max_findings_means": "distinct clusters per engine",
            "database": str(database_dir) if database_dir is not None else None, "rounds": [],
            "allowlist": book.allowlist.as_dict() if allowlist is not None else None,
            "known_tag_rules": len(book.tags), "clusters": [], "masked": 0,
            "stress": {"enabled": stress, "share": STRESS_SHARE}}

        def write(finding: Finding, source: str, key: str | None = None,
                  cause: tuple[str, list] | None = None) -> dict:
            record = job.writer.write(finding)
            book.add(finding, record, source, cause, key)
            records.append(record)
            return record

        executors = {ex.spec: ex for ex in [reference, *pool]}
        causes: dict[tuple, tuple[str, list] | None] = {}

        def cause(finding: Finding) -> tuple[str, list] | None:
            ident = (finding.engine, finding.kind, finding.sample.segments)
            if ident not in causes:
                causes[ident] = cause_of(finding, reference, executors[finding.engine])
            return causes[ident]

        def folded(finding: Finding) -> bool:
            """A new cluster with the cause of one found before: known from now on, not written."""
            found_cause = cause(finding)
            into = book.same_cause(finding, found_cause)
            if into is not None:
                book.fold(finding, found_cause, into)
            return into is not None

        def compare(sample, active) -> list[Finding]:
            executors = [reference, *active]
            delta, findings = compare_batch([sample], encode_all(executors, [sample]),
                                            [Side(ex.spec, ex.token_bytes) for ex in executors], SOURCE)
            counts.add(delta)
            return findings

        def one_round(rnd: Round, active: list) -> tuple[object, list[Finding]] | None:
            """One hypothesis run over the engines still searched. Returns (sample, findings) of its
            shrunk example with a new cluster, or None when the budget ended it without one."""
            best: list = []  # smallest example with a new cluster seen, in case the run is cut short
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
                searching = not shrink_deadline
                if searching:
                    rnd.examples += 1
                else:
                    rnd.shrink_examples += 1
                new = book.observe(findings, count=searching)
                if searching:
                    rnd.masked += len(findings) - len(new)
                    fresh = [f for f in new if not folded(f)]  # the search goes on past a known cause
                    rnd.folded += len(new) - len(fresh)
                    new = fresh
                if new:
                    if searching:
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

        def smallest(finding: Finding, active: list) -> Finding:
            """The finding on its minimised reproducer when that is smaller and in the same cluster."""
            found_cause = cause(finding)
            if found_cause is None:
                return finding
            small = Sample.from_segments(strategies.sample_id(found_cause[1]), found_cause[1])
            if _sort_key(small) >= _sort_key(finding.sample):
                return finding
            key = book.key(finding)
            same = [f for f in compare(small, active) if f.engine == finding.engine and book.key(f) == key]
            if same:
                causes[(finding.engine, finding.kind, small.segments)] = found_cause
            return same[0] if same else finding

        def still(active: list) -> list:
            return [ex for ex in active if book.found(ex.spec) < max_findings]

        active = list(pool)
        try:
            while active and examples_left > 0 and time.monotonic() < search_deadline:
                rnd = Round([ex.spec for ex in active])
                rounds.append(rnd)
                t0 = time.monotonic()
                found = one_round(rnd, active)
                rnd.seconds = time.monotonic() - t0
                examples_left -= max(1, rnd.examples)
                for finding in found[1] if found else ():
                    if not book.known(finding) and not folded(finding):
                        finding = smallest(finding, active)
                        write(finding, "hypothesis", cause=cause(finding))
                        rnd.found.append(f"{finding.engine}: {book.key(finding)}")
                info["rounds"].append(rnd.as_dict())
                if found is None:
                    break
                active = still(active) if book.found(reference.spec) < max_findings else []
            if stress and active:
                stress_deadline = max(started + budget_s, time.monotonic() + budget_s * STRESS_SHARE)
                phase = StressPhase(reference, book, write, counts, max_findings, cuts=stress_cuts, cause=cause,
                                    fold=folded)
                try:
                    phase.run(active, stress_deadline)
                finally:
                    info["stress"].update(phase.report)
        finally:
            info["clusters"] = book.as_list()
            info["masked"] = book.masked()
    return FuzzResult(counts, out_dir, job.manifest, records, rounds)
