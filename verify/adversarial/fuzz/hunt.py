"""Differential fuzzing (``verify fuzz``): hypothesis generates hostile samples
(``verify.adversarial.fuzz.strategies``), every engine encodes each one, and a sample on
which a candidate differs from the reference -- or on which any engine raises,
crashes or hangs -- is shrunk by hypothesis and written as a finding; stress shards
drive the engines the way a server does (``stress_phase``).

A hunt on the one pipeline (``FuzzHunt``; its task is ``verify.adversarial.fuzz.search``):
a shard is a strategy x seed x budget, so ``--workers N``, ``--executor ray``,
``--resume --out OUT``, the live status and per-shard commit work as for ``verify run``.

  search shards  one per strategy family of ``strategies.STRATEGIES`` and seed (a family gets
                 one more seed per ``SHARD_EXAMPLES`` examples), each with its share of
                 ``max_examples`` and a seed derived from the plan's seed (``--seed``, or one
                 drawn when the run is planned and saved in ``plan.json``).
  stress shards  ``fuzz-stress:big-batch`` and one ``fuzz-stress:cut-N`` per chunking threshold.

One bug must not hide another. Every finding falls in a cluster: its engine and
the signature key triage groups records by (``verify.adversarial.fuzz.clusters``). A
cluster is known once a finding of it is written, or when the ``--allowlist`` file or
``adversarial/tags.toml`` names it. Findings of known clusters are counted (per cluster:
``hits`` and ``masked`` in the manifest's ``fuzz.clusters``) but masked: they neither stop
the hypothesis run nor count against any budget, so the search -- and the shrinker, which
keeps only examples that still fail in a new cluster -- goes on towards new clusters. Each
shard keeps its own book: a round is one hypothesis run; it ends at the first example with
a new cluster, which is shrunk and written, and the next round starts with that cluster
known. An engine leaves a shard after ``max_findings`` distinct clusters (default 20); a
shard ends when its pool is empty, the reference has ``max_findings`` clusters, or its
examples or time cap are spent. Across shards (``clusters.ClusterMerge``, plan order)
each cluster keeps its first written finding, a cluster with the cause of a kept one is
``same-cause``, and an engine keeps at most ``max_findings`` clusters: only those
findings go into ``divergences.jsonl`` (``FuzzHunt.keep``), so each cluster still has
exactly one written finding, its shrunk, minimised example.

Comparison, counting and finding records are the ordinary pipeline's:
``verify.comparison.compare_batch``, the shard runner's engines, the manifest and summary
of ``verify.rundir``. Every example hypothesis executes (search and shrink steps) is one
sample in ``counts``, and so is every stress sample; cluster ``hits`` count search
examples and stress samples only; ``counts.findings`` counts the findings kept.

Budget: ``max_examples`` examples and ``budget_s`` seconds (defaults 2000 or
``$VERIFY_FUZZ_EXAMPLES``, and 60 s). The time budget only caps: it is split at plan time
into per-shard caps (``options["shard_cap_s"]``: the search shards share ``1 - STRESS_SHARE``
of it, the stress shards the rest; without stress, the search shards all of it). A shard
that hit its cap says so (``fuzz.capped`` lists them): only uncapped shards are sure to give
the same findings again. Shrinking a found failure is not cut by the cap; it has its own
limit of ``SHRINK_S`` seconds per finding.

Replay: hypothesis' example database (``adversarial/hypothesis/`` under the project
directory by default) keeps failing examples keyed by the reference, the candidates
still searched, the shard's family and seed index, and the round, so the next
``verify fuzz`` with the same engines tries them first. Shards read it as it was when
the run started and ``finish`` writes what they saved. Stress findings carry their recipe
(``fields["stress"]``, ``verify.adversarial.stress.shapes.from_recipe``).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from verify.adversarial.fuzz.search import (DEFAULT_BUDGET_S, DEFAULT_DATABASE, DEFAULT_EXAMPLES, DEFAULT_MAX_FINDINGS,
                                          EXAMPLES_ENV, SHARD_EXAMPLES, SHRINK_S, SOURCE, STRESS_SHARE, Divergence,
                                          FuzzSearchShard, FuzzStressShard, Round, apply_database_changes,
                                          check_options, default_examples, fuzz_shard, resolve_database, shard_seed)
from verify.allowlist import Allowlist
from verify.counts import Counts
from verify.errors import UsageError
from verify.executors.pool import EngineOptions
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.layout import RunFolder

__all__ = ["DEFAULT_BUDGET_S", "DEFAULT_DATABASE", "DEFAULT_EXAMPLES", "DEFAULT_MAX_FINDINGS", "EXAMPLES_ENV",
           "SHRINK_S", "SOURCE", "STRESS_SHARE", "Divergence", "FuzzHunt", "FuzzResult", "Round", "fuzz",
           "run_fuzz"]


@dataclass
class FuzzResult:
    counts: Counts
    out: Path
    manifest: dict
    findings: list[dict]  # the kept findings (divergences.jsonl)
    rounds: list[Round]  # every search shard's, in plan order

    @property
    def found(self) -> bool:
        return bool(self.findings)

    @property
    def clusters(self) -> list[dict]:
        return self.manifest["fuzz"]["clusters"]


class FuzzHunt(Hunt):
    name = "fuzz"
    label = "verify fuzz"
    task = staticmethod(fuzz_shard)

    def __init__(self, reference: str | None, candidates: Sequence[str], job: JobOptions, *,
                 max_examples: int | None = None, budget_s: float | None = None, seed: int | None = None,
                 database_dir: Path | None = DEFAULT_DATABASE, max_findings: int | None = DEFAULT_MAX_FINDINGS,
                 allowlist: Allowlist | None = None, tags: list | None = None, stress: bool | None = True,
                 stress_cuts: Sequence[int] | None = None, long_max: int | None = None):
        """``None`` (and, for ``database_dir``, the default) leaves an option unsaid: its default,
        or on ``--resume`` the run's saved value."""
        self.reference, self.candidates, self.job = reference, list(candidates or []), job
        self.max_examples, self.budget_s, self.seed = max_examples, budget_s, seed
        self.database_dir, self.max_findings, self.stress = database_dir, max_findings, stress
        self.stress_cuts = None if stress_cuts is None else sorted(stress_cuts)
        self.long_max = long_max
        self.allowlist_doc = allowlist.as_dict() if allowlist is not None else None
        self.tag_rows = None if tags is None else [_tag_row(rule) for rule in tags if rule.known]
        self.seed_drawn = False

    def fill_from(self, saved) -> None:
        opts = saved.options
        self.reference = self.reference or saved.reference
        self.candidates = self.candidates or list(saved.requested)
        for name in ("max_examples", "budget_s", "seed", "max_findings", "stress", "stress_cuts", "long_max"):
            if getattr(self, name) is None:
                setattr(self, name, opts.get(name))
        if self.database_dir is not None and Path(self.database_dir) == DEFAULT_DATABASE:
            self.database_dir = Path(opts["database"]) if opts.get("database") else None
        self.allowlist_doc = self.allowlist_doc if self.allowlist_doc is not None else opts.get("allowlist")
        self.tag_rows = self.tag_rows if self.tag_rows is not None else opts.get("tags")
        self.seed_drawn = bool(saved.sources and saved.sources[0].get("seed_drawn"))

    def plan(self) -> HuntPlan:
        from verify.adversarial.fuzz import strategies
        from verify.adversarial.stress import shapes
        from verify.engines.catalogue import engine_values

        self.reference, self.candidates = engine_values(self.reference, self.candidates)
        if not self.reference:
            raise UsageError("verify fuzz needs a reference engine: pass --reference SPEC")
        if not self.candidates:
            raise UsageError("no candidate engine: pass --candidate SPEC")
        if self.reference in self.candidates:
            raise UsageError(f"'{self.reference}' is both the reference and a candidate")
        max_examples = default_examples() if self.max_examples is None else self.max_examples
        budget_s = DEFAULT_BUDGET_S if self.budget_s is None else self.budget_s
        max_findings = DEFAULT_MAX_FINDINGS if self.max_findings is None else self.max_findings
        stress = True if self.stress is None else bool(self.stress)
        long_max = strategies.LONG_RUN_MAX if self.long_max is None else self.long_max
        cuts = sorted(shapes.CUTS) if self.stress_cuts is None else list(self.stress_cuts)
        if self.seed is None:  # drawn once, saved in the plan: every worker and a resume agree on it
            self.seed, self.seed_drawn = secrets.randbelow(2**63), True
        check_options(max_examples, budget_s, self.seed, max_findings, long_max, cuts)
        database = resolve_database(self.database_dir)
        if self.tag_rows is None:
            from verify.classify import load_tags

            self.tag_rows = [_tag_row(rule) for rule in load_tags() if rule.known]
        search, stressed = _search_units(max_examples, list(strategies.STRATEGIES)), []
        if stress:
            stressed = ([("big-batch", list(shapes.BIG_BATCH_SIZES), [])] if shapes.BIG_BATCH_SIZES else []) + \
                       [(f"cut-{cut}", [], [cut]) for cut in cuts] + [("families", [], []), ("state", [], [])]
        caps = {"search": round(budget_s * ((1 - STRESS_SHARE) if stressed else 1) / len(search), 6),
                "stress": round(budget_s * STRESS_SHARE / len(stressed), 6) if stressed else 0.0}
        shards = [FuzzSearchShard(SOURCE, label=f"fuzz:{family}#{k}", start=k, stop=n, family=family, k=k,
                                  seed=shard_seed(self.seed, family, k), examples=n, cap_s=caps["search"])
                  for family, k, n in search]
        shards += [FuzzStressShard("fuzz-stress", label=f"fuzz-stress:{label}", batch_sizes=sizes, cuts=at,
                                   cap_s=caps["stress"], shape=label if label in ("families", "state") else "serving")
                   for label, sizes, at in stressed]
        options = {"max_examples": max_examples, "budget_s": budget_s, "seed": self.seed,
                   "max_findings": max_findings, "stress": stress, "stress_cuts": cuts, "long_max": long_max,
                   "database": str(database) if database is not None else None, "allowlist": self.allowlist_doc,
                   "tags": self.tag_rows, "shard_examples": SHARD_EXAMPLES, "shard_cap_s": caps,
                   "shrink_s": SHRINK_S, "stress_share": STRESS_SHARE, "timeout_s": self.job.engine.timeout_s,
                   "memory_limit_mb": self.job.engine.memory_limit_mb}
        sources = [{"name": SOURCE, "kind": "hypothesis", "strategies": sorted(strategies.STRATEGIES),
                    "seeds_per_strategy": max(k for _, k, _ in search) + 1, "seed": self.seed,
                    "seed_drawn": self.seed_drawn, "long_run_max": long_max}]
        if stress:
            sources.append({"name": "fuzz-stress", "kind": "stress", "big_batch_sizes": list(shapes.BIG_BATCH_SIZES),
                            "cuts": cuts, "probes": len(shapes.PROBES)})
        # the big batches go to each candidate through the library's own batch call (its ``?entry=batch``
        # spec: an optional engine of the plan, used by the stress shards only)
        batch_entry = {c: b for c in self.candidates if stress and (b := _batch_spec(c)) is not None and b != c}
        options["batch_entry"] = batch_entry
        return HuntPlan(self.reference, list(self.candidates), [*self.candidates, *batch_entry.values()], sources,
                        shards, options, optional=sorted(batch_entry.values()))

    def keep(self):  # noqa: D102
        """Only the kept finding of each cluster (the first written in plan order), once."""
        from verify.rundir.plan import load_plan
        from verify.rundir.store import ShardStore

        plan = load_plan(self.job.out)
        store = ShardStore(self.job.out)
        kept = read_shards(plan, store, store.committed([s.id for s in plan.shards])).clusters.kept
        seen: set[str] = set()

        def keep(record: dict) -> bool:
            key = record.get("finding_key")
            if key not in kept or key in seen:
                return False
            seen.add(key)
            return True

        return keep

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        from verify.adversarial.fuzz.stress_phase import merge_reports

        opts = plan.options
        database = Path(opts["database"]) if opts.get("database") else None
        shards = read_shards(plan, store, markers, database)
        counts = store.totals(markers)
        with open(RunFolder(out).findings, encoding="utf-8") as fh:
            counts.findings = sum(1 for _ in fh)  # the kept findings, not every shard's
        clusters = shards.clusters.as_list()
        fuzz = {"max_examples": opts["max_examples"], "budget_s": opts["budget_s"], "seed": opts["seed"],
                "seed_drawn": bool(plan.sources and plan.sources[0].get("seed_drawn")), "shrink_s": opts["shrink_s"],
                "max_findings": opts["max_findings"], "max_findings_means": "distinct clusters per engine",
                "database": opts["database"], "rounds": shards.rounds, "allowlist": opts["allowlist"],
                "known_tag_rules": len(opts["tags"]), "clusters": clusters,
                "masked": sum(c["masked"] for c in clusters),
                "stress": {"enabled": opts["stress"], "share": opts["stress_share"],
                           **merge_reports(shards.stress, tuple(opts["stress_cuts"]))},
                "special_segments": shards.special, "shards": {"total": len(plan.shards), "committed": len(markers)},
                "shard_cap_s": opts["shard_cap_s"], "capped": shards.capped,
                "max_findings_reached": dict(shards.clusters.over_cap),
                "unlisted_hits": dict(shards.clusters.unlisted)}
        return {"fuzz": fuzz, "counts": counts.as_dict()}


