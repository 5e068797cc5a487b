"""``verify certify`` as a hunt on the one pipeline: ranges of atom strings as shards.

The driver derives the alphabet of the reference's pattern once (``atoms``) and saves,
in ``plan.options``, everything a shard needs: the atoms' representatives, ``k`` and the
alphabet's digest -- so workers never derive it again, and a ``--resume`` with another
alphabet (a new ``regex`` release, another vocabulary) is refused like any changed option.
Shards are ``certify:L<length>[a:b]``: the atom strings ``a..b-1`` of one length (``space``),
in length order. A shard encodes every string of its range on every engine (the reference
once), commits its counts, one finding per differing atom string and engine (its first
assignment), at most ``MAX_SHARD_FINDINGS`` of them (the rest counted as ``unlisted``) and, in
its extra, how many strings and atom strings it compared and how many differed per engine.

**Counterexamples.** The findings are merged in plan order through ``keep``: a finding whose
atom string contains, as a contiguous run, the atom string of a finding already kept for
the same engine is left out (it shows nothing new: ``"\\n's"`` inside ``"a\\n's"``), so
``divergences.jsonl`` holds the minimal counterexamples, shortest first. ``finish`` writes
``OUT/certificate.json`` (``CERTIFICATE_SCHEMA``): the identities, the alphabet, k, the
strings per length, the premises, the verdict and the counterexamples.

The verdict depends on nothing but the plan: ``equal`` only when every planned shard was
committed and every string verified on every candidate (a skipped or failed string is not
equal); ``differ`` when a candidate differed or failed; ``incomplete`` otherwise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import json

from typing_extensions import TypedDict

from verify import atomic
from verify.adversarial.certify.space import MAX_K, Space
from verify.batches import pipelined
from verify.comparison import CachedTokenBytes, Side, compare_batch
from verify.corpora.shards import HuntShard
from verify.counts import Counts
from verify.errors import UsageError
from verify.fresh_check import FreshCheck
from verify.pipeline.hunt import Hunt, HuntPlan, JobOptions
from verify.rundir.layout import CERTIFICATE_FILE, RunFolder
from verify.rundir.result import ShardResult
from verify.sample import Sample

CERTIFICATE_SCHEMA = "verify.certificate/1"


class Counterexample(TypedDict):
    """A shortest differing atom string, with the concrete text and both sides' pieces."""

    engine: str
    kind: str
    length: int
    atoms: list[int]
    text: str
    sample_id: str
    finding_key: str
    expected: list[str] | None
    actual: list[str] | str | None


class Certificate(TypedDict):
    """``OUT/certificate.json`` (``verify.certificate/1``; docs/certify.md): what was enumerated, on
    which engines, the premises and the verdict, and the counterexamples shortest first."""

    schema: str
    reference: dict[str, Any]
    candidates: list[dict[str, Any]]
    not_loaded: dict[str, str]
    alphabet: dict[str, Any]
    k: int
    strings: dict[str, Any]
    counts: dict[str, int]
    differing_strings: dict[str, int]
    differing_atom_strings: dict[str, int]
    unlisted_atom_strings: dict[str, int]
    premises: dict[str, dict[str, Any]]
    verdict: str  # equal, differ, not equal, incomplete
    counterexamples: list[Counterexample]
    statement: str


SHARD_KIND = "certify"
SOURCE = "certify"
DEFAULT_K = 3
DEFAULT_REPS = 2
MAX_REPS = 3
SHARD_STRINGS = 16384  # about this many strings per shard
BATCH = 1024
MAX_SHARD_FINDINGS = 512  # differing atom strings listed per engine and shard; the rest counted (``unlisted``)
MAX_COUNTEREXAMPLES = 200  # per engine, kept in divergences.jsonl and the certificate
# Strings compared per second by one worker (tiktoken against one candidate, 2 representatives,
# measured on a loaded 2-core machine: bench/bench_certify.py). ``--budget`` turns seconds into a
# number of strings with it -- a formula, never a clock, so the space does not depend on load.
STRINGS_PER_SECOND = 20_000
PREMISES = ("unicode", "vocab-sweep", "length")


@dataclass(frozen=True, kw_only=True)
class CertifyShard(HuntShard):
    """Atom strings ``start`` to ``stop - 1`` of length ``length``; label ``certify:LN[a:b]``."""

    kind = SHARD_KIND
    length: int


