"""The run folder's layout, named in one place: ``RunFolder(out).clusters``, not a file name spelt at each use.

    RunFolder(out).plan, .manifest, .findings, .clusters, ...   the paths of one run folder
    FINDINGS_FILE, CLUSTERS_FILE, ...                           the bare names, relative to OUT

A run folder OUT holds (schema names without their version, which lives with the writer):

  plan            ``plan.json``          ``verify.plan``: what the run is, written before any shard
  manifest        ``manifest.json``      ``verify.manifest``: what the run did (counts, engines, sources)
  hunt            ``hunt.json``          ``verify.hunt``: a hunt's own manifest sections (the manifest is rendered with them)
  findings        ``divergences.jsonl``  ``verify.divergence``, one finding a line
  attempts        ``attempts.jsonl``     one line when a run attempt begins, one when it ends
  shards          ``shards/``            committed shards (``verify.shard`` markers; ``verify.rundir.store``)
  inputs          ``inputs/``            large inputs and histories a finding names (``inputs/KEY.json``)
  status          ``status``             the progress line of a run, rewritten while it runs
  lock            ``.verify.lock``       the pid of the process writing OUT, while one does
  triage          ``triage.jsonl``       one line per finding (by ``finding_key``): its signature and cluster
  clusters        ``clusters.json``      ``verify.clusters``: the cause clusters
  triage_summary  ``triage.json``        ``verify.triage``: how the triage stage ran
  summary         ``summary.md``         the markdown summary
  report          ``report.html``        the HTML report

and, written by one hunt and read by others (the command, the reports, the gate):

  check           ``check.json``         ``verify.check``: metamorphic checks (``verify check``)
  recheck         ``recheck.json``       ``verify.recheck``: regression cases replayed (``verify recheck``)
  length          ``length.json``        ``verify.length``: the length sweep (``verify length sweep``)
  certificate     ``certificate.json``   ``verify.certificate``: what ``verify certify`` proved
  unicode         ``unicode.json``       the Unicode sweep's table (``verify unicode``)
  unicode_summary ``unicode.md``         the same, in markdown
  shadow          ``shadow.json``        ``verify.shadow-report``: a shadow run's report
  shadow_summary  ``shadow.md``          the same, in markdown
  gate_check      ``gate-check.json``    ``verify.gate-check``: what a gate check decided

The bare names are what a record persists relative to OUT (a manifest's ``findings_file``, a hunt's
``reports``); a relative path read *from* a committed file (``input_file``) is untrusted
and goes through ``verify.rundir.paths.inside``, not through this layout.

``verify.findings`` sits below this room (the run folder imports it), so it spells
``divergences.jsonl`` and ``inputs/`` itself; they must stay equal to the names here.

This module imports nothing from ``verify``: every module may use it without making a circle.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PLAN_FILE = "plan.json"
MANIFEST_FILE = "manifest.json"
HUNT_FILE = "hunt.json"
FINDINGS_FILE = "divergences.jsonl"
ATTEMPTS_FILE = "attempts.jsonl"
SHARDS_DIR = "shards"
INPUTS_DIR = "inputs"
STATUS_FILE = "status"
LOCK_FILE = ".verify.lock"
TRIAGE_FILE = "triage.jsonl"
CLUSTERS_FILE = "clusters.json"
TRIAGE_SUMMARY_FILE = "triage.json"
SUMMARY_FILE = "summary.md"
REPORT_FILE = "report.html"

CHECK_FILE = "check.json"
RECHECK_FILE = "recheck.json"
LENGTH_FILE = "length.json"
CERTIFICATE_FILE = "certificate.json"
UNICODE_FILE = "unicode.json"
UNICODE_SUMMARY_FILE = "unicode.md"
SHADOW_FILE = "shadow.json"
SHADOW_SUMMARY_FILE = "shadow.md"
GATE_CHECK_FILE = "gate-check.json"


@dataclass(frozen=True)
class RunFolder:
    """One run folder: ``root`` is OUT; each property is the path of one of its files."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def plan(self) -> Path:
        return self.root / PLAN_FILE

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_FILE

    @property
    def hunt(self) -> Path:
        return self.root / HUNT_FILE

    @property
    def findings(self) -> Path:
        return self.root / FINDINGS_FILE

    @property
    def attempts(self) -> Path:
        return self.root / ATTEMPTS_FILE

    @property
    def shards(self) -> Path:
        return self.root / SHARDS_DIR

    @property
    def inputs(self) -> Path:
        return self.root / INPUTS_DIR

    @property
    def status(self) -> Path:
        return self.root / STATUS_FILE

    @property
    def lock(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def triage(self) -> Path:
        return self.root / TRIAGE_FILE

    @property
    def clusters(self) -> Path:
        return self.root / CLUSTERS_FILE

    @property
    def triage_summary(self) -> Path:
        return self.root / TRIAGE_SUMMARY_FILE

    @property
    def summary(self) -> Path:
        return self.root / SUMMARY_FILE

    @property
    def report(self) -> Path:
        return self.root / REPORT_FILE

    @property
    def check(self) -> Path:
        return self.root / CHECK_FILE

    @property
    def recheck(self) -> Path:
        return self.root / RECHECK_FILE

    @property
    def length(self) -> Path:
        return self.root / LENGTH_FILE

    @property
    def certificate(self) -> Path:
        return self.root / CERTIFICATE_FILE

    @property
    def unicode(self) -> Path:
        return self.root / UNICODE_FILE

    @property
    def unicode_summary(self) -> Path:
        return self.root / UNICODE_SUMMARY_FILE

    @property
    def shadow(self) -> Path:
        return self.root / SHADOW_FILE

    @property
    def shadow_summary(self) -> Path:
        return self.root / SHADOW_SUMMARY_FILE

    @property
    def gate_check(self) -> Path:
        return self.root / GATE_CHECK_FILE
