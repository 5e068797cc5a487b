"""``verify shadow`` as a hunt on the one pipeline: shadow files as shards.

    ShadowHunt(files, reference, mapping, ...)   plan: one shard (kind ``shadow``) per file
    shadow_shard (verify.shadow.run)             the task: a file's records against the reference
    shadow_triage(hunt, job)                     the driver's triage stage: clusters, minimising,
                                                 shadow.json / shadow.md, the manifest's ``shadow``

A file is one shard because a session's turns must be read together (docs/shadow.md: a
session's records are in one file, in any order), so a file is never cut into byte ranges.
The replay engines ``--engine`` names start in every worker beside the reference (a
replay engine that cannot start is an error before any shard runs, as it always was);
one of engines/*.toml named after a tokenizer starts in a worker when first needed.

What a shard gives follows from its file and ``plan.options`` (``redact``, the engine
mapping, the batch size, the engines' limits), so 1, 2 or 3 workers, Ray, or a resume
after ``kill -9`` give the same findings and counts. How findings are triaged
(``--minimize-budget``, ``--per-cluster``, ``--allowlist``, ``--known-clusters``) is not
saved: the triage stage runs again on whatever was committed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from verify.pipeline.hunt import Hunt, HuntPlan
from verify.rundir.layout import SHADOW_FILE, SHADOW_SUMMARY_FILE
from verify.shadow.compare import mapping_from_json, mapping_to_json
from verify.shadow.run import shadow_shard
from verify.shadow.schema import SCHEMA
from verify.shadow.source import shadow_source


class ShadowHunt(Hunt):
    name = "shadow"
    label = "verify shadow"
    task = staticmethod(shadow_shard)

    def __init__(self, files: list[str], reference: str | None, mapping: dict[str | None, str], *,
                 redact: bool = False, batch_size: int = 64, engine=None, minimize_budget_s: float = 60.0,
                 per_cluster: int = 1, known=None, allowlist=None):
        from verify.executors.pool import EngineOptions

        self.files, self.reference, self.mapping = list(files), reference, dict(mapping)
        self.redact, self.batch_size = redact, batch_size
        self.engine = engine or EngineOptions()
        self.minimize_budget_s, self.per_cluster = minimize_budget_s, per_cluster
        self.known, self.allowlist = known, allowlist
        self.report: dict[str, Any] | None = None  # shadow.json, once the triage stage wrote it
        self._source = None

    def fill_from(self, saved) -> None:
        """``--resume``: the files, reference and engines of the saved run when not given again;
        a redacted run stays redacted (asking for less is refused, never silently done)."""
        self.files = self.files or list(saved.corpora)
        self.reference = self.reference or saved.reference
        self.mapping = self.mapping or mapping_from_json(saved.options.get("engines") or [])
        self.redact = self.redact or bool(saved.options.get("redact"))
        self._source = None

    def source(self):
        """The shadow files as shards (a missing file fails here, before any engine starts)."""
        from verify.errors import UsageError

        if not self.files or not self.reference:
            raise UsageError("verify shadow needs FILE ... and --reference SPEC (or --resume --out OUT)")
        if self._source is None:
            self._source = shadow_source(self.files)
        return self._source

    def plan(self) -> HuntPlan:
        from verify.engines.catalogue import engine_values

        source = self.source()
        self.reference, replayed = engine_values(self.reference, list(self.mapping.values()))
        self.mapping = dict(zip(self.mapping, replayed))
        replays = [spec for spec in dict.fromkeys(self.mapping.values()) if spec != self.reference]
        options = {"redact": self.redact, "engines": mapping_to_json(self.mapping), "batch_size": self.batch_size,
                   "timeout_s": self.engine.timeout_s, "memory_limit_mb": self.engine.memory_limit_mb}
        return HuntPlan(self.reference, replays, replays, [source.describe()], source.shards(), options,
                        corpora=list(self.files))

    def finish(self, out: Path, plan, store, markers) -> dict[str, Any]:
        """The counts of what was committed; the verdict comes with the triage stage."""
        return {"shadow": {"schema": SCHEMA, "report": None, "redacted": bool(plan.options.get("redact")),
                           "verdict": None, "counts": record_counts(store.totals(markers))}}


def record_counts(counts) -> dict[str, int]:
    states = counts.states
    return {"records": counts.samples, "confirmed": states["verified"], "mismatched": states["diverged"],
            "reference_failed": states["error"] + states["crash"] + states["timeout"],
            "skipped": states["skipped"], "bad_records": counts.bad_records}


def shard_totals(store, markers) -> tuple[dict[tuple, Counter], dict[str, str]]:
    """The comparer's per-tokenizer table and the replay engines used, summed over the committed shards."""
    tokenizers: dict[tuple, Counter] = {}
    replays: dict[str, str] = {}
    for _, extra in store.extras(markers):
        for name, version, sha, tally in extra.get("tokenizers", []):
            tokenizers.setdefault((name, version, sha), Counter()).update(tally)
        replays.update(extra.get("replay_engines") or {})
    return tokenizers, dict(sorted(replays.items()))


