"""The task of the ``verify fuzz`` hunt (``verify.adversarial.fuzz.hunt.FuzzHunt``): one shard,
a strategy x seed x budget, through the reference and every candidate.

  search shard  a hypothesis search of ``document_segments(family=...)`` (special-token segments
                when every engine honours them) with the shard's examples, its seed (derived from
                the plan's seed and the shard) and its time cap: today's round loop (``run_search``)
                over the shard's own ``ClusterBook``, without the constants hypothesis would take
                from the worker's imported modules (``without_local_constants``).
  stress shard  ``stress_phase.StressPhase`` over the big batches, or over one chunking threshold.

A shard is a ``FuzzSearchShard`` or a ``FuzzStressShard`` (one kind, ``fuzz``, for both: its
document's ``extra["phase"]`` says which). Everything a shard gives follows from its fields and
``plan.options`` (``context.params``): seeds, examples, the allowlist and tag rules. A shard that
hit its time cap, or the shrink limit, says so (its result's ``extra["capped"]``). Hypothesis'
example database is read as it was when the run started (``shard_database``): the shard's own
saves and deletes travel in its extra and the hunt's ``finish`` writes them, so 1 or N workers,
and a resume after ``kill -9``, replay the same examples. The extra also carries the shard's
rounds (or stress report) and its cluster book.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from verify.adversarial.fuzz.hypothesis_internals import (key_examples_by, seed_keeping_database,
                                                       without_local_constants)
from verify.corpora.shards import HuntShard, Shard
from verify.counts import Counts
from verify.errors import UsageError
from verify.rundir.result import ShardResult

DEFAULT_EXAMPLES = 2000
DEFAULT_BUDGET_S = 60.0
DEFAULT_DATABASE = Path("adversarial/hypothesis")
DEFAULT_MAX_FINDINGS = 20
SHRINK_S = 120.0
STRESS_SHARE = 0.25
EXAMPLES_ENV = "VERIFY_FUZZ_EXAMPLES"
SOURCE = "fuzz"
SHARD_EXAMPLES = 1000  # at most this many examples per search shard: more seeds per family beyond
MAX_EXAMPLES = 10**6  # --max-examples' ceiling: about 1,000 search shards (each one's overhead adds up)
MAX_FINDINGS = 10**9
MAX_SEED = 2**64 - 1


@dataclass(frozen=True, kw_only=True)
class FuzzShard(HuntShard):
    """A fuzz shard, run for at most ``cap_s`` seconds: a search or a stress phase."""

    kind = "fuzz"
    phase: ClassVar[str] = ""
    cap_s: float

    def _extra(self) -> dict[str, Any]:
        return {"phase": self.phase, **super()._extra()}

    @classmethod
    def _load(cls, doc: dict[str, Any], extra: dict[str, Any]) -> Shard:
        phases = {c.phase: c for c in (FuzzSearchShard, FuzzStressShard)}
        if extra.get("phase") not in phases:
            raise ValueError(f"a fuzz shard's phase is one of {', '.join(phases)}, not {extra.get('phase')!r}")
        return super(FuzzShard, phases[extra["phase"]])._load(doc, extra)


@dataclass(frozen=True, kw_only=True)
class FuzzSearchShard(FuzzShard):
    """A hypothesis search of strategy family ``family`` (its ``k``-th seed, ``seed``), for at
    most ``examples`` examples; label ``fuzz:FAMILY#K``."""

    phase: ClassVar[str] = "search"
    family: str
    k: int
    seed: int
    examples: int


@dataclass(frozen=True, kw_only=True)
class FuzzStressShard(FuzzShard):
    """A stress phase: big batches of ``batch_sizes``, or inputs cut at ``cuts``, in ``shape``
    (``serving``, ``families``, ``state``); label ``fuzz-stress:LABEL``."""

    phase: ClassVar[str] = "stress"
    batch_sizes: tuple[int, ...] = ()
    cuts: tuple[int, ...] = ()
    shape: str = "serving"

    def __post_init__(self) -> None:
        self._tuples("batch_sizes", "cuts")