def _tag_row(rule) -> dict[str, Any]:
    return {"engine": rule.engine.pattern, "signature": rule.signature.pattern, "tag": rule.tag, "link": rule.link}


def _search_units(max_examples: int, families: list[str]) -> list[tuple[str, int, int]]:
    """``(family, seed index, examples)`` of each search shard: seed 0 of every family first, the
    examples split evenly (the first shards one more), shards without examples left out."""
    seeds = max(1, math.ceil(max_examples / (len(families) * SHARD_EXAMPLES)))
    units = [(family, k) for k in range(seeds) for family in families]
    share, rest = divmod(max_examples, len(units))
    return [(family, k, share + (i < rest)) for i, (family, k) in enumerate(units) if share + (i < rest) > 0]


class ShardsRead:
    """What ``read_shards`` gathers from the committed extras, in plan order."""

    def __init__(self, max_findings: int):
        from verify.adversarial.fuzz.clusters import ClusterMerge

        self.clusters = ClusterMerge(max_findings)
        self.rounds: list[dict] = []
        self.stress: list[dict] = []
        self.capped: list[str] = []
        self.special: bool | None = None  # special-token segments in the search (None: no search shard ran)


def read_shards(plan, store, markers: dict[int, dict], database: Path | None = None) -> ShardsRead:
    """Stream the committed shards' extras once; with ``database``, write their example saves there."""
    read = ShardsRead(plan.options["max_findings"])
    for index, extra in store.extras(markers):
        read.clusters.add(extra["book"])
        if extra.get("capped"):
            read.capped.append(plan.shards[index].id)
        if extra["phase"] == "search":
            read.rounds += extra["rounds"]
            read.special = extra["special"] if read.special is None else read.special and extra["special"]
        else:
            read.stress.append(extra["stress"])
        if database is not None and extra.get("database"):
            apply_database_changes(database, extra["database"])
    read.clusters.resolve()
    return read


