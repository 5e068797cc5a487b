"""How long each check of a suite takes on this machine, and the sizes that fit a profile's
budget: ``pr`` five minutes, ``nightly`` thirty (``verify gate init``).

    costs = Costs(measure_pair(candidate, reference, plain_only), workers, minimize_budget)  # here
    sizes = fit_sizes(profile, costs, rows)        # rows by kind; SIZINGS[kind] says how each is sized
    SIZINGS[kind].resize(row, sizes[kind], profile, alphabet)
    seconds = predict(kind, row, costs)

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
BIG_BATCH_UNITS = 3.0  # the metamorphic stress phase's 16,384-sample batch and its single calls, in smoke units
CERTIFY_MIN_K = 3  # the scanner bugs we know are three atoms long ("\n's", "\t(a", "  \x0c")

# what each profile may size (the kinds of ``SIZINGS``), and the share of the time left for it
WEIGHTS = {"pr": {"corpus": 3, "replay": 1, "unicode": 3, "vocab": 2, "metamorphic": 1, "fuzz": 1, "certificate": 2},
           "nightly": {"corpus": 3, "replay": 2, "unicode": 3, "vocab": 3, "metamorphic": 2, "fuzz": 3, "length": 2,
                       "certificate": 3}}
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
        sizing = SIZINGS[kind]
        triage = self.minimize_budget if sizing.triage else 0.0
        return START_S + triage + sizing.extra(row)

    def per_unit(self, kind: str, row: dict[str, Any]) -> float:
        """Seconds per unit of ``kind``'s size (``Sizing.size_of``)."""
        return SIZINGS[kind].per_unit(row, self)


class Sizing:
    """One kind of check as the planner sizes it: its smallest and full size (``limits``), the size
    a row asks for (``size_of``; None: nothing to size), the seconds per unit of that size here
    (``per_unit``: ``units`` of encoding work unless the size is itself seconds), the seconds it
    costs whatever its size beyond start-up and triage (``extra``), and how a chosen size is
    written back into a row (``resize``). Each kind counts its size in its own units.

    The base is a check with nothing to size; the kinds are stateless, one instance each in ``SIZINGS``."""

    limits: tuple[float, float] = (0.0, 0.0)
    units = 0.0  # smoke units of encoding work per unit of size (see the module docstring)
    triage = True  # spends up to ``minimize_budget`` minimising what it finds

    def size_of(self, row: dict[str, Any]) -> float | None:
        return None

    def per_unit(self, row: dict[str, Any], costs: Costs) -> float:
        return costs.work(self.units)

    def extra(self, row: dict[str, Any]) -> float:
        return 0.0

    def resize(self, row: dict[str, Any], size: float, profile: str,
               alphabet: tuple[tuple[str, ...], ...] | None) -> None:
        """Write ``size`` into ``row`` for ``profile``; ``alphabet``: the reference's certify
        alphabet (``verify.gate.init.Facts.alphabet``), which a certificate's k is counted in."""
        raise NotImplementedError(f"{type(self).__name__} has no size to write")


class Corpus(Sizing):
    """A sample of the default corpus, as a fraction: the whole corpus at 1."""

    limits = (0.01, 1.0)
    units = 18.0  # the default corpus whole: 12.0 smokes of text, 1.5x through isolated workers

    def size_of(self, row):
        return float(row.get("sample", 1.0))

    def resize(self, row, size, profile, alphabet):
        if size < self.limits[1]:
            row["sample"] = round(size, 3)
        else:
            row.pop("seed", None)  # the whole corpus: no sample to seed


class Replay(Sizing):
    """Agent sessions replayed (``agent:SEED:SESSIONS``)."""

    limits = (2, 64)
    units = 4.5  # one agent session, every turn's transcript encoded

    def size_of(self, row):
        trace = str(row["traces"][0])
        return float(trace.split(":")[2]) if trace.count(":") >= 2 else 8.0

    def resize(self, row, size, profile, alphabet):
        row["traces"] = [f"agent:1:{int(size)}"]


class Unicode(Sizing):
    """Code points from U+0000 up: the whole of Unicode is ``full = true``."""

    limits = (0x1000, 0x110000)
    units = 12.4 / 0x3000  # code points in their probe contexts
    triage = False  # its job is given no minimise budget (``verify.gate.kinds.run_unicode``)

    def size_of(self, row):
        start, stop = (int(x, 16) for x in row["range"]) if "range" in row else (0, self.limits[1])
        return float(stop - start)

    def resize(self, row, size, profile, alphabet):
        if size < self.limits[1]:
            row.pop("full")
            row["range"] = ["0000", f"{int(size):04X}"]