class Divergence(Exception):
    """Raised inside the hypothesis test when an example fails in a new cluster: carries
    the sample and its findings of new clusters."""

    def __init__(self, sample, findings: list):
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
    shard: str = ""  # the search shard it ran in

    def as_dict(self) -> dict:
        return {"shard": self.shard, "candidates": self.candidates, "examples": self.examples,
                "shrink_examples": self.shrink_examples, "masked": self.masked, "folded": self.folded,
                "found": self.found, "ended": self.ended, "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, doc: dict) -> "Round":
        return cls(list(doc["candidates"]), doc["examples"], doc["shrink_examples"], doc["masked"], doc["folded"],
                   list(doc["found"]), doc["ended"], doc["seconds"], doc.get("shard", ""))


def default_examples() -> int:
    raw = os.environ.get(EXAMPLES_ENV)
    if not raw:
        return DEFAULT_EXAMPLES
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"${EXAMPLES_ENV} must be an integer, got {raw!r}") from None
    if not 1 <= value <= MAX_EXAMPLES:
        raise UsageError(f"${EXAMPLES_ENV} must be between 1 and {MAX_EXAMPLES}")
    return value


def resolve_database(database_dir: Path | None) -> Path | None:
    """The example database folder (a relative one is taken from the project directory)."""
    if database_dir is None:
        return None
    database_dir = Path(database_dir)
    if not database_dir.is_absolute():
        from verify.config import project_dir

        database_dir = project_dir() / database_dir
    if database_dir.exists() and not database_dir.is_dir():
        raise UsageError(f"--database {database_dir} is a file, not a directory")
    return database_dir


