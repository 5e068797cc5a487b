"""The self-test driver: plant faults of every kind, run the normal pipeline on them, and
count which the harness found.

    result = run_selftest(SelftestOptions(out=Path("reports/selftest")))

Three pipeline runs, each an ordinary ``run_job`` under ``OUT/runs/``:

- ``tokens``: one ``faulty:REFERENCE?kind=KIND`` candidate per token kind over the corpus slice;
- ``unicode``: the ``kind=unicode`` candidate over generated documents with the class's changed
  code points spliced in (``verify.selftest.inputs``);
- ``history``: the ``kind=history`` candidate replayed over generated sessions.

Ground truth comes from the same ``FaultInjector`` on the reference's ids, computed here
from the run's own plan (the shards it ran), never from the run's results. An injected
fault is *found* when the run wrote a finding for that engine on that sample (for the
history kind: on that session), *located* when the finding's first differing token (and
turn) is where the fault is. A finding on a sample without a fault is a false positive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from verify.token_diff import first_difference
from verify.engines.base import as_token_array
from verify.engines.registry import build_engine
from verify.errors import UsageError
from verify.findings import read_findings
from verify.keys import input_key
from verify.rundir.layout import RunFolder
from verify.sample import Sample
from verify.engines.planted.faults import TOKEN_KINDS, selected, token_table
from verify.engines.planted.injector import DEFAULT_UNICODE_FAULT, KINDS, FaultConfig, FaultInjector
from verify.selftest.shadow_model import PAPER, shadow_figures

BATCH = 64
MISSED_LISTED = 20
UNICODE_MAX_DOCUMENTS_PER_FAULT = 50
UNICODE_GIVE_UP_DOCUMENTS_PER_FAULT = 10
MAX_DOCUMENTS = 100_000  # the most documents (--faults / --rate) a self-test plants its faults in
MAX_TURNS = 100  # the most turns per history session


@dataclass
class SelftestOptions:
    out: Path
    reference: str = "tiktoken:cl100k_base"
    kinds: tuple[str, ...] = KINDS
    faults: int = 100  # faults to aim for per kind: sizes the corpus slice and the sessions
    rate: float = 0.25
    seed: int = 0
    corpus: str = "default"
    unicode_fault: str = DEFAULT_UNICODE_FAULT
    after: int = 2000
    turns: int = 6
    min_recall: float = 0.9
    shadow_rate: float = 0.05
    shadow_target: float = 0.9
    isolate: bool = True
    timeout_s: float | None = None
    workers: int = 1
    minimize_budget_s: float = 0.0
    argv: list[str] = field(default_factory=list)

    def check(self) -> None:
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise UsageError(f"unknown fault kind(s) {', '.join(unknown)} (known: {', '.join(KINDS)})")
        if not self.kinds:
            raise UsageError("--kinds names no fault kind")
        if not 0 < self.rate <= 1:
            raise UsageError("--rate must be within (0, 1]")
        if self.faults < 1:
            raise UsageError("--faults must be at least 1")
        if self.faults / self.rate > MAX_DOCUMENTS:  # a float: a tiny rate overflows no integer
            raise UsageError(f"--faults {self.faults} at --rate {self.rate:g} needs {self.faults / self.rate:,.0f} "
                             f"documents; at most {MAX_DOCUMENTS:,}")
        if self.seed < 0:  # numpy's generators take none
            raise UsageError(f"--seed must be 0 or more, got {self.seed}")
        if not 1 <= self.turns <= MAX_TURNS:
            raise UsageError(f"--turns must be from 1 to {MAX_TURNS}, got {self.turns}")
        if not 0 <= self.min_recall <= 1:
            raise UsageError("--min-recall must be within [0, 1]")
        if (self.out / "selftest.json").exists() or (self.out / "runs").exists():
            raise UsageError(f"--out {self.out} already holds a self-test: choose another --out")

    @property
    def documents(self) -> int:
        return math.ceil(self.faults / self.rate)

    def config(self, kind: str) -> FaultConfig:
        return FaultConfig(kind, rate=self.rate, seed=self.seed, after=self.after, unicode=self.unicode_fault)


def run_selftest(opts: SelftestOptions) -> dict:
    opts.check()
    opts.out.mkdir(parents=True, exist_ok=True)
    reference = build_engine(opts.reference)
    vocab = reference.target
    table = token_table(vocab)
    results: dict[str, dict] = {}
    try:
        token_kinds = [k for k in opts.kinds if k in TOKEN_KINDS]
        if token_kinds:
            results.update(_corpus_phase(opts, "tokens", token_kinds, [opts.corpus], opts.documents, reference,
                                         table, vocab))
        if "unicode" in opts.kinds:
            corpus = _unicode_corpus(opts, vocab, reference, table)
            results.update(_corpus_phase(opts, "unicode", ["unicode"], [str(corpus)], None, reference, table, vocab))
        if "history" in opts.kinds:
            results["history"] = _history_phase(opts, reference, table, vocab)
    finally:
        reference.close()
    for kind, result in results.items():
        result["shadow"] = shadow_figures(result["found"], result["injected"], opts.shadow_rate,
                                          opts.shadow_target, opts.seed)
        result["passed"] = result["injected"] > 0 and result["share_found"] >= opts.min_recall \
            and result["false_positives"] == 0
    pooled_kinds = [k for k in PAPER["kinds"] if k in results]
    pooled = None
    if pooled_kinds:
        injected = sum(results[k]["injected"] for k in pooled_kinds)
        found = sum(results[k]["found"] for k in pooled_kinds)
        pooled = {"kinds": pooled_kinds, "injected": injected, "found": found,
                  "share_found": found / injected if injected else 0.0,
                  "shadow": shadow_figures(found, injected, opts.shadow_rate, opts.shadow_target, opts.seed)}
    return {"schema": "verify.selftest/1", "reference": opts.reference, "seed": opts.seed, "rate": opts.rate,
            "faults_per_kind": opts.faults, "min_recall": opts.min_recall, "corpus": opts.corpus,
            "documents": opts.documents, "unicode_fault": opts.unicode_fault, "after": opts.after,
            "turns": opts.turns, "argv": opts.argv, "kinds": [results[k] for k in opts.kinds if k in results],
            "pooled": pooled, "paper": PAPER,
            "passed": all(r["passed"] for r in results.values())}


def _run(opts: SelftestOptions, name: str, specs: list[str], corpora: list[str], limit: int | None,
         traces: list[str] | None = None):
    from verify.driver import RunOptions, run_job

    out = opts.out / "runs" / name
    result = run_job(RunOptions(
        reference=opts.reference, candidates=specs, corpora=corpora, traces=traces, trace_format="verify" if traces
        else None, out=out, limit=limit, isolate=opts.isolate, timeout_s=opts.timeout_s, workers=opts.workers,
        progress=False, minimize_budget_s=opts.minimize_budget_s, argv=opts.argv))
    from verify.rundir.plan import load_plan

    return out, result, load_plan(out)


def _samples(plan) -> Iterable[list[Sample]]:
    batch: list[Sample] = []
    for shard in plan.shards:
        for record in shard.records():
            if isinstance(record, Sample):
                batch.append(record)
                if len(batch) == BATCH:
                    yield batch
                    batch = []
    if batch:
        yield batch


def _corpus_phase(opts, name, kinds, corpora, limit, reference, table, vocab) -> dict[str, dict]:
    specs = {kind: opts.config(kind).spec(opts.reference) for kind in kinds}
    out, result, plan = _run(opts, name, list(specs.values()), corpora, limit)
    injectors = {kind: FaultInjector(opts.config(kind), table, vocab) for kind in kinds}
    findings = _findings_by_engine(out)
    tallies = {kind: _Tally(kind, specs[kind], f"runs/{name}") for kind in kinds}
    for batch in _samples(plan):
        correct = [as_token_array(ids) for ids in reference.encode_batch(batch)]
        for kind in kinds:
            tally = tallies[kind]
            seen = findings.get(specs[kind], {})
            for sample, ref_ids, (faulty, injection) in zip(batch, correct, injectors[kind].apply(batch, correct)):
                key = (sample.id, input_key(sample.segments))
                tally.inputs += 1
                tally.selected += selected(kind, opts.seed, key[1], opts.rate)
                record = seen.pop(key, None)
                if injection is None:
                    tally.false_positives += record is not None
                    continue
                located = record is not None and record.get("token_index") == first_difference(ref_ids, faulty)
                tally.injected_one(injection.bytes_preserved, sample.id, record, located)
    for kind in kinds:
        tallies[kind].false_positives += len(findings.get(specs[kind], {}))  # findings on no sample we know
        tallies[kind].states = result.counts.engine(specs[kind])
    return {kind: tallies[kind].as_dict() for kind in kinds}


def _unicode_corpus(opts: SelftestOptions, vocab: str, reference, table) -> Path:
    """Generated documents with the changed class spliced in, as many as it takes to hold
    ``faults`` injected faults (a class flip shows only where a changed code point sits
    where it moves a boundary that matters), at most ``UNICODE_MAX_DOCUMENTS_PER_FAULT``
    documents per fault, and ``UNICODE_GIVE_UP_DOCUMENTS_PER_FAULT`` when none shows at all."""
    from itertools import islice

    from verify.corpora.generated import generate
    from verify.selftest.inputs import changed_code_points, unicode_corpus, write_corpus

    code_points = changed_code_points(vocab, opts.unicode_fault)
    injector = FaultInjector(opts.config("unicode"), table, vocab)
    cap = opts.faults * UNICODE_MAX_DOCUMENTS_PER_FAULT
    documents = iter(generate(opts.seed, cap, 0))
    kept: list[Sample] = []
    injected = 0
    while injected < opts.faults and len(kept) < cap:
        if not injected and len(kept) >= opts.faults * UNICODE_GIVE_UP_DOCUMENTS_PER_FAULT:
            break  # the class flip shows nowhere: this vocabulary cannot reveal it
        batch = unicode_corpus(islice(documents, BATCH), code_points, opts.seed)
        if not batch:
            break
        correct = [as_token_array(ids) for ids in reference.encode_batch(batch)]
        for sample, (_, injection) in zip(batch, injector.apply(batch, correct)):
            if injected < opts.faults:
                kept.append(sample)
                injected += injection is not None
    return write_corpus(opts.out / "inputs" / "unicode.jsonl", kept)


def _history_phase(opts, reference, table, vocab) -> dict:
    from verify.corpora.generated import generate
    from verify.corpora.traces import open_traces
    from verify.selftest.inputs import write_session_traces

    config = opts.config("history")
    spec = config.spec(opts.reference)
    sessions = opts.documents
    path = write_session_traces(opts.out / "inputs" / "sessions.jsonl",
                                generate(opts.seed, sessions * opts.turns * 2, 0), sessions, opts.turns, opts.seed)
    out, result, plan = _run(opts, "history", [spec], [], None, traces=[str(path)])
    injector = FaultInjector(config, table, vocab)
    tally = _Tally("history", spec, "runs/history")
    by_session = {}
    for record in read_findings(RunFolder(out).findings):
        if record.get("engine") == spec and isinstance(record.get("session"), dict):
            by_session[record["session"]["id"]] = record
    for trace in (r for shard in open_traces(str(path), "verify").shards() for r in shard.records()):
        tally.inputs += 1
        record = by_session.pop(getattr(trace, "id", None), None)
        chosen, injection, turn, located_index = _history_truth(trace, config, injector, reference)
        tally.selected += chosen
        if injection is None:
            tally.false_positives += record is not None
            continue
        located = record is not None and record["session"].get("turn") == turn \
            and record.get("token_index") == located_index
        tally.injected_one(injection.bytes_preserved, trace.id, record, located)
    tally.false_positives += len(by_session)
    tally.states = result.counts.engine(spec)
    return tally.as_dict()


def _history_truth(trace, config: FaultConfig, injector: FaultInjector, reference):
    """(selected, injection, turn index, first differing token) for the turn where the
    session first passes ``after`` characters: where a faulted session goes wrong."""
    for position, turn in enumerate(trace.turns):
        sample = trace.transcript(position)
        if sum(len(s.text) for s in sample.segments) > config.after:
            key = input_key(sample.segments)
            if not selected("history", config.seed, key, config.rate):
                return False, None, None, None
            correct = as_token_array(reference.encode_batch([sample])[0])
            faulty, injection = injector.session_ids(sample.segments, correct, key)
            return True, injection, turn.index, first_difference(correct, faulty) if injection else None
    return False, None, None, None


def _findings_by_engine(out: Path) -> dict[str, dict[tuple[str, str], dict]]:
    by_engine: dict[str, dict[tuple[str, str], dict]] = {}
    for record in read_findings(RunFolder(out).findings):
        if record.get("engine"):
            by_engine.setdefault(record["engine"], {})[(record["sample_id"], record["input_key"])] = record
    return by_engine


@dataclass
class _Tally:
    kind: str
    spec: str
    run: str
    inputs: int = 0
    selected: int = 0
    injected: int = 0
    found: int = 0
    located: int = 0
    bytes_preserved: int = 0
    false_positives: int = 0
    missed: list[str] = field(default_factory=list)
    states: dict = field(default_factory=dict)

    def injected_one(self, bytes_preserved: bool, sample_id: str, record: dict | None, located: bool) -> None:
        self.injected += 1
        self.bytes_preserved += bytes_preserved
        if record is not None:
            self.found += 1
            self.located += located
        elif len(self.missed) < MISSED_LISTED:
            self.missed.append(sample_id)

    def as_dict(self) -> dict:
        share = self.found / self.injected if self.injected else 0.0
        return {"kind": self.kind, "spec": self.spec, "run": self.run, "inputs": self.inputs,
                "selected": self.selected, "injected": self.injected, "found": self.found, "share_found": share,
                "located": self.located, "bytes_preserved": self.bytes_preserved,
                "text_visible": self.injected - self.bytes_preserved, "false_positives": self.false_positives,
                "missed": self.missed, "engine_states": self.states}
