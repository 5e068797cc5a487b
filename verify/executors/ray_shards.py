"""Shard executor on a Ray cluster (``verify run --executor ray``).

  RayShards  a Ray Data pipeline over the run's pending shards: one input row per
             shard (its plan index and its JSON descriptor), ``map_batches`` with
             ``ShardRunner``, a callable class whose actors each start every engine
             of the run once (through ``EnginePool``, so engines stay isolated in
             their own processes inside the actor and an engine segfault is a
             ``crash`` finding, not a dead actor) and run one shard per call
             (``batch_size=1``). Each output row is the index and the pickled
             ``ShardResult``; the driver unpickles it and hands it to ``on_result``,
             which commits it exactly as with the local executor, so ``--resume``
             (with either executor) and ``verify triage`` work unchanged.

Fault tolerance: actors are restarted by Ray when they die (``max_restarts``) and
the shards they held are run again (``max_task_retries``); a restarted actor starts
its engines isolated even under ``--in-process``, as the local executor's
replacement workers do. A shard whose task fails every try is reported in
``failures``, never counted.

No double counting: a shard is committed only from a completed result, by its plan
index, at most once (a second result for an index is dropped, with an event), and
a commit replaces whatever an earlier attempt left. A shard Ray re-ran because its
actor died returned nothing the first time, so it is counted exactly once.

Start-up: the driver does not load engines; one short-lived Ray task starts the
pool, reports identities and what did not load, and closes it (load failures raise
the same ``VerifyError`` as locally). Without an address a local Ray is started on
this machine's cores, quiet (no dashboard, no usage statistics sent, Ray's logs
kept off the terminal) and shut down by ``close()``; with ``--ray-address`` every node must have ``verify``,
the engines and the corpus files at the same paths.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import sys
import tempfile
import traceback
import uuid
import warnings
from dataclasses import replace
from typing import Any, Sequence

from verify.corpora.shards import Shard
from verify.errors import UsageError, VerifyError
from verify.executors.notes import merge_notes
from verify.executors.threads import pin_threads
from verify.executors.setup import (HarnessError, OnResult, OnStart, RayOptions, ShardError, ShardFailure, Started, TaskContext,
                                    WorkerSetup, open_ledger, start_engines)

RAY_MISSING = "verify run --executor ray needs ray: pip install 'verify-tokenizers[ray]'"
SHARD_RETRIES = 2  # a shard whose actor died runs again this many times (more in-process), then it is failed
QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_BACKEND_LOG_LEVEL": "fatal"}


def import_ray():
    """``ray`` and ``ray.data``, or the one-line install hint (exit 2)."""
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)  # before ray starts: its processes inherit them
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise VerifyError(RAY_MISSING) from None
    for handler in logging.getLogger("ray.data").handlers:
        if handler.name == "console":  # Ray Data's own log file in the session's logs keeps everything
            handler.setLevel(logging.CRITICAL)
    return ray


def actor_setup(setup: WorkerSetup, options: RayOptions) -> WorkerSetup:
    """The setup as an actor runs it: engines pinned to the CPUs the actor reserves."""
    threads = max(1, int(options.cpus_per_actor))
    return replace(setup, engine_options=setup.engine_options.with_(threads=threads))


@contextlib.contextmanager
def _quiet_native_stderr():
    """Ray's C++ side announces its log level on file descriptor 2 while ``ray.init``
    runs; keep that one line off the terminal and pass anything else through."""
    with tempfile.TemporaryFile(mode="w+b") as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            lines = [line for line in capture.read().decode("utf-8", "replace").splitlines()
                     if line.strip() and "Set ray log level" not in line]
            if lines:
                print("\n".join(lines), file=sys.stderr)


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


class ShardRunner:
    """A Ray Data actor: every engine of the run, started once in ``__init__``; each
    call runs the shards of its batch and returns one row per shard:

      index    the shard's plan index
      result   the pickled ``ShardResult`` (empty when the shard raised)
      error    why the shard (or this actor's engines) failed, else ""
      expected whether that error is the user's (a ``VerifyError``: exit 2) or a harness bug
      notes    the pickled run notes of this actor's engines so far
      actor    this actor incarnation's name (a restarted actor gets a new one)
      restarted whether Ray restarted this actor after it died
    """

    def __init__(self, setup: WorkerSetup, specs: list[str]):
        import ray

        context = ray.get_runtime_context()
        self.restarted = bool(context.was_current_actor_reconstructed)
        self.name = f"ray-{context.get_actor_id()[:8]}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        if self.restarted:  # as ProcessShards' replacement workers: what killed the actor becomes a finding
            setup = replace(setup, engine_options=setup.engine_options.with_(isolate=True))
        self.setup = setup
        self.engines = None
        self.executors: list = []
        self.error, self.expected = "", True
        pin_threads(setup.engine_options.threads)
        try:
            self.engines = start_engines(setup)
            self.executors = self.engines.executors
            self.context = TaskContext(setup, self.name, open_ledger(setup, self.executors[0]) if self.executors
                                       else None)
        except BaseException as exc:  # reported with every row: an actor that raises here is only retried
            self.error, self.expected = _error_line(exc), isinstance(exc, VerifyError)
            return
        loaded = self.engines.specs()
        if loaded != list(specs):
            self.error, self.expected = f"actors loaded different engines ({loaded} vs {list(specs)})", False

    def _one(self, index: int, shard_json: str) -> dict[str, Any]:
        row = {"index": index, "result": b"", "error": self.error, "expected": self.expected, "notes": b"",
               "actor": self.name, "restarted": self.restarted}
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

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        rows = [self._one(int(i), str(s)) for i, s in zip(batch["index"], batch["shard"])]
        columns = {name: [row[name] for row in rows] for name in rows[0]} if rows else {}
        return {"index": np.array(columns.get("index", []), dtype=np.int64),
                "result": np.array(columns.get("result", []), dtype=object),
                "error": np.array(columns.get("error", []), dtype=object),
                "expected": np.array(columns.get("expected", []), dtype=bool),
                "notes": np.array(columns.get("notes", []), dtype=object),
                "actor": np.array(columns.get("actor", []), dtype=object),
                "restarted": np.array(columns.get("restarted", []), dtype=bool)}


class RayShards:
    def __init__(self, setup: WorkerSetup, ray: RayOptions):
        if ray.cpus_per_actor <= 0:
            raise UsageError(f"--ray-cpus-per-actor must be positive, got {ray.cpus_per_actor:g}")
        self.options = ray
        self.setup = actor_setup(setup, ray)
        self.failures: list[ShardFailure] = []
        self.events: list[str] = []  # actor restarts, shards retried or failed, for the manifest
        self._ray = None
        self._owns_ray = False
        self._started: Started | None = None
        self._probe_notes: dict[str, dict[str, Any]] = {}
        self._notes: dict[str, dict[str, dict[str, Any]]] = {}  # latest notes per actor incarnation

    # --- the cluster -------------------------------------------------------------
    def _connect(self):
        ray = import_ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "logging_level": logging.ERROR}
            if self.options.address:
                kwargs["address"] = self.options.address
            else:
                kwargs["num_cpus"] = os.cpu_count() or 1
            try:
                with _quiet_native_stderr():
                    ray.init(**kwargs)
            except ConnectionError as exc:
                raise VerifyError(f"--ray-address {self.options.address}: cannot connect to Ray ({exc})") from None
            self._owns_ray = True
        self._ray = ray
        return ray

    def _cluster_cpus(self) -> tuple[float, float]:
        """(all CPUs of the cluster, the most on one node)."""
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        per_node = [float(n.get("Resources", {}).get("CPU", 0)) for n in nodes]
        return sum(per_node), max(per_node, default=0.0)

    def actors(self, shards: int) -> int:
        """How many engine actors: ``--ray-actors``, else as many as the cluster's CPUs
        hold, never more than there are shards, at least one."""
        if self.options.actors:
            count = self.options.actors
        else:
            count = int(self._cluster_cpus()[0] // self.options.cpus_per_actor)
        return max(1, min(count, shards))

    def start(self) -> Started:
        ray = self._connect()
        try:
            _, largest = self._cluster_cpus()
            if largest < self.options.cpus_per_actor:
                raise UsageError(f"--ray-cpus-per-actor {self.options.cpus_per_actor:g}: no node of the Ray "
                                 f"cluster has that many CPUs (the largest has {largest:g})")
            probe = ray.remote(num_cpus=self.options.cpus_per_actor, max_calls=1, max_retries=1)(probe_engines)
            reply = ray.get(probe.remote(self.setup))
            if reply[0] == "load-failed":
                _, text, expected = reply
                raise VerifyError(text) if expected else HarnessError(f"a Ray worker failed to start: {text}")
            _, identities, not_loaded, specs, self._probe_notes = reply
            self._started = Started(identities, not_loaded, specs)
        except BaseException:
            self.close()
            raise
        return self._started

    # --- the shards --------------------------------------------------------------
    def retries(self, actors: int) -> int:
        """How many times a shard whose actor died runs again. With in-process engines a
        sample that segfaults kills its actor; each actor dies of it once at most (it comes
        back with isolated engines), so the shard gets one more try per actor."""
        return SHARD_RETRIES + (0 if self.setup.engine_options.isolate else actors)

    def _dataset(self, tasks: list[tuple[int, Shard]], actors: int, retries: int):
        ray = self._ray
        items = [{"index": index, "shard": json.dumps(shard.to_json())} for index, shard in tasks]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ray_remote_args (max_restarts, max_task_retries) warn of deprecation
            ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
                ShardRunner, fn_constructor_kwargs={"setup": self.setup, "specs": list(self._started.specs)},
                batch_size=1, batch_format="numpy",  # one shard in flight per actor: a death retries only it
                compute=ray.data.ActorPoolStrategy(size=actors, max_tasks_in_flight_per_actor=1),
                num_cpus=self.options.cpus_per_actor, max_restarts=-1, max_task_retries=retries)
        context = ds.context
        context.enable_progress_bars = False
        context.max_errored_blocks = -1  # a shard that failed every try is a ShardFailure, not the end of the run
        return ds

    def run(self, tasks: Sequence[tuple[int, Shard]], on_result: OnResult, on_start: OnStart) -> None:
        tasks = list(tasks)
        if not tasks:
            return
        by_index = dict(tasks)
        actors = self.actors(len(tasks))
        retries = self.retries(actors)
        ds = self._dataset(tasks, actors, retries)
        for index, _ in tasks:
            on_start(index)  # every shard is handed to Ray at once
        done: set[int] = set()
        for row in ds.iter_rows():
            index = int(row["index"])
            self._remember(row)
            if row["error"]:
                if row["expected"]:
                    raise ShardError(row["error"])
                raise HarnessError(f"shard {index} failed in {row['actor']}: {row['error']}")
            if index in done:
                self.events.append(f"shard {by_index[index].id} came back twice from Ray: the second result was dropped")
                continue
            done.add(index)
            on_result(pickle.loads(row["result"]))
        for index, shard in tasks:
            if index not in done:
                self.failures.append(ShardFailure(index, shard.id, f"its Ray task failed {retries + 1} times "
                                                  "(its actor died each time; see the Ray logs)"))
                self.events.append(f"shard {shard.id} failed on Ray: not counted")

    def _remember(self, row: dict) -> None:
        actor = row["actor"]
        if actor not in self._notes and row["restarted"]:
            self.events.append(f"Ray restarted a dead actor ({actor}, engines isolated): the shards it held ran again")
        if row["notes"]:
            self._notes[actor] = pickle.loads(row["notes"])
        else:
            self._notes.setdefault(actor, {})

    def notes(self) -> dict[str, dict[str, Any]]:
        """Per engine, merged over every actor incarnation that returned a shard (the
        probe's notes when none did)."""
        collected = [notes for notes in self._notes.values() if notes]
        return merge_notes(collected) if collected else dict(self._probe_notes)

    def close(self) -> None:
        if self._owns_ray and self._ray is not None:
            try:
                self._ray.shutdown()
            except Exception:
                pass
            self._owns_ray = False
