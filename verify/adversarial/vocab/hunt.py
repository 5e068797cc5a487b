"""``verify vocab sweep`` as a hunt on the one pipeline: ranges of each part as shards.

The driver reads the reference's vocabulary once to plan: which token ids are swept, in
which contexts (saved in ``plan.options``, so workers never derive them again) and a
digest of the vocabulary. Shards follow the sequential sweep's order, part by part:

  vocab:tokens[a:b]    the swept token texts at positions a..b-1 (id order), in every context
  vocab:pairs[a:b]     the pairs whose first token is at those positions: a slice of the
                       deterministic pair list (``sweep.pair_ids``)
  vocab:special[a:b]   the added/special tokens at positions a..b-1 (id order), every variant

Each worker reads the vocabulary once (``context.cache``) and checks it against the plan's
digest. A shard commits its counts, at most ``max_findings`` findings per engine (the rest
counted, not kept) and its part statistics (``extra``). The global cap -- ``max_findings``
per engine and part, in sweep order -- is applied as the committed findings are merged
(``keep``), so ``divergences.jsonl`` holds exactly the findings of the sequential sweep;
``finish`` sums the statistics into the manifest's ``vocab_sweep`` section and ``sources``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from verify.adversarial.vocab.sweep import (DEFAULT_BATCH, DEFAULT_MAX_FINDINGS, DEFAULT_PAIRS, FOLLOWERS, PARTS,
                                            PairDraws, PartStats, SweepPlan, near_misses, pair_draws, part_samples,
                                            sweep_samples)
from verify.corpora.shards import HuntShard
from verify.errors import UsageError, VocabError
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.fresh_check import FreshCheck
from verify.rundir.result import ShardResult

SHARD_SAMPLES = 32768  # about this many samples per shard: ~200 shards for o200k_base, ~1 s each
SHARD_KIND = "vocab"
MAX_PAIRS = 1000  # --pairs' ceiling
# Samples per token a pairs shard plans for: the random partners and about this many class partners.
CLASS_PARTNERS = round(sum(map(len, FOLLOWERS.values())) / len(FOLLOWERS))
SPECIAL_VARIANTS = 2 * len(near_misses("<|x|>")) + 5  # samples per added token, about


@dataclass(frozen=True, kw_only=True)
class VocabShard(HuntShard):
    """Positions ``start`` to ``stop - 1`` of one ``part`` of the sweep (``tokens``, ``pairs``,
    ``special``); label ``vocab:PART[a:b]``."""

    kind = SHARD_KIND
    part: str


def vocabulary_digest(vocab) -> str:
    """What the sweep reads of a vocabulary, hashed: a worker that reads another refuses to run."""
    import xxhash

    h = xxhash.xxh3_128()
    for i in sorted(vocab.tokens):
        h.update(i.to_bytes(8, "little") + len(vocab.tokens[i]).to_bytes(4, "little") + vocab.tokens[i])
    for text, i in sorted(vocab.added.items(), key=lambda item: item[1]):
        h.update(i.to_bytes(8, "little") + text.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def plan_shards(plan: SweepPlan, parts: list[str], shard_samples: int = SHARD_SAMPLES) -> list[VocabShard]:
    """Each part cut into ranges of about ``shard_samples`` samples, in sweep order."""
    per_position = {"tokens": len(plan.templates()), "pairs": plan.pairs + CLASS_PARTNERS, "special": SPECIAL_VARIANTS}
    positions = {"tokens": len(plan.text_ids), "pairs": len(plan.text_ids), "special": len(plan.added_by_id)}
    shards = []
    for part in parts:
        step = max(1, shard_samples // per_position[part])
        for a in range(0, positions[part], step):
            b = min(a + step, positions[part])
            shards.append(VocabShard("vocab-sweep", label=f"vocab:{part}[{a}:{b}]", start=a, stop=b, part=part))
    return shards


@dataclass
class WorkerSweep:
    """One worker's copy of the sweep plan, read once and kept between its shards."""

    plan: SweepPlan
    draws: PairDraws | None = None

    def pair_draws(self) -> PairDraws:
        if self.draws is None:
            self.draws = pair_draws(self.plan)
        return self.draws


