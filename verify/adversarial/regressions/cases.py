"""Regression cases (``adversarial/regressions/*.json``, schema ``verify.regression/1``) and their replay.

A case records one real divergence: the input, what the reference gave
(``expected``), what the engine gave (``actual``, or ``null`` plus ``error``
when it raised) and whether the bug is still ``open`` or known ``fixed``.
``replay`` runs the input through both engines again (executors from an
``EnginePool``; agreement is ``verify.outcome.agree``) and says what happened:

  still-diverges      the engine still differs from ``expected`` (``same_actual`` says whether it
                      still gives the recorded ``actual`` / raises the recorded error type)
  fixed               the engine now gives ``expected``
  error               the engine raised (or crashed, or timed out) where the case records ids,
                      or raised an error type other than the recorded one
  engine-unavailable  the engine (or the reference) cannot be started here (package missing, ...), or
                      it cannot honour the input's allow_special segments (its executor skips it)
  reference-changed   the reference no longer gives ``expected``: the case itself is suspect

Ids are stored literally, or -- for long results -- as a digest
``{"len": N, "sha256": HEX, "window": {...}}`` where ``sha256`` is
``verify.keys.ids_sha256`` (the ids as little-endian uint32) and ``window`` (informational) shows the ids around the
first difference. Inputs are literal ``[[text, allow_special], ...]``, or an
``input_generator`` (``{"kind": "repeat", "text": T, "count": N}`` -> T * N) for
inputs too large to keep in the repository. See adversarial/README.md.

A history-dependent bug (a result cache, state kept across calls) is a case with a
``history`` (``verify.history.History.to_json``: the calls in order, the victim at
``[call, element]``, whose input is the case's ``input``): its replay makes those calls on a
*fresh* instance of the engine (``Executor.fresh_replayer``) and judges the victim's outcome,
so the case reproduces the bug, not whatever an earlier case left in the engine. ``detail``
then also says whether the victim alone (on another fresh instance) still agrees: a victim that
fails alone too is no longer history-dependent.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from verify.engine_spec import EngineSpec
from verify.config import parse_spec
from verify.errors import ConfigError, UnknownEngineError
from verify.executors.base import Executor
from verify.executors.pool import EnginePool
from verify.history import History, victim_result
from verify.keys import ids_sha256, input_key
from verify.outcome import Failure, Skipped, agree
from verify.sample import Sample

__all__ = ["SCHEMA", "STATUSES", "RegressionCase", "ReplayResult", "ids_match", "ids_record", "ids_sha256",
           "load_case", "load_cases", "parse_case", "replay", "replay_all"]

SCHEMA = "verify.regression/1"
STATUSES = ("still-diverges", "fixed", "error", "engine-unavailable", "reference-changed")
RECORDED_STATUSES = ("open", "fixed")
GENERATOR_KINDS = ("repeat", "runs")
MAX_GENERATED_CHARS = 50_000_000
REQUIRED = ("id", "engine", "reference", "expected")


MAX_ID = 2**32 - 1  # token ids are uint32


# --- ids: literal or digest ---------------------------------------------------

def ids_record(ids: Sequence[int] | np.ndarray, literal_limit: int = 1000, window_at: int | None = None) -> Any:
    """How a case stores ids: a list up to ``literal_limit`` ids, else a digest."""
    values = [int(i) for i in ids]
    if len(values) <= literal_limit:
        return values
    record: dict[str, Any] = {"len": len(values), "sha256": ids_sha256(values)}
    if window_at is not None:
        lo = max(0, window_at - 4)
        record["window"] = {"start": lo, "ids": values[lo:lo + 12]}
    return record


def ids_match(ids: np.ndarray | Sequence[int], recorded: Any) -> bool:
    """Do ``ids`` equal a stored ids value (list or digest)?"""
    arr = np.asarray(ids, dtype=np.uint32)
    if isinstance(recorded, dict):
        return int(arr.size) == recorded["len"] and ids_sha256(arr) == recorded["sha256"]
    return agree(arr, np.asarray(recorded, dtype=np.uint32))


# --- the case -----------------------------------------------------------------

@dataclass
class RegressionCase:
    id: str
    path: Path
    engine: EngineSpec | str  # parsed where the case is read; the text when it names no engine known here
    reference: EngineSpec | str
    sample: Sample
    expected: Any  # list[int] | digest dict
    actual: Any  # list[int] | digest dict | None (when the engine raised)
    error: dict[str, str] | None
    status: str  # recorded: "open" | "fixed"
    title: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    history: History | None = None  # the calls that lead a fresh engine to the bug (its victim: ``sample``)

    @property
    def input_key(self) -> str:
        """``verify.keys.input_key`` of the input: the same key as a finding on it."""
        return input_key(self.sample.segments)

    @property
    def expected_outcome(self) -> str:
        """The replay status that means 'as recorded'."""
        return "fixed" if self.status == "fixed" else "still-diverges"


def _spec(text: str) -> EngineSpec | str:
    """A case's engine, parsed as the case is read; an engine this project does not name (a
    named spec of another checkout) stays text, and replaying the case says it is unavailable."""
    try:
        return parse_spec(text)
    except UnknownEngineError:
        return text


def _fail(path: Path, message: str) -> ConfigError:
    return ConfigError(f"{path}: malformed regression case: {message}")


def _check_ids(path: Path, name: str, value: Any) -> None:
    if isinstance(value, list):
        if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_ID for i in value):
            raise _fail(path, f"'{name}' must be a list of non-negative integers (uint32 token ids)")
        return
    if isinstance(value, dict):
        if not isinstance(value.get("len"), int) or not isinstance(value.get("sha256"), str) \
                or len(value["sha256"]) != 64:
            raise _fail(path, f"'{name}' digest needs 'len' (int) and 'sha256' (64 hex digits)")
        return
    raise _fail(path, f"'{name}' must be a list of token ids or a {{len, sha256}} digest")


def expand_input(path: Path, doc: dict[str, Any]) -> list[tuple[str, bool]]:
    has_input, has_gen = "input" in doc, "input_generator" in doc
    if has_input == has_gen:
        raise _fail(path, "needs exactly one of 'input' and 'input_generator'")
    if has_input:
        segments = doc["input"]
        if not isinstance(segments, list) or not segments or not all(
                isinstance(s, list) and len(s) == 2 and isinstance(s[0], str) and isinstance(s[1], bool)
                for s in segments):
            raise _fail(path, "'input' must be a non-empty list of [text, allow_special] pairs")
        return [(s[0], s[1]) for s in segments]
    gen = doc["input_generator"]
    if not isinstance(gen, dict) or gen.get("kind") not in GENERATOR_KINDS:
        raise _fail(path, f"'input_generator.kind' must be one of {', '.join(GENERATOR_KINDS)}")
    allow = gen.get("allow_special", False)
    if not isinstance(allow, bool):
        raise _fail(path, "'input_generator.allow_special' must be true or false")
    if gen["kind"] == "runs":  # [[unit, count], ...] as verify.run_length writes them: '1'x24997 + '\x1c' + '1'x3
        runs = gen.get("runs")
        if not isinstance(runs, list) or not runs or not all(
                isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and r[0] and isinstance(r[1], int)
                and not isinstance(r[1], bool) and r[1] >= 1 for r in runs):
            raise _fail(path, "'input_generator' runs needs 'runs': [[unit (non-empty string), count (int >= 1)], ...]")
        if sum(len(u) * c for u, c in runs) > MAX_GENERATED_CHARS:
            raise _fail(path, f"'input_generator' expands to more than {MAX_GENERATED_CHARS} characters")
        from verify.run_length import from_runs

        return [(from_runs(runs), allow)]
    text, count = gen.get("text"), gen.get("count")
    if not isinstance(text, str) or not text or not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise _fail(path, "'input_generator' repeat needs 'text' (non-empty string) and 'count' (int >= 1)")
    if len(text) * count > MAX_GENERATED_CHARS:
        raise _fail(path, f"'input_generator' expands to more than {MAX_GENERATED_CHARS} characters")
    return [(text * count, allow)]


def parse_case(path: Path, doc: Any) -> RegressionCase:
    if not isinstance(doc, dict):
        raise _fail(path, "the file must hold one JSON object")
    if doc.get("schema") != SCHEMA:
        raise _fail(path, f"'schema' must be \"{SCHEMA}\" (got {doc.get('schema')!r})")
    for key in REQUIRED:
        if key not in doc:
            raise _fail(path, f"missing '{key}'")
    for key in ("id", "engine", "reference"):
        if not isinstance(doc[key], str) or not doc[key]:
            raise _fail(path, f"'{key}' must be a non-empty string")
    segments = expand_input(path, doc)
    _check_ids(path, "expected", doc["expected"])
    if "actual" not in doc:
        raise _fail(path, "missing 'actual' (the ids the engine gave, or null with 'error')")
    error = doc.get("error")
    if doc["actual"] is None:
        if not isinstance(error, dict) or not isinstance(error.get("type"), str):
            raise _fail(path, "'actual' is null, so 'error': {\"type\", \"message\"} is required")
    else:
        _check_ids(path, "actual", doc["actual"])
        if error is not None:
            raise _fail(path, "'error' is only for cases whose 'actual' is null")
    status = doc.get("status", "open")
    if status not in RECORDED_STATUSES:
        raise _fail(path, f"'status' must be one of {', '.join(RECORDED_STATUSES)} (got {status!r})")
    sample = Sample.from_segments(doc["id"], segments)
    return RegressionCase(
        id=doc["id"], path=path, engine=_spec(doc["engine"]), reference=_spec(doc["reference"]),
        sample=sample, expected=doc["expected"], actual=doc["actual"],
        error=error, status=status, title=str(doc.get("title", "")), raw=doc,
        history=_parse_history(path, doc.get("history"), sample),
    )


def _parse_history(path: Path, doc: Any, sample: Sample) -> History | None:
    """The case's ``history`` (None: none), whose victim must be the case's input."""
    if doc is None:
        return None
    try:
        history = History.from_json(doc, sample_id=f"{sample.id}:history")
        victim = history.victim_sample
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise _fail(path, f"'history' must be {{\"calls\": [...], \"victim\": [call, element]}}: {exc}") from None
    if victim is None or victim.segments != sample.segments:
        raise _fail(path, "'history': the victim (calls[call][element]) must be the case's input")
    return history


def load_case(path: Path) -> RegressionCase:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read regression case: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: malformed regression case: invalid JSON: {exc}") from exc
    return parse_case(path, doc)


def load_cases(folder: Path | str) -> list[RegressionCase]:
    """Every ``*.json`` case in ``folder``, sorted by file name. Raises ``ConfigError`` naming the file."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"regression case folder not found: {folder}")
    cases: list[RegressionCase] = []
    seen: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")):
        case = load_case(path)
        if case.id in seen:
            raise ConfigError(f"{path}: regression case id '{case.id}' is already used by {seen[case.id]}")
        seen[case.id] = path
        cases.append(case)
    return cases