def check_options(max_examples: int, budget_s: float, seed: int, max_findings: int, long_max: int,
                  stress_cuts: list[int]) -> None:
    """Each option a number in its range (one line each): nan, inf and negatives are refused."""
    def whole(value, name: str, low: int, high: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UsageError(f"{name} must be a whole number from {low} to {high}, got {value!r}")

    whole(max_examples, "--max-examples", 1, MAX_EXAMPLES)
    whole(seed, "--seed", 0, MAX_SEED)
    whole(max_findings, "--max-findings", 1, MAX_FINDINGS)
    whole(long_max, "long_max", 1, 10**7)
    for cut in stress_cuts:
        whole(cut, "a stress cut", 1, 10**8)
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not math.isfinite(budget_s) \
            or budget_s <= 0:
        raise UsageError(f"--budget must be a positive, finite number of seconds, got {budget_s!r}")


def shard_seed(seed: int, family: str, k: int) -> int:
    """A search shard's seed: from the plan's seed and the shard alone."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{family}/{k}".encode()).digest()[:8], "big")


def _sort_key(sample) -> tuple:
    """Hypothesis-like order for 'smaller': fewer characters, fewer segments, lower code points."""
    return (len(sample.text), len(sample.segments), sample.text)


# --- the example database -------------------------------------------------------------

def shard_database(path: str | None):
    """Hypothesis' example database for one shard: the folder as it was when the run started,
    this shard's own saves and deletes kept in memory (``changes``) until ``finish`` applies
    them, so what a shard replays does not depend on which shards ran before it."""
    if path is None:
        return None
    from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

    class ShardDatabase(ExampleDatabase):
        def __init__(self) -> None:
            super().__init__()
            self.base = DirectoryBasedExampleDatabase(path)
            self.saved: dict[bytes, set[bytes]] = {}
            self.deleted: dict[bytes, set[bytes]] = {}

        def fetch(self, key: bytes):
            values = set(self.base.fetch(key)) - self.deleted.get(key, set()) | self.saved.get(key, set())
            return sorted(values)  # in one order on every machine

        def save(self, key: bytes, value: bytes) -> None:
            self.saved.setdefault(key, set()).add(value)
            self.deleted.get(key, set()).discard(value)

        def delete(self, key: bytes, value: bytes) -> None:
            self.saved.get(key, set()).discard(value)
            self.deleted.setdefault(key, set()).add(value)

        def changes(self) -> dict[str, list[list[str]]]:
            def rows(table):
                return sorted([k.hex(), v.hex()] for k, values in table.items() for v in values)
            return {"save": rows(self.saved), "delete": rows(self.deleted)}

    return ShardDatabase()


def apply_database_changes(path: Path, changes: dict[str, list[list[str]]]) -> None:
    from hypothesis.database import DirectoryBasedExampleDatabase

    database = DirectoryBasedExampleDatabase(str(path))
    for key, value in changes.get("delete", []):
        database.delete(bytes.fromhex(key), bytes.fromhex(value))
    for key, value in changes.get("save", []):
        database.save(bytes.fromhex(key), bytes.fromhex(value))


# --- one search shard -----------------------------------------------------------------

def run_search(shard: FuzzSearchShard, params: dict[str, Any], reference, pool: list, book, causes, write,
               counts: Counts, deadline: float) -> dict[str, Any]:
    """Today's round loop, over one strategy family with the shard's seed and examples. A round
    is one hypothesis run; it ends at the first example with a new cluster, which is shrunk and
    written, and the next round starts with that cluster known."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis.errors import Flaky

    from verify.adversarial.fuzz import strategies
    from verify.batches import encode_all
    from verify.comparison import CachedTokenBytes, Side, compare_batch
    from verify.sample import Sample

    family, k, seed = shard.family, shard.k, shard.seed
    max_findings, long_max = params["max_findings"], params["long_max"]
    special = all(ex.capabilities.special_tokens for ex in [reference, *pool])
    documents = strategies.document_segments(special=special, long_max=long_max, family=family)
    database = shard_database(params.get("database"))
    rounds: list[Round] = []
    examples_left = shard.examples
    capped = False

    def compare(sample, active) -> list:
        executors = [reference, *active]
        delta, findings = compare_batch([sample], encode_all(executors, [sample]),
                                        [Side(ex.spec, CachedTokenBytes(ex)) for ex in executors], SOURCE)
        counts.add(delta)
        return findings

    def one_round(rnd: Round, active: list) -> tuple[object, list] | None:
        """One hypothesis run over the engines still searched. Returns (sample, findings) of its
        shrunk example with a new cluster, or None when the budget ended it without one."""
        best: list = []  # smallest example with a new cluster seen, in case the run is cut short
        shrink_deadline: list[float] = []

        def check(segments) -> None:
            sample = strategies.to_sample(segments)
            now = time.monotonic()
            if not shrink_deadline and now > deadline:
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
                fresh = [f for f in new if not causes.fold(f)]  # the search goes on past a known cause
                rnd.folded += len(new) - len(fresh)
                new = fresh
            if new:
                if searching:
                    shrink_deadline.append(now + SHRINK_S)
                if not best or _sort_key(sample) < _sort_key(best[0]):
                    best[:] = [sample, new]
                raise Divergence(sample, new)

        # Saved examples are keyed by the engines compared, the shard's family and seed index and
        # the round (not the plan's seed), so they replay for the same pool in the next run.
        key = "\n".join([reference.spec, *rnd.candidates, str(special), str(long_max), family, str(k),
                         str(len(rounds))])
        key_examples_by(check, hashlib.sha256(key.encode()).digest())
        test = settings(
            max_examples=examples_left, deadline=None, database=database, derandomize=False,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False, print_blob=False,
            verbosity=Verbosity.quiet, phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
        )(given(documents)(check))
        seed_keeping_database(test, seed + len(rounds))
        try:
            with without_local_constants():
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

    def smallest(finding, active: list):
        """The finding on its minimised reproducer when that is smaller and in the same cluster."""
        found_cause = causes.cause(finding)
        if found_cause is None:
            return finding
        small = Sample.from_segments(strategies.sample_id(found_cause[1]), found_cause[1])
        if _sort_key(small) >= _sort_key(finding.sample):
            return finding
        key = book.key(finding)
        same = [f for f in compare(small, active) if f.engine == finding.engine and book.key(f) == key]
        if same:
            causes.remember(same[0], found_cause)
        return same[0] if same else finding

    active = list(pool)
    while active and examples_left > 0:
        if time.monotonic() >= deadline:
            capped = True
            break
        rnd = Round([ex.spec for ex in active], shard=shard.id)
        rounds.append(rnd)
        t0 = time.monotonic()
        found = one_round(rnd, active)
        rnd.seconds = time.monotonic() - t0
        capped = capped or rnd.ended in ("time", "shrink-time")
        examples_left -= max(1, rnd.examples)
        for finding in found[1] if found else ():
            if not book.known(finding) and not causes.fold(finding):
                finding = smallest(finding, active)
                write(finding, "hypothesis", cause=causes.cause(finding))
                rnd.found.append(f"{finding.engine}: {book.key(finding)}")
        if found is None:
            break
        still = [ex for ex in active if book.found(ex.spec) < max_findings]
        active = still if book.found(reference.spec) < max_findings else []
    extra: dict[str, Any] = {"family": family, "special": special, "rounds": [r.as_dict() for r in rounds],
                             "capped": capped}
    if database is not None:
        extra["database"] = database.changes()
    return extra


# --- the task ---------------------------------------------------------------------------

def rules_of(params: dict[str, Any]) -> tuple:
    """The allowlist and the known tag rules saved in the plan."""
    from verify.allowlist import Allowlist, parse_allowlist
    from verify.classify import TagRule
    from verify.user_regex import compile_user

    rows = [{name: rule[name] for name in ("engine", "key", "cluster", "reason", "link") if rule.get(name) is not None}
            for rule in (params.get("allowlist") or {}).get("rules", [])]
    allowlist = parse_allowlist({"allow": rows}, "the run's allowlist") if rows else Allowlist()
    tags = [TagRule(compile_user(r["engine"], "the run's tags", "engine"),
                    compile_user(r["signature"], "the run's tags", "signature"), r["tag"], r.get("link"), True)
            for r in params.get("tags", [])]
    return allowlist, tags


def fuzz_shard(index: int, shard: FuzzShard, executors: list, context) -> ShardResult:
    """The task: one search or stress shard through the reference (``executors[0]``) and every
    candidate, with its own cluster book. The findings it writes are the first of each cluster
    new to this shard; ``FuzzHunt.keep`` keeps one per cluster across shards."""
    from verify.adversarial.fuzz.clusters import Causes, ClusterBook
    from verify.adversarial.fuzz.stress_phase import StressPhase
    from verify.fresh_check import FreshCheck

    started = time.monotonic()
    params = context.params
    batch_entry = params.get("batch_entry") or {}
    by_spec = {ex.spec: ex for ex in executors}
    reference = executors[0]
    pool = [ex for ex in executors[1:] if ex.spec not in set(batch_entry.values())]
    batch_executors = {c: by_spec[b] for c, b in batch_entry.items() if b in by_spec}
    allowlist, tags = rules_of(params)
    max_findings = params["max_findings"]
    book = ClusterBook(allowlist, tags, pending_cap=max_findings)
    causes = Causes(book, reference, {ex.spec: ex for ex in executors})
    result = ShardResult(index, shard.id, Counts(), worker=context.worker)
    fresh = FreshCheck(executors)

    def write(finding, source: str, key: str | None = None, cause: tuple[str, list] | None = None) -> dict:
        fresh.confirm([finding])  # run alone on a fresh engine: a finding that passes keeps its history
        record, stored = finding.to_record()
        result.add_record(record, stored)
        result.counts.findings += 1
        book.add(finding, record, source, cause, key)
        return record

    deadline = started + shard.cap_s
    if isinstance(shard, FuzzSearchShard):
        extra = run_search(shard, params, reference, pool, book, causes, write, result.counts, deadline)
    else:
        phase = StressPhase(reference, book, write, result.counts, max_findings, cuts=shard.cuts,
                            batch_sizes=shard.batch_sizes, cause=causes.cause, fold=causes.fold,
                            batch_executors=batch_executors, shape=shard.shape)
        phase.run(pool, deadline)
        extra = {"stress": phase.report, "capped": phase.report["capped"]}
    result.extra = {"phase": shard.phase, "cap_s": shard.cap_s, **extra, "book": book.to_json(),
                    "fresh": fresh.as_dict()}
    result.seconds = time.monotonic() - started
    return result
