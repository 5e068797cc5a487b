"""What runs inside Ray (``--executor ray``): the engine actor and the start-up probe.

    probe_engines  a short-lived Ray task: start every engine once, say what loaded, close them.
    ShardActor     every engine of the run, started once per actor; ``run`` runs one shard.
    actor_setup    the setup as an actor runs it (engines pinned to the CPUs it reserves).

The driver side -- placing actors on nodes, replacing dead ones, retrying shards -- is
``verify.executors.ray_shards``.
"""

from __future__ import annotations

import json
import os
import pickle
import traceback
import uuid
from dataclasses import replace
from typing import Any

from verify.corpora.shards import Shard
from verify.errors import VerifyError
from verify.executors.setup import RayOptions, TaskContext, WorkerSetup, open_ledger, start_engines
from verify.executors.threads import pin_threads


def actor_setup(setup: WorkerSetup, options: RayOptions) -> WorkerSetup:
    """The setup as an actor runs it: engines pinned to the CPUs the actor reserves."""
    threads = max(1, int(options.cpus_per_actor))
    return replace(setup, engine_options=setup.engine_options.with_(threads=threads))


def _error_line(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, VerifyError) else f"{type(exc).__name__}: {exc}"


def probe_engines(setup: WorkerSetup) -> tuple:
    """Runs as a Ray task: start every engine once, say what loaded, close them."""
    pin_threads(setup.engine_options.threads)
    try:
        engines = start_engines(setup)
    except BaseException as exc:
        return ("load-failed", _error_line(exc), isinstance(exc, VerifyError))
    try:
        return ("ready", engines.identities(), dict(engines.not_loaded), engines.specs(), engines.notes())
    finally:
        engines.close()


class ShardActor:
    """Every engine of the run, started once; ``run`` runs one shard, returning ``index``,
    ``result`` (the pickled ``ShardResult``), ``error`` (why the shard or the engines failed),
    ``expected`` (that error is a ``VerifyError``, else a harness bug), ``notes`` (the pickled
    run notes of its engines) and ``actor`` (its name)."""

    def __init__(self, setup: WorkerSetup, specs: list[str], isolated: bool):
        import ray

        context = ray.get_runtime_context()
        self.name = f"ray-{context.get_actor_id()[:8]}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        if isolated:  # a replacement, as ProcessShards': what killed the last one becomes a finding
            setup = replace(setup, engine_options=setup.engine_options.with_(isolate=True))
        self.setup, self.engines, self.executors = setup, None, []
        self.error, self.expected = "", True
        pin_threads(setup.engine_options.threads)
        try:
            self.engines = start_engines(setup)
            self.executors = self.engines.executors
            self.context = TaskContext(setup, self.name, open_ledger(setup, self.executors[0]) if self.executors
                                       else None)
        except BaseException as exc:  # reported with every row
            self.error, self.expected = _error_line(exc), isinstance(exc, VerifyError)
            return
        loaded = self.engines.specs()
        if loaded != list(specs):
            self.error, self.expected = f"actors loaded different engines ({loaded} vs {list(specs)})", False

    def ready(self) -> str:
        return self.name

    def run(self, index: int, shard_json: str) -> dict[str, Any]:
        row = {"index": index, "result": b"", "error": self.error, "expected": self.expected, "notes": b"",
               "actor": self.name}
        if self.error:
            return row
        try:
            result = self.setup.run(index, Shard.from_json(json.loads(shard_json)), self.executors, self.context)
            row["result"] = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except VerifyError as exc:
            row["error"], row["expected"] = str(exc), True
        except Exception:
            row["error"], row["expected"] = traceback.format_exc(limit=8), False
        row["notes"] = pickle.dumps(self.engines.notes())
        return row
