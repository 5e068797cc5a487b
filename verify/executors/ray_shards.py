"""Shard runner on a Ray cluster (``verify run --executor ray``).

  RayShards  engine actors (``ShardActor``), as many as the live nodes have room for
             (``--ray-actors`` at most), each pinned to its node, starting every engine of
             the run once (isolated in their own processes, so an engine segfault is a
             ``crash`` finding, not a dead actor) and running one shard per call. Each
             result (the pickled ``ShardResult``) goes to ``on_result``, which commits it as
             with the local executor: ``--resume`` (either executor) and ``verify triage``
             work unchanged. A shard is committed from a completed result, by its plan
             index, at most once.

Faults are the driver's to handle (Ray neither restarts these actors nor retries their
calls), knowing each actor's node:

  - an actor that died on a live node (killed, out of memory, an in-process engine's
    segfault) is replaced there by one with isolated engines, and its shard runs again;
    a shard whose actor died ``retries(actors) + 1`` times is failed;
  - an actor Ray calls *unavailable* is not given up: its node may be dying, and Ray takes
    a while to declare a node dead. Its shard waits, backing off, until the actor answers
    or Ray declares the actor or its node dead;
  - an actor lost with its node costs its shard no try: the shard goes to the surviving
    nodes, and a replacement starts where a live node has room. The run completes while
    one node lives; the events and any failure name the node. (An actor whose raylet was
    killed may answer until Ray declares its node dead: what it returns is a result.)
  - a slot whose actors die ``SLOT_DEATHS`` times in a row is given up; with no actor
    left, the shards still waiting fail.

Start-up: one short-lived Ray task starts the engines, reports identities and what did not
load (load failures raise the same ``VerifyError`` as locally). Without an address a local
Ray runs on this machine's cores; ``--ray-address`` is tried first, for a bounded time, at
the address Ray will really use (it turns 127.0.0.1 into this machine's other address), and
every node needs ``verify``, the engines and the corpus files at the same paths. Ray's own
messages go to ``OUT/ray.log`` (``RayOptions.log_file``), never to the terminal.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from verify.corpora.shards import Shard
from verify.errors import UsageError, VerifyError
from verify.executors.notes import merge_notes
from verify.executors.ray_actor import ShardActor, actor_setup, probe_engines
from verify.executors.ray_cluster import RAY_MISSING, RayLog, check_reachable, import_ray, native_stderr_to
from verify.executors.setup import (HarnessError, OnResult, OnStart, RayOptions, RunnerCannotStart, ShardError,
                                    ShardFailure, Started, WorkerSetup)

__all__ = ["RAY_MISSING", "RayShards", "ShardActor", "import_ray", "probe_engines"]

SHARD_RETRIES = 2  # a shard whose actor died runs again this many times (more in-process), then it is failed
SLOT_DEATHS = 3  # an actor slot whose actors die this many times in a row (no shard done between) is given up
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)  # between calls to an unavailable actor (the last one repeats)
UNAVAILABLE_LIMIT_S = 300.0  # unavailable this long while its node is still alive: taken for dead
NODES_EVERY_S = 1.0  # how stale the driver's view of which nodes are alive may be


@dataclass
class _Actor:
    handle: Any
    slot: int
    node: str  # the node it was placed on
    isolated: bool  # a replacement: its engines are isolated
    ref: Any  # the call in flight: ready() while it starts, then run() of its shard
    ready: bool = False
    name: str = ""
    task: tuple[int, Shard] | None = None
    unavailable_since: float | None = None  # Ray called it unavailable: its call waits (backing off)
    retry_at: float = 0.0
    backoff: int = 0


class RayShards:
    def __init__(self, setup: WorkerSetup, ray: RayOptions):
        if ray.cpus_per_actor <= 0:
            raise UsageError(f"--ray-cpus-per-actor must be positive, got {ray.cpus_per_actor:g}")
        self.options = ray
        self.setup = actor_setup(setup, ray)
        self.failures: list[ShardFailure] = []
        self.events: list[str] = []  # actors replaced, nodes lost, shards retried or failed, for the manifest
        self.log = RayLog(ray.log_file)
        self._ray = None
        self._owns_ray = False
        self._started: Started | None = None
        self._probe_notes: dict[str, dict[str, Any]] = {}
        self._notes: dict[str, dict[str, dict[str, Any]]] = {}  # latest notes per actor
        self._actors: list[_Actor] = []
        self._nodes: tuple[float, dict[str, dict]] = (0.0, {})  # (when, node id -> ray.nodes() entry)

    # --- the cluster -------------------------------------------------------------
    def _connect(self):
        ray = import_ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "logging_level": logging.ERROR}
            if self.options.address:
                check_reachable(self.options.address)
                kwargs["address"] = self.options.address
            else:  # a Ray of its own, never one already running on this machine (ray.init's default)
                kwargs["address"] = "local"
                kwargs["num_cpus"] = os.cpu_count() or 1
            try:
                with native_stderr_to(self.log):
                    ray.init(**kwargs)
            except ConnectionError as exc:
                raise VerifyError(f"--ray-address {self.options.address}: cannot connect to Ray ({exc})") from None
            self._owns_ray = True
        self.log.install(ray)
        self._ray = ray
        return ray

    def nodes(self, fresh: bool = False) -> dict[str, dict]:
        """The cluster's nodes by id, as Ray last said (at most ``NODES_EVERY_S`` old)."""
        when, nodes = self._nodes
        if fresh or time.monotonic() - when >= NODES_EVERY_S:
            nodes = {n["NodeID"]: n for n in self._ray.nodes()}
            self._nodes = (time.monotonic(), nodes)
        return nodes

    def _alive(self, node: str, fresh: bool = False) -> bool:
        return bool(self.nodes(fresh).get(node, {}).get("Alive"))

    def node_label(self, node: str) -> str:
        entry = self.nodes().get(node, {})
        return f"node {entry.get('NodeManagerAddress', '?')} (id {node[:8]})"

    def _room(self) -> dict[str, int]:
        """Actors each live node still has room for."""
        room = {node: int(float(n.get("Resources", {}).get("CPU", 0)) // self.options.cpus_per_actor)
                for node, n in self.nodes(fresh=True).items() if n.get("Alive")}
        for actor in self._actors:
            room[actor.node] = room.get(actor.node, 0) - 1
        return {node: free for node, free in room.items() if free > 0}

    def actors(self, shards: int) -> int:
        """How many engine actors: ``--ray-actors``, else as many as the live nodes hold,
        never more than there are shards, at least one."""
        capacity = sum(self._room().values()) + len(self._actors)
        return max(1, min(self.options.actors or capacity, capacity or 1, shards))

    def start(self) -> Started:
        ray = self._connect()
        try:
            largest = max((float(n.get("Resources", {}).get("CPU", 0)) for n in self.nodes(fresh=True).values()
                           if n.get("Alive")), default=0.0)
            if largest < self.options.cpus_per_actor:
                raise UsageError(f"--ray-cpus-per-actor {self.options.cpus_per_actor:g}: no node of the Ray "
                                 f"cluster has that many CPUs (the largest has {largest:g})")
            probe = ray.remote(num_cpus=self.options.cpus_per_actor, max_calls=1, max_retries=1)(probe_engines)
            for attempt in range(1, SLOT_DEATHS + 1):
                try:
                    reply = ray.get(probe.remote(self.setup))
                    break
                except ray.exceptions.RayError as exc:  # its worker died (killed, out of memory)
                    if attempt == SLOT_DEATHS:
                        raise RunnerCannotStart(f"the Ray task starting the engines died {attempt} times "
                                                f"({type(exc).__name__})") from None
                    self.events.append(f"the Ray task starting the engines died ({type(exc).__name__}): started again")
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

    def run(self, tasks: Sequence[tuple[int, Shard]], on_result: OnResult, on_start: OnStart) -> None:
        tasks = list(tasks)
        if not tasks:
            return
        by_index = dict(tasks)
        self._gave_up: dict[int, str] = {}  # shards the scheduler gave up -> why
        done: set[int] = set()
        for row in self._rows(tasks, on_start):
            index = int(row["index"])
            self._notes[row["actor"]] = pickle.loads(row["notes"]) if row["notes"] else {}
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
                self.failures.append(ShardFailure(index, shard.id, self._gave_up.get(index, "it never came back")))
                self.events.append(f"shard {shard.id} failed on Ray: not counted")

    def _rows(self, tasks: list[tuple[int, Shard]], on_start: OnStart) -> Iterator[dict]:
        """The rows of the shards' results, as actors return them; the shards given up are in
        ``_gave_up`` when it ends."""
        ray = self._ray
        count = self.actors(len(tasks))
        self._retries = self.retries(count)
        queue: deque = deque(tasks)
        again: deque = deque()  # shards whose actor died on a live node: for replacements (isolated) first
        deaths: dict[int, int] = {}
        self._slot_deaths: dict[int, int] = {}
        self._lost_slots: list[str] = []
        for slot in range(count):
            node = self._place()
            if node is not None:
                self._spawn(slot, node, isolated=False)
        while queue or again or any(a.task for a in self._actors):
            if not self._actors:
                why = self._lost_slots[-1] if self._lost_slots else "no live node of the Ray cluster has room for one"
                for index, _ in [*again, *queue]:
                    self._gave_up[index] = f"no engine actor was left to run it ({why})"
                return
            self._hand_out(queue, again, on_start)
            calls = {a.ref: a for a in self._actors if a.ref is not None}
            ready = []
            if calls:
                ready, rest = ray.wait(list(calls), num_returns=1, timeout=0.5)
                if ready and rest:
                    ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            else:
                time.sleep(0.1)  # every call waits for its actor to come back (backing off)
            for ref in ready:
                actor = calls[ref]
                actor.ref = None
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    self._failed_call(actor, exc, queue, again, deaths)
                    continue
                actor.unavailable_since, actor.backoff = None, 0
                if not actor.ready:
                    actor.ready, actor.name = True, value
                    continue
                actor.task = None
                self._slot_deaths.pop(actor.slot, None)
                yield value
            self._revisit(queue, again, deaths)

    def _place(self) -> str | None:
        """The live node with the most room for one more actor (None: no room anywhere)."""
        room = self._room()
        return max(room, key=room.__getitem__) if room else None

    def _spawn(self, slot: int, node: str, isolated: bool) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = self._ray.remote(max_restarts=0, max_task_retries=0)(ShardActor)
        handle = remote.options(num_cpus=self.options.cpus_per_actor,
                                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
            self.setup, list(self._started.specs), isolated)
        self._actors.append(_Actor(handle, slot, node, isolated, handle.ready.remote()))

    def _send(self, actor: _Actor) -> None:
        index, shard = actor.task
        actor.ref = actor.handle.run.remote(index, json.dumps(shard.to_json()))

    def _hand_out(self, queue: deque, again: deque, on_start: OnStart) -> None:
        isolated = any(a.isolated for a in self._actors)  # else a retried shard goes to any actor
        for actor in self._actors:
            if actor.ready and actor.task is None and actor.ref is None:
                source = again if again and (actor.isolated or not isolated) else queue
                if source:
                    actor.task = source.popleft()
                    on_start(actor.task[0])
                    self._send(actor)

    def _failed_call(self, actor: _Actor, exc: Exception, queue: deque, again: deque, deaths: dict) -> None:
        if isinstance(exc, self._ray.exceptions.ActorUnavailableError) and self._alive(actor.node, fresh=True):
            now = time.monotonic()
            if actor.unavailable_since is None:
                actor.unavailable_since = now
                self.events.append(f"{actor.name or 'an actor'} on {self.node_label(actor.node)} is unavailable: "
                                   "its shard waits for it, or for Ray to declare it or its node dead")
            actor.retry_at = now + BACKOFF_S[min(actor.backoff, len(BACKOFF_S) - 1)]
            actor.backoff += 1
            return
        self._lost(actor, type(exc).__name__, queue, again, deaths)

    def _revisit(self, queue: deque, again: deque, deaths: dict) -> None:
        """Calls waiting for an unavailable actor: sent again when their time comes, unless Ray
        has declared the node dead meanwhile, or the actor has been unavailable too long."""
        now = time.monotonic()
        for actor in [a for a in self._actors if a.unavailable_since is not None and a.ref is None]:
            if now < actor.retry_at:
                continue
            if not self._alive(actor.node, fresh=True):
                self._lost(actor, "its node died", queue, again, deaths)
            elif now - actor.unavailable_since > UNAVAILABLE_LIMIT_S:
                self._lost(actor, f"unavailable for {now - actor.unavailable_since:.0f} s", queue, again, deaths)
            elif actor.ready:
                self._send(actor)
            else:
                actor.ref = actor.handle.ready.remote()

    def _lost(self, actor: _Actor, cause: str, queue: deque, again: deque, deaths: dict) -> None:
        """An actor is gone. Lost with its node: its shard runs on a surviving node, at no
        cost, and a replacement starts where a live node has room. Dead on a live node: a
        replacement with isolated engines on that node, and its shard counts one death."""
        self._actors.remove(actor)
        with contextlib.suppress(Exception):
            self._ray.kill(actor.handle, no_restart=True)
        name, where, task = actor.name or f"an actor (slot {actor.slot})", self.node_label(actor.node), actor.task
        if not self._alive(actor.node, fresh=True):
            if task is not None:
                queue.appendleft(task)
            node = self._place()
            if node is not None:
                self._spawn(actor.slot, node, actor.isolated)
            self.events.append(f"{name} was lost with {where}, which Ray declared dead"
                               + (f": shard {task[1].id} runs again on a surviving node" if task else "")
                               + (f"; a replacement starts on {self.node_label(node)}" if node
                                  else "; no live node has room for a replacement"))
            return
        slot_deaths = self._slot_deaths[actor.slot] = self._slot_deaths.get(actor.slot, 0) + 1
        if slot_deaths < SLOT_DEATHS:
            self._spawn(actor.slot, actor.node, isolated=True)
            replaced = "restarted a dead actor with isolated engines"
        else:
            self._lost_slots.append(f"{name} died on {where} ({cause}), its slot's {slot_deaths}th death in a row")
            replaced = "its slot is given up"
        if task is None:
            self.events.append(f"{name} died while starting its engines on {where} ({cause}): {replaced}")
            return
        index, shard = task
        deaths[index] = deaths.get(index, 0) + 1
        if deaths[index] > self._retries:
            self._gave_up[index] = f"its actor died {deaths[index]} times (the last on {where}: {cause})"
            self.events.append(f"{name} died on {where} ({cause}) running shard {shard.id}: {replaced}; "
                               "the shard is failed")
        else:
            again.append(task)
            self.events.append(f"{name} died on {where} ({cause}) running shard {shard.id}: {replaced}; "
                               "the shard runs again")

    def notes(self) -> dict[str, dict[str, Any]]:
        """Per engine, merged over every actor that returned a shard (the probe's notes when
        none did)."""
        collected = [notes for notes in self._notes.values() if notes]
        return merge_notes(collected) if collected else dict(self._probe_notes)

    def close(self) -> None:
        if self._ray is not None:
            for actor in self._actors:
                with contextlib.suppress(Exception):
                    self._ray.kill(actor.handle, no_restart=True)
            self._actors.clear()
        if self._owns_ray and self._ray is not None:
            with contextlib.suppress(Exception):
                self._ray.shutdown()
            self._owns_ray = False
        self.log.close()
