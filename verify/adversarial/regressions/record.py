"""Writing a regression case (``verify.regression/1``) from a divergence seen now.

    doc = record_case(case_id, title, engine_exec, reference_exec, sample, notes=...)

Encodes the sample on both executors, refuses when they agree (nothing to record),
and returns the case document with both engines' versions, the vocabulary and its
SHA-256, the first differing token, today's date and ``status: open``. The caller
writes it to ``adversarial/regressions/<id>.json``; ``verify recheck`` replays it. With a
``history`` (a minimised history-dependent finding: ``verify recheck --add ID --from OUT
--cluster KEY``) the case keeps the calls, and both recording and replay make them on a fresh
engine.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

from verify.token_diff import first_difference
from verify.errors import UsageError
from verify.history import History, victim_result
from verify.outcome import Failure, agree, is_ids
from verify.sample import Sample
from verify import atomic
from verify.run_length import compact

SCHEMA = "verify.regression/1"
CASE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")  # a file name: never a folder, hidden, or outside


def _version(identity) -> str:
    if identity.package:
        return f"{identity.package}=={identity.package_version}"
    return f"{identity.name}=={identity.version}" if identity.name else identity.adapter


def build_of(identity) -> dict[str, Any] | None:
    """Which build the case was recorded on, beyond ``engine_version``: the engine's declared name
    and version, the digest of its code, its private environment's requirements (None: nothing
    more is known)."""
    build = {"name": identity.name, "version": identity.version, "files_digest": identity.files_digest,
             "requirements": (identity.environment or {}).get("requirements")}
    build = {k: v for k, v in build.items() if v}
    return build or None


def record_case(case_id: str, title: str, engine, reference, sample: Sample, notes: str = "",
                history: History | None = None) -> dict[str, Any]:
    """The case of ``sample`` (with ``history``: the victim of those calls, made on a fresh
    instance of ``engine``; its ``actual`` is what the victim gives there)."""
    from verify.adversarial.regressions.cases import ids_record

    (expected,) = reference.encode([sample])
    if history is None:
        (actual,) = engine.encode([sample])
    else:
        replayer = engine.fresh_replayer()
        if replayer is None:
            raise UsageError(f"{engine.spec} has no fresh instance: a case with a history cannot be recorded")
        actual = victim_result(history, replayer.replay(list(history.calls)))
    if isinstance(expected, Failure) or not is_ids(expected):
        raise UsageError(f"the reference gives no ids for this input ({expected})")
    if agree(expected, actual):
        raise UsageError(f"{engine.spec} agrees with {reference.spec} on this input: no case to record")
    e_ident, r_ident = engine.identity(), reference.identity()
    doc: dict[str, Any] = {
        "schema": SCHEMA, "id": case_id, "title": title, "engine": engine.spec, "reference": reference.spec,
        "engine_version": _version(e_ident), "reference_version": _version(r_ident),
        **({"engine_build": build_of(e_ident)} if build_of(e_ident) else {}),
        "vocab": r_ident.vocab, "vocab_sha256": r_ident.vocab_sha256,
        "expected": ids_record(expected),
    }
    runs = compact(sample.text) if len(sample.segments) == 1 else None
    if runs is not None:  # a long repetition: kept as its runs ('1'x24997 + '\x1c' + '1'x3), rebuilt exactly
        doc["input_generator"] = {"kind": "runs", "runs": runs, "allow_special": sample.segments[0].allow_special}
    else:
        doc["input"] = [[s.text, s.allow_special] for s in sample.segments]
    if isinstance(actual, Failure):
        doc["actual"] = None
        doc["error"] = {"type": actual.type, "message": actual.message[:500]}
    else:
        doc["actual"] = ids_record(actual)
        doc["token_index"] = first_difference(expected, actual)
    if history is not None:
        doc["history"] = history.to_json()
    doc.update({"status": "open", "found": datetime.date.today().isoformat(), "upstream": None, "notes": notes})
    return doc


def check_case_id(case_id: str) -> None:
    """A case id names its file ``<id>.json`` in the case folder: letters, digits and ``._+-``,
    starting with a letter or digit, at most 200 characters (one line, exit 2 otherwise)."""
    if not CASE_ID.fullmatch(case_id):
        raise UsageError(f"--add {case_id!r}: a case id is letters, digits and ._+- (starting with a letter or "
                         f"digit, at most 200), as it names the file <id>.json")


def write_case(folder: Path, doc: dict[str, Any], overwrite: bool = False) -> Path:
    """Write the case as ``folder/<id>.json``, making ``folder`` when it is not there."""
    check_case_id(doc["id"])
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file, or a path under one
        raise UsageError(f"--cases {folder}: cannot be a case folder ({exc.strerror})") from None
    path = folder / f"{doc['id']}.json"
    if path.exists() and not overwrite:
        raise UsageError(f"{path} exists already (choose another id for --add)")
    atomic.write_json(path, doc)
    return path