# --- replay -------------------------------------------------------------------

@dataclass
class ReplayResult:
    case: RegressionCase
    status: str  # one of STATUSES
    detail: str = ""
    same_actual: bool | None = None  # still-diverges: the recorded actual (or error type) again
    ids: list[int] | None = None  # what the engine gave now
    error: dict[str, str] | None = None  # what it raised now
    reference_ids: list[int] | None = None  # only when the reference changed
    seconds: float = 0.0

    @property
    def as_recorded(self) -> bool:
        """What a gate checks: nothing changed since the case was written."""
        if self.status != self.case.expected_outcome:
            return False
        return self.status != "still-diverges" or bool(self.same_actual)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "file": self.case.path.name,
            "engine": self.case.engine,
            "reference": self.case.reference,
            "input_key": self.case.input_key,
            "recorded_status": self.case.status,
            "status": self.status,
            "same_actual": self.same_actual,
            "as_recorded": self.as_recorded,
            "detail": self.detail,
            "actual": None if self.ids is None else ids_record(self.ids),
            "error": self.error,
            "reference_ids": None if self.reference_ids is None else ids_record(self.reference_ids),
            "seconds": round(self.seconds, 3),
        }


def replay(case: RegressionCase, reference: Executor | str, engine: Executor | str) -> ReplayResult:
    """Replay one case. ``reference`` / ``engine`` are executors, or a string saying why that
    engine cannot be started (``EnginePool.try_get``) -> ``engine-unavailable``."""
    started = time.monotonic()

    def result(status: str, detail: str, **kw) -> ReplayResult:
        return ReplayResult(case, status, detail, seconds=time.monotonic() - started, **kw)

    if isinstance(reference, str):
        return result("engine-unavailable", f"reference {case.reference} unavailable: {reference}")
    if isinstance(engine, str):
        return result("engine-unavailable", f"{case.engine} unavailable: {engine}")

    ref_out = reference.encode([case.sample])[0]
    if isinstance(ref_out, Skipped):
        return result("engine-unavailable", f"reference {case.reference} cannot replay the input: {ref_out.reason}")
    after = ""
    if case.history is not None:
        replayer = engine.fresh_replayer()
        if replayer is None:
            return result("engine-unavailable", f"{case.engine} has no fresh instance to replay the case's history on")
        with_history, (alone_call,) = replayer.replay_many([list(case.history.calls), [[case.sample]]])
        out = victim_result(case.history, with_history)
        alone_agrees = agree(alone_call[0] if isinstance(alone_call, list) else alone_call, ref_out)
        after = (f" after its {len(case.history.calls)}-call history on a fresh engine"
                 f" (alone: {'agrees' if alone_agrees else 'differs too'})")
    else:
        out = engine.encode([case.sample])[0]
    if isinstance(out, Skipped):
        return result("engine-unavailable", f"{case.engine} cannot replay the input: {out.reason}")

    if isinstance(ref_out, Failure):
        return result("reference-changed", f"reference {ref_out.kind}: {ref_out.type}: {ref_out.message[:200]}",
                      error={**ref_out.as_dict(), "kind": ref_out.kind})
    if not ids_match(ref_out, case.expected):
        return result("reference-changed", f"{case.reference} no longer gives the recorded expected ids "
                                           f"({ref_out.size} tokens now)", reference_ids=[int(i) for i in ref_out])

    if isinstance(out, Failure):
        err = {**out.as_dict(), "kind": out.kind}
        if case.error is not None and out.type == case.error.get("type"):
            return result("still-diverges", f"still raises {out.type}{after}", same_actual=True, error=err)
        return result("error", f"{out.kind}: {out.type}: {out.message[:200]}{after}", error=err)
    ids = [int(i) for i in out]
    if agree(out, ref_out):
        return result("fixed", f"now equals the reference{after}", ids=ids)
    same = case.actual is not None and ids_match(out, case.actual)
    detail = "same ids as recorded" if same else (
        f"different ids than recorded ({len(ids)} tokens now)" if case.actual is not None
        else f"no longer raises {case.error['type'] if case.error else 'the recorded error'}; returns other ids")
    return result("still-diverges", detail + after, same_actual=same, ids=ids)


def replay_all(cases: Sequence[RegressionCase], pool: EnginePool,
               on_result: Callable[[ReplayResult], None] | None = None) -> list[ReplayResult]:
    """Replay every case with engines from ``pool`` (each spec started once; one that cannot
    start makes its cases ``engine-unavailable``)."""
    results = []
    for case in cases:
        results.append(replay(case, pool.try_get(case.reference), pool.try_get(case.engine)))
        if on_result:
            on_result(results[-1])
    return results