def certify_shard(index: int, shard: CertifyShard, executors: list, context) -> ShardResult:
    """The task: the atom strings ``shard.start..shard.stop-1`` of length ``shard.length``."""
    started = time.monotonic()
    params = context.params
    space = Space(tuple(tuple(r) for r in params["representatives"]), params["k"])
    length = shard.length

    def batches():
        index, assignment, texts = space.block(length, shard.start, shard.stop)
        prefix = f"certify:{length}:"
        for lo in range(0, len(texts), BATCH):
            yield [Sample.plain(f"{prefix}{t}:{j}", text)
                   for t, j, text in zip(index[lo:lo + BATCH].tolist(), assignment[lo:lo + BATCH].tolist(),
                                         texts[lo:lo + BATCH])]

    sides = [Side(ex.spec, CachedTokenBytes(ex)) for ex in executors]
    counts = Counts()
    for ex in executors:
        counts.engine(ex.spec)
    kept, found = [], {}
    atom_strings: dict[str, set[int]] = {}  # per engine, the differing atom strings (one finding each)
    for samples, outcomes in pipelined(executors, batches()):
        delta, findings = compare_batch(samples, outcomes, sides, SOURCE)
        counts.add(delta)
        for finding in findings:
            found[finding.engine] = found.get(finding.engine, 0) + 1
            _, t, j = (int(x) for x in finding.sample.id.split(":")[1:])
            seen = atom_strings.setdefault(finding.engine, set())
            if t in seen:
                continue  # another assignment of the same atom string: counted, not a new counterexample
            seen.add(t)
            if len(seen) <= MAX_SHARD_FINDINGS:
                finding.fields["certify"] = {"length": length, "index": t, "assignment": j,
                                             "atoms": list(space.digits(length, t))}
                kept.append(finding)
    differing_atoms = {spec: len(seen) for spec, seen in atom_strings.items()}
    result = ShardResult(index, shard.id, counts, worker=context.worker,
                         extra={"length": length, "atom_strings": shard.stop - shard.start,
                                "strings": counts.samples, "differing": found,
                                "differing_atom_strings": differing_atoms,
                                "unlisted": {spec: n - MAX_SHARD_FINDINGS for spec, n in differing_atoms.items()
                                             if n > MAX_SHARD_FINDINGS}})
    fresh = FreshCheck(executors)  # after the pipelined loop: no engine has a batch in flight
    for finding in fresh.confirm(kept):
        result.add_record(*finding.to_record())
    result.counts.findings = len(result.records)
    result.extra["fresh"] = fresh.as_dict()
    result.seconds = time.monotonic() - started
    return result