def worker_sweep(context, reference_spec: str) -> WorkerSweep:
    """The sweep plan of this worker (``context.cache``): the vocabulary is read once per worker."""
    from verify.adversarial.vocab.texts import vocabulary_of

    params = context.params
    key = ("vocab-sweep", reference_spec, params["limit"], params["seed"], params["pairs"])
    cached = context.cache.get(key)
    if cached is None:
        vocab = vocabulary_of(reference_spec)
        if vocabulary_digest(vocab) != params["vocabulary"]:
            raise VocabError(f"the vocabulary of {reference_spec} read in worker {context.worker or 'inline'} is not "
                             "the one the sweep was planned on (it changed since); start a new run")
        plan = SweepPlan.build(vocab, limit=params["limit"], seed=params["seed"], pairs=params["pairs"],
                               contexts=params["contexts"])
        cached = context.cache[key] = WorkerSweep(plan)
    return cached


def vocab_shard(index: int, shard: VocabShard, executors: list, context) -> ShardResult:
    """The task: one range of one part through the reference (``executors[0]``) and every candidate."""
    started = time.monotonic()
    params = context.params
    part = shard.part
    sweep = worker_sweep(context, executors[0].spec)
    draws = sweep.pair_draws() if part == "pairs" else None
    samples = part_samples(sweep.plan, part, shard.start, shard.stop, draws)
    swept = sweep_samples(samples, executors, part, batch_size=params["batch_size"],
                          max_findings=params["max_findings"])
    result = ShardResult(index, shard.id, swept.counts, seconds=time.monotonic() - started, worker=context.worker,
                         extra={"part": part, "stats": swept.stats.as_dict(), "found": swept.found})
    fresh = FreshCheck(executors)  # after the pipelined loop: no engine has a batch in flight now
    for finding in fresh.confirm(swept.findings):
        result.add_record(*finding.to_record())
    result.extra["fresh"] = fresh.as_dict()
    return result


