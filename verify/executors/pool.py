"""The engine pool: how every command starts its engines, with the same options.

``EngineOptions`` holds what means the same in every command (isolation, the
hang timeout, the load timeout, the memory limit, thread pinning); ``EnginePool`` starts
executors from specs with them, remembers engines that could not load (and
why), and collects identities and run notes when the work is done. Thread
pinning is for CPU engines: an engine the pool knows to run on a device
(``devices``, see ``verify.executors.devices``) starts unpinned.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from verify.config import parse_spec
from verify.engine_spec import EngineSpec
from verify.errors import ConfigError, VerifyError
from verify.executors.base import Executor
from verify.executors.isolated import DEFAULT_TIMEOUT_S
from verify.executors.loading import DEFAULT_LOAD_TIMEOUT_S
from verify.executors.threads import pin_threads


@dataclass(frozen=True)
class EngineOptions:
    isolate: bool = True  # each engine in its own worker process
    timeout_s: float = DEFAULT_TIMEOUT_S  # an engine call that takes longer is a hang (isolated only)
    memory_limit_mb: int | None = None  # address-space limit per engine worker (isolated only)
    threads: int | None = None  # threads each engine's own pool may use; None = its default
    load_timeout_s: float = DEFAULT_LOAD_TIMEOUT_S  # building an engine that takes longer is a hang
    # with ``isolate``: the shard workers of ``ProcessShards`` may be the crash boundary instead
    # (``verify.executors.workers.speculating``), their engines in their own process, and a worker that
    # crashes or passes the hang deadline has its shard run again with isolated engines; every other
    # process (the driver's triage, a Ray actor) still isolates. A speculating worker's own options are
    # ``isolate=False, speculate=True``: in-process engines whose calls have the hang deadline
    speculate: bool = False

    def with_(self, **changes) -> "EngineOptions":
        return replace(self, **changes)

    def for_device(self, device: str) -> "EngineOptions":
        """The options for an engine on ``device``: CPU thread pinning does not apply to a GPU engine."""
        return self if device == "cpu" else replace(self, threads=None)

    def as_dict(self) -> dict[str, Any]:
        return {"isolate": self.isolate, "timeout_s": self.timeout_s, "memory_limit_mb": self.memory_limit_mb,
                "threads": self.threads, "load_timeout_s": self.load_timeout_s, "speculate": self.speculate}


def _parsed_or_text(spec: EngineSpec | str) -> EngineSpec | str:
    """The value of a spec the Python API hands as text (a run's plan hands values: passed as
    they are). Text that names no engine known here is passed on as it is: its engine fails to
    start, saying why, where every other engine's failure is reported."""
    try:
        return parse_spec(spec)
    except ConfigError:
        return spec


def start_executor(spec: EngineSpec | str, options: EngineOptions) -> Executor:
    """One executor for ``spec``; raises a ``VerifyError`` when the engine cannot load. One that
    misses a load deadline is an unstarted engine (``verify.executors.loading``)."""
    spec = _parsed_or_text(spec)
    if options.isolate:
        from verify.executors.isolated import IsolatedExecutor

        return IsolatedExecutor(spec, timeout_s=options.timeout_s, memory_limit_mb=options.memory_limit_mb,
                                threads=options.threads, start_timeout_s=options.load_timeout_s)
    from verify.engines import build_engine
    from verify.executors.isolated import EngineLoadError
    from verify.executors.loading import LoadTimedOut, UnstartedExecutor, deadline, did_not_start
    from verify.executors.local import LocalExecutor

    pin_threads(options.threads)
    engine = None
    try:
        with deadline(options.load_timeout_s, f"it did not load within {options.load_timeout_s:g} s (--load-timeout)"):
            engine = build_engine(spec)
        with deadline(options.timeout_s, f"its probe calls (the fingerprint) did not answer within "
                                         f"{options.timeout_s:g} s (--timeout)"):
            engine.identity()  # computed once, kept: the run's identities read it again
    except LoadTimedOut as exc:
        if engine is not None:
            engine.close()
        return UnstartedExecutor(spec, did_not_start(spec, str(exc)))
    except VerifyError:
        raise
    except Exception as exc:  # the engine's own code raised while loading: its problem, not ours
        raise EngineLoadError(f"engine '{spec}' failed to load: {type(exc).__name__}: {exc}") from exc
    # a speculating worker's engine calls have the hang deadline: past it, the worker ends (SIGALRM)
    return LocalExecutor(engine, call_deadline_s=options.timeout_s if options.speculate else None)


@dataclass
class EnginePool:
    options: EngineOptions = field(default_factory=EngineOptions)
    executors: dict[str, Executor] = field(default_factory=dict)
    not_loaded: dict[str, str] = field(default_factory=dict)  # spec -> why it could not be started
    devices: dict[str, str] = field(default_factory=dict)  # spec -> device, for engines not on the CPU

    def start(self, specs: Iterable[str], optional: Iterable[str] = ()) -> list[Executor]:
        """Start every spec (in order). A spec in ``optional`` that cannot load is left
        out and remembered in ``not_loaded``; any other load failure closes what was
        started and raises."""
        optional = set(optional)
        started: list[Executor] = []
        try:
            for spec in specs:
                try:
                    started.append(self.get(spec))
                except Exception as exc:  # an optional engine may fail any way it likes; it is reported
                    if spec not in optional:
                        raise
                    self.not_loaded[spec] = str(exc) if isinstance(exc, VerifyError) else f"{type(exc).__name__}: {exc}"
        except BaseException:
            self.close()
            raise
        return started

    def get(self, spec: str) -> Executor:
        """The executor for ``spec``, started on first use."""
        if spec not in self.executors:
            self.executors[spec] = start_executor(spec, self.options.for_device(self.devices.get(spec, "cpu")))
        return self.executors[spec]

    def try_get(self, spec: str) -> Executor | str:
        """The executor, or a line saying why it cannot be started (a status, not a crash)."""
        if spec in self.not_loaded:
            return self.not_loaded[spec]
        try:
            return self.get(spec)
        except Exception as exc:  # package missing, bad vocabulary, a crash while loading
            self.not_loaded[spec] = f"{type(exc).__name__}: {exc}"
            return self.not_loaded[spec]

    def identities(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for spec, ex in self.executors.items():
            try:
                out[spec] = ex.identity().as_dict()
            except Exception as exc:
                out[spec] = {"spec": spec, "identity_error": f"{type(exc).__name__}: {exc}"}
        return out

    def notes(self) -> dict[str, dict[str, Any]]:
        """Per engine: how it ran (isolated, worker restarts) and what it reports (its run notes)."""
        # what a crash would end: the engine's own worker, or (speculating) the shard worker
        isolated = "worker" if self.options.speculate and not self.options.isolate else self.options.isolate
        out = {spec: {"isolated": isolated, "worker_restarts": ex.restarts, **ex.run_notes()}
               for spec, ex in self.executors.items()}
        return out | {spec: {"not_loaded": why} for spec, why in self.not_loaded.items()}

    def close(self) -> None:
        for ex in self.executors.values():
            try:
                ex.close()
            except Exception:
                pass
        self.executors.clear()

    def __enter__(self) -> "EnginePool":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False