def plan_shards(space: Space, shard_strings: int = SHARD_STRINGS) -> list[CertifyShard]:
    shards = []
    for length in range(1, space.k + 1):
        atom_strings = space.atom_strings(length)
        per = max(1, space.strings(length) // atom_strings)  # strings per atom string, on average
        step = max(1, shard_strings // per)
        for a in range(0, atom_strings, step):
            b = min(a + step, atom_strings)
            shards.append(CertifyShard(SOURCE, label=f"certify:L{length}[{a}:{b}]", start=a, stop=b, length=length))
    return shards


class CertifyHunt(Hunt):
    name = "certify"
    label = "verify certify"
    task = staticmethod(certify_shard)

    def __init__(self, reference: str | None, requested: list[str] | None, job: JobOptions, *,
                 k: int | None = None, reps: int | None = None, budget_s: float | None = None,
                 premises: dict[str, Any] | None = None):
        self.reference, self.requested, self.job = reference, list(requested or []), job
        self.k, self.reps, self.budget_s, self.premises = k, reps, budget_s, premises

    def fill_from(self, saved) -> None:
        if saved.hunt != self.name:
            return
        self.reference = self.reference or saved.reference
        self.requested = self.requested or saved.requested
        o = saved.options
        if self.k is None and self.budget_s is None:
            self.k = o.get("k")
        self.reps = self.reps or o.get("reps")
        if self.premises is None:
            self.premises = o.get("premises")

    def space(self, alpha) -> Space:
        """The space of the alphabet: ``--k``, or the largest k whose strings fit ``--budget``."""
        from verify.adversarial.certify.space import k_for

        reps = alpha.representatives(self.reps or DEFAULT_REPS)
        if self.k is None:
            self.k = DEFAULT_K if self.budget_s is None else \
                k_for(reps, int(self.budget_s * STRINGS_PER_SECOND * max(1, self.job.workers)))
        return Space(tuple(map(tuple, reps)), self.k)

    def plan(self) -> HuntPlan:
        from verify.adversarial.certify.atoms import alphabet_of
        from verify.engines.catalogue import expand_candidates, run_engines

        check_k(self.k)
        check_reps(self.reps)
        self.reference, self.requested = run_engines(self.reference, self.requested)
        if not self.reference or not self.requested:
            raise UsageError("certify needs --reference and at least one --candidate")
        candidates, swept_in = expand_candidates(self.reference, self.requested)
        if self.reference in candidates:
            raise UsageError(f"'{self.reference}' is both the reference and a candidate")
        alpha = alphabet_of(self.reference)
        space = self.space(alpha)
        reps = self.reps or DEFAULT_REPS
        options = {"k": space.k, "reps": reps, "representatives": [list(r) for r in space.reps],
                   "alphabet": alpha.digest, "premises": self.premises or {},
                   "timeout_s": self.job.engine.timeout_s, "memory_limit_mb": self.job.engine.memory_limit_mb}
        source = {"name": f"every string of at most {space.k} atoms over {len(alpha)} atoms", "kind": "certify",
                  "atoms": len(alpha), "k": space.k, "strings": space.total(), "patterns": list(alpha.patterns)}
        return HuntPlan(self.reference, self.requested, candidates, [source], plan_shards(space), options,
                        optional=sorted(swept_in))

    def keep(self) -> Callable[[dict], bool]:
        """Minimal counterexamples: a finding whose atom string contains one already kept for its
        engine is left out; at most ``MAX_COUNTEREXAMPLES`` per engine."""
        kept: dict[str, list[tuple[int, ...]]] = {}

        def keep_finding(record: dict) -> bool:
            where = record.get("certify")
            if not where:
                return True
            atoms = tuple(where["atoms"])
            seen = kept.setdefault(record.get("engine"), [])
            if len(seen) >= MAX_COUNTEREXAMPLES or any(_contains(atoms, s) for s in seen):
                return False
            seen.append(atoms)
            return True

        return keep_finding

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        doc = certificate(out, plan, store, markers)
        atomic.write_json(RunFolder(out).certificate, doc)
        return {"certify": {"verdict": doc["verdict"], "k": doc["k"], "atoms": doc["alphabet"]["atoms"],
                            "strings": doc["strings"]["total"], "compared": doc["strings"]["compared"],
                            "counterexamples": len(doc["counterexamples"])},
                "statement": doc["statement"], "reports": {"Certificate": CERTIFICATE_FILE}}


def _contains(longer: tuple[int, ...], shorter: tuple[int, ...]) -> bool:
    n = len(shorter)
    return any(longer[i:i + n] == shorter for i in range(len(longer) - n + 1))


def check_k(k: int | None) -> None:
    if k is not None and not 1 <= k <= MAX_K:
        raise UsageError(f"--k must be from 1 to {MAX_K} atoms, got {k}")


def check_reps(reps: int | None) -> None:
    if reps is not None and not 1 <= reps <= MAX_REPS:
        raise UsageError(f"--reps must be from 1 to {MAX_REPS} representatives per atom, got {reps}")


def certificate(out: Path, plan, store, markers) -> Certificate:
    """``certificate.json`` from what the shards committed and the merged findings."""
    from verify.adversarial.certify.atoms import alphabet_of

    o = plan.options
    space = Space(tuple(tuple(r) for r in o["representatives"]), o["k"])
    per_length = {n: {"atom_strings": space.atom_strings(n), "strings": space.strings(n), "compared": 0}
                  for n in range(1, space.k + 1)}
    differing: dict[str, int] = {}
    unlisted: dict[str, int] = {}
    differing_atoms: dict[str, int] = {}  # atom strings with a differing string; a counterexample lists each
    for _, extra in store.extras(markers):
        per_length[extra["length"]]["compared"] += extra["strings"]
        for spec, n in extra["differing"].items():
            differing[spec] = differing.get(spec, 0) + n
        for spec, n in (extra.get("unlisted") or {}).items():
            unlisted[spec] = unlisted.get(spec, 0) + n
        for spec, n in (extra.get("differing_atom_strings") or {}).items():
            differing_atoms[spec] = differing_atoms.get(spec, 0) + n
    totals = store.totals(markers)
    complete = len(markers) == len(plan.shards)
    counterexamples: list[Counterexample] = []
    path = RunFolder(out).findings
    if path.is_file():
        for line in path.read_bytes().splitlines():
            record = json.loads(line)
            where = record.get("certify")
            if where is None:
                continue
            counterexamples.append({
                "engine": record["engine"], "kind": record["kind"], "length": where["length"],
                "atoms": where["atoms"], "text": "".join(s for s, _ in record["input"]),
                "sample_id": record["sample_id"], "finding_key": record["finding_key"],
                "expected": (record.get("expected") or {}).get("pieces"),
                "actual": (record.get("actual") or {}).get("pieces") or (record.get("error") or {}).get("message")})
    counterexamples.sort(key=lambda c: tuple(int(x) for x in c["sample_id"].split(":")[1:]))
    alpha = alphabet_of(plan.reference)
    atoms = alpha.as_dict(o["reps"])
    if alpha.digest != o["alphabet"]:  # the alphabet changed under the run (a new regex release)
        atoms["changed"] = f"derived now as {alpha.digest}, planned as {o['alphabet']}"
    total = space.total()
    compared = sum(v["compared"] for v in per_length.values())
    states = totals.states
    if not complete:
        verdict = "incomplete"
    elif totals.all_verified and not counterexamples and compared == total:
        verdict = "equal"
    elif states["diverged"] or states["error"] or states["crash"] or states["timeout"] or counterexamples:
        verdict = "differ"
    else:
        verdict = "not equal"  # skipped strings: not compared, so nothing is proven about them
    premises = {name: (o.get("premises") or {}).get(name, {"status": "not run"}) for name in PREMISES}
    doc: Certificate = {
        "schema": CERTIFICATE_SCHEMA,
        "reference": plan.identities.get(plan.reference) or {"spec": plan.reference},
        "candidates": [plan.identities.get(s) or {"spec": s} for s in plan.candidates],
        "not_loaded": dict(plan.not_loaded),
        "alphabet": {"atoms": len(alpha), "digest": o["alphabet"], "patterns": atoms["patterns"],
                     "regex_version": atoms["regex_version"], "excluded": atoms["excluded"],
                     "code_points": atoms["code_points"], "representatives_per_atom": o["reps"],
                     "list": atoms["atoms"], **({"changed": atoms["changed"]} if "changed" in atoms else {})},
        "k": space.k,
        "strings": {"total": total, "compared": compared,
                    "per_length": {str(n): v for n, v in per_length.items()}},
        "counts": {"verified": states["verified"], "diverged": states["diverged"], "error": states["error"],
                   "crash": states["crash"], "timeout": states["timeout"], "skipped": states["skipped"]},
        "differing_strings": differing,
        "differing_atom_strings": differing_atoms,  # minimal ones are the counterexamples; the rest contain one
        # differing atom strings past a shard's MAX_SHARD_FINDINGS: counted, not among the counterexamples
        "unlisted_atom_strings": unlisted,
        "premises": premises,
        "verdict": verdict,
        "counterexamples": counterexamples,
        "statement": "",
    }
    doc["statement"] = statement(doc)
    return doc


def statement(doc: dict[str, Any]) -> str:
    """The certificate in words."""
    reps = doc["alphabet"]["representatives_per_atom"]
    filled = ("each atom by its commonest member" if reps == 1 else
              f"every adjacent pair of atoms with every pair of their {reps} representatives")
    space = (f"every string of at most {doc['k']} atom{'s' if doc['k'] != 1 else ''} over {doc['alphabet']['atoms']} atoms "
             f"({doc['strings']['total']:,} strings, {filled})")
    ran = [f"{_premise_words(name, p)}: {p.get('verdict', p['status'])}" for name, p in doc["premises"].items()
           if p.get("status") != "not run"]
    premises = ("; premises " + ", ".join(ran)) if ran else "; no sweep was run as a premise"
    if doc["verdict"] == "equal":
        return f"{space}: identical ids{premises}."
    if doc["verdict"] == "incomplete":
        return (f"{space}: INCOMPLETE, {doc['strings']['compared']:,} strings compared; nothing is certified "
                f"until the run is resumed to the end{premises}.")
    if doc["counterexamples"]:
        first = doc["counterexamples"][0]
        more = sum(doc.get("unlisted_atom_strings", {}).values())
        more = f" (and {more:,} more differing atom strings counted, not listed)" if more else ""
        return (f"{space}: NOT equal, {len(doc['counterexamples'])} minimal counterexample(s){more}, the shortest "
                f"{first['text']!r} ({first['length']} atoms, {first['engine']}){premises}.")
    return (f"{space}: NOT certified, {doc['counts']['skipped']:,} strings skipped or not compared{premises}.")


def _premise_words(name: str, premise: dict[str, Any]) -> str:
    """A premise sweep in words: what it covered, as its plan recorded it."""
    if name == "unicode":
        start, stop = premise.get("code_points") or (None, None)
        if start in (None, 0) and stop in (None, 0x110000):
            return "every code point in its contexts (Unicode sweep)"
        return f"the code points U+{start or 0:04X}..U+{(stop or 0x110000) - 1:04X} in their contexts (Unicode sweep)"
    if name == "vocab-sweep":
        limit = premise.get("tokens")
        return ("every vocabulary token and adjacent pair" if limit is None else
                f"the first {limit:,} vocabulary tokens and their pairs") + " (vocab sweep)"
    bound = premise.get("max_chars")
    return f"every length family to {bound:,} characters (length sweep)" if bound else "the length sweep"