def fuzz_result(out: Path, manifest: dict[str, Any]) -> FuzzResult:
    """The result of a finished fuzz run, from what it committed."""
    from verify.findings import read_findings

    rounds = [Round.from_dict(r) for r in (manifest.get("fuzz") or {}).get("rounds", [])]
    return FuzzResult(Counts.from_dict(manifest["counts"]), out, manifest, list(read_findings(RunFolder(out).findings)),
                      rounds)


def run_fuzz(hunt: FuzzHunt, job: JobOptions) -> FuzzResult:
    """Run the hunt on the one driver, then triage (``job.minimize_budget_s``; 0: none): the fuzzer's
    own clusters steer its search, the committed ones come from triage's causes like every hunt's."""
    from verify.driver import run_hunt

    return fuzz_result(job.out, run_hunt(hunt, job).manifest)


def fuzz(reference_spec: str, candidate_specs: Sequence[str], *, out_dir: Path, max_examples: int | None = None,
         budget_s: float | None = None, seed: int | None = None, database_dir: Path | None = DEFAULT_DATABASE,
         engine: EngineOptions | None = None, long_max: int | None = None,
         max_findings: int = DEFAULT_MAX_FINDINGS, argv: list[str] | None = None,
         allowlist: Allowlist | None = None, tags: list | None = None, stress: bool = True,
         stress_cuts: tuple[int, ...] | None = None) -> FuzzResult:
    """Fuzz ``candidate_specs`` against ``reference_spec`` into ``out_dir`` with one worker (the
    signature of the days before the pipeline; ``verify.jobs.fuzz.fuzz_job`` takes ``JobOptions``).
    ``database_dir=None`` keeps no example database; a relative one is taken from the project
    directory. ``tags`` are the known-cluster rules (default: ``adversarial/tags.toml``);
    ``stress_cuts`` the chunking thresholds of the stress shards (default ``stress.CUTS``)."""
    job = JobOptions(out=Path(out_dir), engine=engine or EngineOptions(), workers=1, progress=False,
                     minimize_budget_s=0, argv=list(argv or []))
    return run_fuzz(FuzzHunt(reference_spec, candidate_specs, job, max_examples=max_examples, budget_s=budget_s,
                             seed=seed, database_dir=database_dir, max_findings=max_findings, allowlist=allowlist,
                             tags=tags, stress=stress, stress_cuts=stress_cuts, long_max=long_max), job)


def _batch_spec(spec: str) -> str | None:
    """The spec driving ``spec``'s batch entry point, None when its library has none (or the
    spec cannot be read without loading: a plugin, an engine not installed)."""
    from verify.engines.vocab_loading import entry_spec

    try:
        return entry_spec(spec, "batch")
    except Exception:  # an unknown or plugin spec: it fails (or not) when the engines start
        return None