def shadow_triage(hunt: ShadowHunt, job) -> dict[str, Any]:
    """The driver's triage stage (``run_hunt(hunt, job, triage=shadow_triage)``): triage.jsonl,
    clusters.json, triage.json, shadow.json, shadow.md and the manifest's ``shadow`` section,
    from the committed shards alone. Keeps shadow.json's content in ``hunt.report``."""
    hunt.report = triage_out(job.out, job.engine, budget_s=hunt.minimize_budget_s,
                      per_cluster=hunt.per_cluster, known=hunt.known, allowlist=hunt.allowlist)
    return hunt.report


def triage_out(out: Path, engine, *, budget_s: float, per_cluster: int = 1, known=None,
               allowlist=None) -> dict[str, Any]:
    """The shadow triage of the run in ``out`` (also ``verify triage OUT`` on a shadow run: pass
    the same known clusters and allowlist, see ``saved_triage_inputs``)."""
    from verify.classify import load_tags
    from verify.rundir.manifest import read_hunt, write_hunt
    from verify.rundir.plan import load_plan
    from verify.rundir.store import ShardStore
    from verify.shadow.report import build_report, write_report
    from verify.shadow.triage import KnownClusters, ShadowTriage

    out = Path(out)
    plan = load_plan(out)
    store = ShardStore(out)
    markers = store.committed([s.id for s in plan.shards])
    redact = bool(plan.options.get("redact"))
    known = known or KnownClusters()
    triage = ShadowTriage(load_tags(), redact=redact, per_cluster=per_cluster, budget_s=budget_s, known=known,
                          allowlist=allowlist)
    outcome = triage.run(out, plan, store, markers, engine)
    tokenizers, replays = shard_totals(store, markers)
    counts = store.totals(markers)
    files = next((s.get("files") for s in plan.sources if s.get("kind") == "shadow"), [])
    report = build_report(reference=plan.identities.get(plan.reference), counts=counts, tokenizers=tokenizers,
                          outcome=outcome, known=known, allowlist=allowlist, redacted=redact, files=files,
                          replay_engines=replays)
    write_report(out, report)
    sections = read_hunt(out)
    sections["shadow"] = {"schema": SCHEMA, "report": SHADOW_FILE, "redacted": redact,
                          "verdict": report["verdict"], "counts": report["counts"],
                          "known_clusters": str(known.out) if known.out else None,
                          "allowlist": str(allowlist.path) if allowlist is not None and allowlist.path else None}
    sections["reports"] = {**(sections.get("reports") or {}), "shadow": SHADOW_SUMMARY_FILE}
    write_hunt(out, sections)
    return report


def saved_triage_inputs(out: Path):
    """``(known, allowlist)`` as the shadow run in ``out`` last used them (for ``verify triage OUT``)."""
    from verify.allowlist import load_allowlist
    from verify.rundir.manifest import read_hunt
    from verify.shadow.triage import KnownClusters

    section = read_hunt(out).get("shadow") or {}
    known = KnownClusters(Path(section["known_clusters"])) if section.get("known_clusters") else KnownClusters()
    allowlist = load_allowlist(Path(section["allowlist"])) if section.get("allowlist") else None
    return known, allowlist