class Vocab(Sizing):
    """Vocabulary tokens from the first id: all of them without a ``limit``."""

    limits = (250, 250_000)
    units = 0.0114  # each token alone and in contexts, its pairs, the specials

    def size_of(self, row):
        return float(row.get("limit", self.limits[1]))

    def resize(self, row, size, profile, alphabet):
        if size < self.limits[1]:
            row["limit"] = int(size)


class Metamorphic(Sizing):
    """Samples the engine is checked against itself on, then a stress budget per phase."""

    limits = (25, 1000)
    units = 0.12  # repeat, history, batch vs single, threads, decode
    phases = 4  # a stress budget is spent per phase (batches, families, state, thresholds)

    def size_of(self, row):
        return float(row.get("limit", 100))

    def extra(self, row):
        return len(row.get("stress_phases") or range(self.phases)) * float(row.get("stress_seconds") or 0)

    def resize(self, row, size, profile, alphabet):
        row["limit"] = int(size)


class Fuzz(Sizing):
    """Seconds of Hypothesis search, then the stress phase."""

    limits = (20.0, 600.0)
    stress_s = 15.0  # the stress phase after its search budget

    def size_of(self, row):  # the examples it is given take about a 13th of a second each (a cap may be longer)
        return float(row["examples"]) / 13 if "examples" in row else float(row.get("seconds", 30))

    def per_unit(self, row, costs):
        return 1.0  # its size is seconds already

    def extra(self, row):
        return self.stress_s

    def resize(self, row, size, profile, alphabet):
        # about what the search reaches in that time; in pr the count binds and the seconds are a cap,
        # so a pull request's gate sees the same inputs on every run (the seed is fixed)
        row["examples"] = max(100, int(13 * size))
        row["seconds"] = int(size) * (3 if profile == "pr" else 1)


class Length(Sizing):
    """``max_chars``: how long each family of the row's ``kinds`` grows."""

    limits = (30_000, 500_000)
    units_per_kind_kchar = 0.254  # per kind of family and 1,000 characters of max_chars

    def size_of(self, row):
        return float(row["max_chars"])

    def per_unit(self, row, costs):
        return costs.work(self.units_per_kind_kchar * len(row.get("kinds") or ()) / 1000)

    def resize(self, row, size, profile, alphabet):
        row["max_chars"] = int(size)


class Certificate(Sizing):
    """Strings of at most k atoms of the reference's pattern, counted from its alphabet: the planner
    keeps the count in the row's ``_strings`` (not written to the suite) and writes k."""

    limits = (50_000, 2_000_000_000)
    # one string of ``verify certify`` (a few characters, one call per engine each; tiktoken against HF
    # tokenizers on cl100k_base, 2 isolated workers: 1,147,400 strings in 28 s where the pair's smoke took 0.08 s)
    units = 4e-4

    def size_of(self, row):
        return float(row.get("_strings", 0))

    def resize(self, row, size, profile, alphabet):
        from verify.adversarial.certify.space import Space, k_for  # numpy: only when a certificate is sized

        row["k"] = max(CERTIFY_MIN_K, k_for(alphabet, int(size)))
        row["_strings"] = Space(alphabet, 1).total(row["k"])


class Recheck(Sizing):
    """The recorded regression cases, however many: nothing to size."""

    triage = False  # its job is given no minimise budget (``verify.gate.kinds.run_recheck``)

    def extra(self, row):
        return 5.0


SIZINGS: dict[str, Sizing] = {"corpus": Corpus(), "replay": Replay(), "unicode": Unicode(), "vocab": Vocab(),
                              "metamorphic": Metamorphic(), "fuzz": Fuzz(), "length": Length(),
                              "certificate": Certificate(), "recheck": Recheck()}


def predict(kind: str, row: dict[str, Any], costs: Costs) -> float:
    """The seconds a check's row is expected to take here."""
    size = SIZINGS[kind].size_of(row)
    return costs.fixed(kind, row) + (size or 0.0) * costs.per_unit(kind, row)


def fit_sizes(profile: str, costs: Costs, rows: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The size of every sizeable row (by kind) so that the whole suite fits ``PLANNED_SHARE`` of
    the profile's budget: what is left after the fixed costs, shared by ``WEIGHTS``, each size
    between its smallest and its full (``Sizing.limits``; time a full check does not need goes to
    the others)."""
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
            low, high = SIZINGS[k].limits
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
