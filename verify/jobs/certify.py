"""``verify certify`` as a function: every string of at most k atoms of the reference's pattern
through every engine, the certificate written beside the run's reports; and ``--check``:
a certificate's engines against the installed ones."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verify.adversarial.certify.hunt import CERTIFICATE_SCHEMA, PREMISES, CertifyHunt
from verify.counts import Counts
from verify.driver import run_hunt
from verify.errors import UsageError
from verify.executors.pool import EngineOptions
from verify.limits import MAX_GIVEN_JSON_BYTES
from verify.pipeline.hunt import JobOptions
from verify.rundir.layout import RunFolder

IDENTITY_FIELDS = ("adapter", "package", "package_version", "vocab_sha256", "options", "fingerprint", "name",
                   "version", "files_digest", "environment")
RERUN_MAX_STRINGS = 200_000  # --check enumerates again when the space is at most this


@dataclass
class CertifyResult:
    out: Path
    counts: Counts
    certificate: dict[str, Any]
    not_loaded: dict[str, str]
    complete: bool


def certify_job(reference: str | None, requested: list[str] | None, job: JobOptions, *, k: int | None = None,
                reps: int | None = None, budget_s: float | None = None,
                premises: dict[str, Any] | None = None) -> CertifyResult:
    from verify.rundir.plan import load_plan

    hunt = CertifyHunt(reference, requested, job, k=k, reps=reps, budget_s=budget_s, premises=premises)
    result = run_hunt(hunt, job)
    doc = json.loads(RunFolder(job.out).certificate.read_text(encoding="utf-8"))
    return CertifyResult(job.out, result.counts, doc, dict(load_plan(job.out).not_loaded), result.complete)


def _given_json(path: Path, flag: str, what: str) -> Any:
    """A JSON file a user named (``--check``, ``--premise``): at most ``MAX_GIVEN_JSON_BYTES``,
    anything unreadable one line (exit 2)."""
    try:
        size = path.stat().st_size
        if size > MAX_GIVEN_JSON_BYTES:
            raise UsageError(f"{flag} {path}: {size:,} bytes, not a {what} verify writes "
                             f"(at most {MAX_GIVEN_JSON_BYTES:,})")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"{flag} {path}: not a readable {what} ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{flag} {path}: a JSON {type(doc).__name__}, not a {what} verify writes")
    return doc


def read_premises(folders: list[Path], reference: str, candidates: list[str]) -> dict[str, Any]:
    """The sweeps of ``folders`` (finished runs of ``verify unicode``, ``vocab sweep``, ``length
    sweep``) as premises: their hunt, verdict and counts. A run of other engines is refused."""
    premises: dict[str, Any] = {}
    for folder in folders:
        manifest = _given_json(RunFolder(folder).manifest, "--premise", "run manifest")
        hunt = manifest.get("hunt")
        if hunt not in PREMISES:
            raise UsageError(f"--premise {folder}: a run of '{hunt}', not a premise sweep ({', '.join(PREMISES)})")
        ref = (manifest.get("reference") or {}).get("spec")
        cands = [c.get("spec") for c in manifest.get("candidates") or []]
        if ref != reference or not set(candidates) <= set(cands):
            raise UsageError(f"--premise {folder}: it compared {ref} with {', '.join(map(str, cands))}, not "
                             f"{reference} with {', '.join(candidates)}")
        counts = manifest.get("counts") or {}
        states = {k: counts.get(k, 0) for k in ("verified", "diverged", "error", "crash", "timeout", "skipped")}
        verified = bool(manifest.get("complete")) and counts.get("samples", 0) > 0 and \
            states["verified"] == counts.get("samples")
        premises[hunt] = {"status": "read", "out": str(folder), "complete": bool(manifest.get("complete")),
                          "verdict": "equal" if verified else "not equal", "samples": counts.get("samples", 0),
                          **states, **_bounds(Path(folder), hunt)}
    return premises


def _bounds(folder: Path, hunt: str) -> dict[str, Any]:
    """What a premise sweep covered, from its plan's options: the code points of a Unicode sweep,
    the tokens of a vocabulary sweep (None: all), the length bound of a length sweep."""
    try:
        options = json.loads(RunFolder(folder).plan.read_text(encoding="utf-8")).get("options") or {}
    except (OSError, ValueError):
        return {}
    if hunt == "unicode":
        return {"code_points": [options.get("start"), options.get("stop")]}
    if hunt == "vocab-sweep":
        return {"tokens": options.get("limit")}
    return {"max_chars": options.get("max_chars")}


PREMISES_FOLDER = "premises"


def run_premises(reference: str, candidates: list[str], job: JobOptions, *, max_chars: int | None = None,
                 unicode_stop: int | None = None, vocab_limit: int | None = None) -> dict[str, Any]:
    """The sweeps a certificate rests on, run on the same engines into ``OUT/premises/<sweep>``
    (each resumed where a previous attempt left it): every code point in its contexts (the
    Unicode sweep: each code point in the atom of its class), every vocabulary token and
    adjacent pair, every length family to ``max_chars`` (the length sweep's default when None).
    Returns them as premises (``read_premises``), marked as run by certify. ``unicode_stop`` and
    ``vocab_limit`` cut the first two short (tests; the premise then records the smaller counts)."""
    from verify.jobs.length import length_job
    from verify.jobs.unicode import unicode_job
    from verify.jobs.vocab import vocab_job

    sweeps = {"unicode": lambda j: unicode_job(reference, candidates, j, stop=unicode_stop),
              "vocab-sweep": lambda j: vocab_job(reference, candidates, j, limit=vocab_limit),
              "length": lambda j: length_job(reference, candidates, j, max_chars=max_chars)}
    folders = []
    for name, sweep in sweeps.items():
        folder = job.out / PREMISES_FOLDER / name
        sweep(replace(job, out=folder, resume=RunFolder(folder).plan.is_file(), argv=[]))
        folders.append(folder)
    premises = read_premises(folders, reference, candidates)
    for name, premise in premises.items():
        premise.update(status="run", out=f"{PREMISES_FOLDER}/{name}")
    return premises


@dataclass
class CheckResult:
    changed: list[str] = field(default_factory=list)  # "spec: field 'x' was A, is B"
    verdict: str | None = None  # the verdict of the enumeration run again (None: not run)
    rerun_out: Path | None = None


def load_certificate(path: Path) -> dict[str, Any]:
    doc = _given_json(Path(path), "--check", "certificate")
    if not isinstance(doc, dict) or doc.get("schema") != CERTIFICATE_SCHEMA:
        raise UsageError(f"--check {path}: not a {CERTIFICATE_SCHEMA} certificate")
    return doc


def check_certificate(path: Path, engine: EngineOptions, *, rerun: bool = True,
                      out: Path | None = None) -> CheckResult:
    """The certificate's engines built here, their identities compared field by field; when they
    are the same and the space is small (``RERUN_MAX_STRINGS``), the enumeration run again."""
    from verify.engines import build_engine

    doc = load_certificate(path)
    result = CheckResult()
    for saved in [doc["reference"], *doc["candidates"]]:
        spec = saved["spec"]
        try:
            built = build_engine(spec)
        except Exception as exc:  # noqa: BLE001 - any failure to start is the change to name
            result.changed.append(f"{spec}: does not start here ({type(exc).__name__}: {exc})")
            continue
        try:
            now = built.identity().as_dict()
        finally:
            built.close()
        for name in IDENTITY_FIELDS:
            if saved.get(name) != now.get(name):
                result.changed.append(f"{spec}: identity field '{name}' was {saved.get(name)!r}, is {now.get(name)!r}")
    if result.changed or not rerun or doc["strings"]["total"] > RERUN_MAX_STRINGS:
        return result
    target = out or Path(tempfile.mkdtemp(prefix="verify-certify-check-"))
    job = JobOptions(out=target, engine=engine, workers=1, progress=False, minimize_budget_s=0.0)
    again = certify_job(doc["reference"]["spec"], [c["spec"] for c in doc["candidates"]], job, k=doc["k"],
                        reps=doc["alphabet"]["representatives_per_atom"])
    result.verdict, result.rerun_out = again.certificate["verdict"], target
    return result