class VocabHunt(Hunt):
    name = "vocab-sweep"
    label = "verify vocab sweep"
    task = staticmethod(vocab_shard)

    def __init__(self, reference: str | None, requested: list[str] | None, job: JobOptions, *,
                 parts: list[str] | None = None, limit: int | None = None, pairs: int | None = None,
                 seed: int | None = None, batch_size: int | None = None, max_findings: int | None = None,
                 shard_samples: int | None = None):
        """``None`` means unsaid: a resume takes it from the saved plan, a new run its default
        (``limit`` None: every token id)."""
        self.reference, self.requested = reference, list(requested or [])
        self.parts = list(parts) if parts else None
        self.limit, self.pairs, self.seed = limit, pairs, seed
        self.batch_size, self.max_findings, self.shard_samples = batch_size, max_findings, shard_samples
        self.job = job

    def fill_from(self, saved) -> None:
        if saved.hunt != self.name:
            return  # another command's run: refused (one line) once planned, never filled from its options
        self.reference = self.reference or saved.reference
        self.requested = self.requested or saved.requested
        o = saved.options
        for name in ("parts", "limit", "pairs", "seed", "batch_size", "max_findings", "shard_samples"):
            if getattr(self, name) is None:
                setattr(self, name, o.get(name))

    def _defaults(self) -> None:
        from verify.engines.catalogue import run_engines

        self.reference, self.requested = run_engines(self.reference, self.requested)
        unknown = [p for p in self.parts or [] if p not in PARTS]
        if unknown:
            raise UsageError(f"unknown vocab sweep part {unknown[0]!r} (choose from {', '.join(PARTS)})")
        self.parts = [p for p in PARTS if p in (self.parts or PARTS)]
        self.pairs = DEFAULT_PAIRS if self.pairs is None else self.pairs
        if not 0 <= self.pairs <= MAX_PAIRS:  # the table of random partners (tokens x pairs) is held in memory
            raise UsageError(f"--pairs must be from 0 to {MAX_PAIRS} random partners per token, got {self.pairs}")
        self.seed = 0 if self.seed is None else self.seed
        if self.seed < 0:  # numpy's generators take none
            raise UsageError(f"--seed must be 0 or more, got {self.seed}")
        self.batch_size = self.batch_size or DEFAULT_BATCH
        self.max_findings = self.max_findings or DEFAULT_MAX_FINDINGS
        self.shard_samples = self.shard_samples or SHARD_SAMPLES

    def plan(self) -> HuntPlan:
        from verify.adversarial.vocab.sweep import describe_vocabulary
        from verify.adversarial.vocab.texts import vocabulary_of
        from verify.engines.catalogue import expand_candidates

        self._defaults()
        if not self.reference or not self.requested:
            raise UsageError("vocab sweep needs --reference and at least one --candidate")
        candidates, swept_in = expand_candidates(self.reference, self.requested)
        if self.reference in candidates:
            raise UsageError(f"--candidate {self.reference} is the reference")
        try:
            vocab = vocabulary_of(self.reference)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        sweep = SweepPlan.build(vocab, limit=self.limit, seed=self.seed, pairs=self.pairs)
        options = {"parts": self.parts, "limit": self.limit, "pairs": self.pairs, "seed": self.seed,
                   "batch_size": self.batch_size, "max_findings": self.max_findings,
                   "shard_samples": self.shard_samples, "contexts": [list(c) for c in sweep.contexts],
                   "vocabulary": vocabulary_digest(vocab), "timeout_s": self.job.engine.timeout_s,
                   "memory_limit_mb": self.job.engine.memory_limit_mb}
        return HuntPlan(self.reference, self.requested, candidates, [describe_vocabulary(sweep)],
                        plan_shards(sweep, self.parts, self.shard_samples), options, optional=sorted(swept_in))

    def keep(self) -> Callable[[dict], bool]:
        """The first ``max_findings`` findings of each engine and part, in sweep order (each shard
        kept its own first ``max_findings``, so these are among them)."""
        cap = self.max_findings
        taken: dict[tuple[str, str], int] = {}

        def keep_finding(record: dict) -> bool:
            key = (record.get("engine"), record.get("source"))
            n = taken.get(key, 0)
            if n >= cap:
                return False
            taken[key] = n + 1
            return True

        return keep_finding

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        return finish_sections(plan, store, markers)


def finish_sections(plan, store, markers) -> dict[str, Any]:
    """The manifest sections of the committed shards, streamed shard by shard: ``vocab_sweep``
    (each part's statistics, summed), ``sources`` (the vocabulary, what each part swept) and
    ``counts`` with ``findings`` the number kept in ``divergences.jsonl``."""
    from verify.adversarial.vocab.sweep import part_sources

    o = plan.options
    cap = o["max_findings"]
    stats = {part: PartStats() for part in o["parts"]}
    found: dict[str, dict[str, int]] = {part: {} for part in o["parts"]}
    for _, extra in store.extras(markers):
        part = extra["part"]
        stats[part].add(extra["stats"])
        for engine, n in extra["found"].items():
            found[part][engine] = found[part].get(engine, 0) + n
    kept = 0
    for part, st in stats.items():
        # the merge keeps min(cap, all found) per engine: each shard wrote min(cap, its own)
        written = sum(min(cap, n) for n in found[part].values())
        st.not_written = st.findings - written
        kept += written
    counts = store.totals(markers)
    counts.findings = kept
    vocabulary = plan.sources[0]
    contexts = ["alone"] + [n for n, t in o["contexts"] if t != "{c}"]
    sources = [vocabulary, *part_sources(vocabulary, stats, contexts=contexts, seed=o["seed"], pairs=o["pairs"])]
    return {"vocab_sweep": {part: st.as_dict() for part, st in stats.items()}, "sources": sources,
            "counts": counts.as_dict()}
