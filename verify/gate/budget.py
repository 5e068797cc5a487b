"""How long each check of a suite takes on this machine, and the sizes that fit a profile's
budget: ``pr`` five minutes, ``nightly`` thirty (``verify gate init``).

    pair_seconds = measure_pair(candidate, reference)      # both engines on the smoke corpus, here
    sizes = fit_sizes(profile, pair_seconds, kinds, workers, minimize_budget)
    seconds = predict(row, pair_seconds, workers, minimize_budget)

A check's time is a start-up (its workers load the engines, its reports are written), the
triage of what it finds (up to ``minimize_budget``), the fixed budgets it is given (fuzz
``seconds``, metamorphic ``stress_seconds``) and its encoding work: *smoke units* times
``pair_seconds``, the time the candidate and the reference take together to encode the smoke
corpus once (200 documents, 173,654 characters) in this process, over the workers' speed-up.
The units per size were measured with tiktoken against HF ``tokenizers`` on ``cl100k_base``
(2 cores, 2 isolated workers; the pair's smoke time measured beside the checks, so the ratio
does not depend on the machine or its load): ``verify unicode --stop 0x3000``, ``vocab sweep
--limit 500``, ``length sweep --max-chars 30000`` (4 kinds), ``replay --traces agent:1:4``,
``check --limit 25``, ``certify --k 4``, and the default corpus's size. An engine with another cost profile (slow
per call, fast per character) lands off the estimate; the gate's ``deadline`` (written with the
suite) then cuts what does not fit and says so, never a silent pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

PROFILE_BUDGET_S = {"pr": 300.0, "nightly": 1800.0}
BUDGET_ENV = "VERIFY_GATE_BUDGET_S"  # a CI runner that must finish sooner: the budget gate init sizes for
PLANNED_SHARE = 0.8  # sizes fit 80% of the budget; the deadline is the whole of it
START_S = 8.0  # per check: engine workers started, reports written
SMOKE = (1, 200, 0)  # the smoke corpus: seed, documents, long documents

# encoding work in smoke units (see the module docstring)
CORPUS_UNITS = 18.0  # the default corpus whole: 12.0 smokes of text, 1.5x through isolated workers
REPLAY_UNITS_PER_SESSION = 4.5  # one agent session, every turn's transcript encoded
UNICODE_UNITS_PER_CP = 12.4 / 0x3000  # code points in their probe contexts
UNICODE_CPS = 0x110000
VOCAB_UNITS_PER_TOKEN = 0.0114  # each token alone and in contexts, its pairs, the specials
LENGTH_UNITS_PER_KIND_KCHAR = 0.254  # per kind of family and 1,000 characters of --max-chars
METAMORPHIC_UNITS_PER_SAMPLE = 0.12  # repeat, history, batch vs single, threads, decode
FUZZ_STRESS_S = 15.0  # fuzz's stress phase after its search budget
STRESS_PHASES = 4  # a metamorphic stress budget is spent per phase (batches, families, state, thresholds)
BIG_BATCH_UNITS = 3.0  # the stress phase's 16,384-sample batch and its single calls
# one string of ``verify certify`` (a few characters, one call per engine each; tiktoken against HF
# tokenizers on cl100k_base, 2 isolated workers: 1,147,400 strings in 28 s where the pair's smoke took 0.08 s)
CERTIFY_UNITS_PER_STRING = 4e-4
CERTIFY_MIN_K = 3  # the scanner bugs we know are three atoms long ("\n's", "\t(a", "  \x0c")

# what each profile may size, the share of the time left for it, its smallest and its full size
WEIGHTS = {"pr": {"corpus": 3, "replay": 1, "unicode": 3, "vocab": 2, "metamorphic": 1, "fuzz": 1, "certificate": 2},
           "nightly": {"corpus": 3, "replay": 2, "unicode": 3, "vocab": 3, "metamorphic": 2, "fuzz": 3, "length": 2,
                       "certificate": 3}}
LIMITS = {"corpus": (0.01, 1.0), "replay": (2, 64), "unicode": (0x1000, UNICODE_CPS), "vocab": (250, 250_000),
          "metamorphic": (25, 1000), "fuzz": (20.0, 600.0), "length": (30_000, 500_000),
          "certificate": (50_000, 2_000_000_000)}  # strings
# pr: past the 25,000-character chunk threshold; nightly: up to past 400,000, as far as fits
LENGTH_CHARS = {"pr": 30_000, "nightly": 500_000}


def profile_budget(profile: str) -> float:
    """The seconds a profile's gate may take: five minutes (pr), thirty (nightly), or ``$VERIFY_GATE_BUDGET_S``."""
    import os

    raw = os.environ.get(BUDGET_ENV)
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = 0.0
        if not 10 <= value <= 10**6:
            from verify.errors import ConfigError

            raise ConfigError(f"${BUDGET_ENV} must be a number of seconds from 10 to 1000000, not {raw!r}")
        return value
    return PROFILE_BUDGET_S[profile]


def speedup(workers: int) -> float:
    """What ``workers`` shard workers give over one on the machines measured (bench/README.md: 1.2-1.9x for 2)."""
    return 1.0 + 0.3 * (max(1, workers) - 1)


def measure_pair(candidate, reference, plain_only: bool) -> float:
    """Seconds the two engines take together to encode the smoke corpus in this process (the best of
    three, interleaved, so a busy machine slows both alike; lazy set-up excluded)."""
    from verify.corpora.generated import generate_one

    samples = [generate_one(SMOKE[0], i, SMOKE[1], SMOKE[2]) for i in range(SMOKE[1])]
    if plain_only:
        samples = [s for s in samples if s.is_plain]
    engines = (candidate, reference)
    for engine in engines:
        engine.encode_batch(samples[:8])
    best = [float("inf")] * len(engines)
    for _ in range(3):
        for i, engine in enumerate(engines):
            started = time.perf_counter()
            engine.encode_batch(samples)
            best[i] = min(best[i], time.perf_counter() - started)
    return max(sum(best), 1e-3)


@dataclass(frozen=True)
class Costs:
    pair_seconds: float
    workers: int
    minimize_budget: float

    def work(self, units: float) -> float:
        return units * self.pair_seconds / speedup(self.workers)

    def stress_seconds(self) -> float:
        """A metamorphic stress budget per phase that fits the big batch twice over (the batches
        phase's calls; the other phases stop on it)."""
        return round(min(60.0, max(5.0, 2 * self.work(BIG_BATCH_UNITS))), 1)

    def fixed(self, kind: str, row: dict[str, Any]) -> float:
        """What a check of ``kind`` costs whatever its size: start-up, triage, fixed budgets."""
        triage = self.minimize_budget if kind not in ("unicode", "recheck") else 0.0
        extra = {"fuzz": FUZZ_STRESS_S, "metamorphic": len(row.get("stress_phases") or range(STRESS_PHASES)) *
                 float(row.get("stress_seconds") or 0)}
        return START_S + triage + extra.get(kind, 0.0)

    def per_unit(self, kind: str, row: dict[str, Any]) -> float:
        """Seconds per unit of ``kind``'s size (a sample fraction, sessions, code points, tokens, samples,
        fuzz seconds)."""
        units = {"corpus": CORPUS_UNITS, "replay": REPLAY_UNITS_PER_SESSION, "unicode": UNICODE_UNITS_PER_CP,
                 "vocab": VOCAB_UNITS_PER_TOKEN, "metamorphic": METAMORPHIC_UNITS_PER_SAMPLE,
                 "length": LENGTH_UNITS_PER_KIND_KCHAR * len(row.get("kinds") or ()) / 1000,
                 "certificate": CERTIFY_UNITS_PER_STRING}
        if kind == "fuzz":
            return 1.0
        return self.work(units[kind])


def size_of(kind: str, row: dict[str, Any]) -> float | None:
    """The size a row of ``kind`` asks for, in ``Costs.per_unit``'s units (None: no sized part)."""
    if kind == "corpus":
        return float(row.get("sample", 1.0))
    if kind == "replay":
        return float(str(row["traces"][0]).split(":")[2]) if str(row["traces"][0]).count(":") >= 2 else 8.0
    if kind == "unicode":
        start, stop = (int(x, 16) for x in row["range"]) if "range" in row else (0, UNICODE_CPS)
        return float(stop - start)
    if kind == "vocab":
        return float(row.get("limit", LIMITS["vocab"][1]))
    if kind == "metamorphic":
        return float(row.get("limit", 100))
    if kind == "fuzz":  # the examples it is given take about a 13th of a second each (a cap may be longer)
        return float(row["examples"]) / 13 if "examples" in row else float(row.get("seconds", 30))
    if kind == "length":
        return float(row["max_chars"])
    if kind == "certificate":  # the strings of its k, counted by plan_checks from the reference's alphabet
        return float(row.get("_strings", 0))
    return None


def predict(kind: str, row: dict[str, Any], costs: Costs) -> float:
    """The seconds a check's row is expected to take here."""
    if kind == "recheck":
        return START_S + 5.0
    size = size_of(kind, row)
    return costs.fixed(kind, row) + (size or 0.0) * costs.per_unit(kind, row)


def fit_sizes(profile: str, costs: Costs, rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The size of every sizeable row (by kind) so that the whole suite fits ``PLANNED_SHARE`` of
    the profile's budget: what is left after the fixed costs, shared by ``WEIGHTS``, each size
    between its smallest and its full (time a full check does not need goes to the others)."""
    budget = profile_budget(profile) * PLANNED_SHARE
    sizable = [k for k in rows if k in WEIGHTS[profile]]
    fixed = sum(predict(k, rows[k], costs) if k not in sizable else costs.fixed(k, rows[k]) for k in rows)
    left = max(0.0, budget - fixed)
    sizes: dict[str, float] = {}
    open_kinds = list(sizable)
    for _ in range(len(sizable) + 1):  # give away what full checks do not need
        weight = sum(WEIGHTS[profile][k] for k in open_kinds) or 1
        spent = 0.0
        settled = []
        for k in open_kinds:
            low, high = LIMITS[k]
            share = left * WEIGHTS[profile][k] / weight
            size = share / costs.per_unit(k, rows[k])
            if size >= high or size <= low:
                sizes[k] = high if size >= high else low
                spent += sizes[k] * costs.per_unit(k, rows[k])
                settled.append(k)
            else:
                sizes[k] = size
        if not settled:
            break
        open_kinds = [k for k in open_kinds if k not in settled]
        left = max(0.0, left - spent)
    return sizes
