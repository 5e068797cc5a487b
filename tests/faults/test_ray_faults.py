"""Ray faults (issue 18, items 7 and 9), on a two-node cluster started on the loopback
address only: every node with ``node_ip_address="127.0.0.1"`` and the driver with Ray's own
switch ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (never the machine's other interfaces).

  - losing a node costs the run nothing: the shards of its actor wait until Ray has
    declared the node dead, then run on the surviving node; the run completes without
    --resume, the events name the node, and Ray's own lines go to OUT/ray.log, not the
    terminal;
  - an address that nothing answers at (Ray turns 127.0.0.1 into this machine's other
    address) is one line naming the address tried, exit 2, after a bounded wait.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

ray = pytest.importorskip("ray")

from conftest import REPO  # noqa: E402
from faults.helpers import last_attempt, left_behind, tagged_env, wait_until, write_plugins  # noqa: E402
from test_pipeline import PLUGIN, results  # noqa: E402

pytestmark = pytest.mark.faults

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
LIMIT = "400"  # 25 shards
GATED = "python:fault_plugin:gated"
PLANTED = "python:pipeline_plugin:planted"
CLUSTER = '''
import json, sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={"node_ip_address": "127.0.0.1", "num_cpus": 1,
                                                        "include_dashboard": False})
second = cluster.add_node(node_ip_address="127.0.0.1", num_cpus=1)
cluster.wait_for_nodes()
print(json.dumps({"address": cluster.address, "raylet": second.all_processes["raylet"][0].process.pid}), flush=True)
sys.stdin.read()  # until the test closes it
cluster.shutdown()
'''


@pytest.fixture
def plugins(plugin_dir, tiny_tokenizer_json):
    write_plugins(plugin_dir, tiny_tokenizer_json)
    (plugin_dir / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    return plugin_dir


@pytest.fixture
def cluster(plugins, tmp_path):
    """Two nodes of one CPU each, on 127.0.0.1 only. Their workers see the plugins; the gated
    engine holds every call while the file ``info["block"]`` exists, and for good once its
    node's raylet is gone (the workers have the cluster's environment, not the driver's)."""
    block = tmp_path / "block"
    env = tagged_env(PLANT_BLOCK=str(block), PLANT_BLOCK_ALL="1", PLANT_CUT_OFF="1", **LOOPBACK)
    proc = subprocess.Popen([sys.executable, "-c", CLUSTER], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        info = json.loads(proc.stdout.readline())
        yield {**info, "block": block}
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
        left_behind(env, deadline_s=30)  # and what the cluster left, killed


def workers(out) -> set[str]:
    """The actors that returned the shards committed so far."""
    return {json.loads(p.read_text())["worker"] for p in (out / "shards").glob("[0-9]*[0-9].json")} \
        if (out / "shards").is_dir() else set()


def ray_log(out) -> str:
    return (out / "ray.log").read_text() if (out / "ray.log").is_file() else ""


def argv(tiny_spec, out, *extra):
    return ["run", "--reference", tiny_spec, "--candidate", GATED, "--candidate", PLANTED, "--corpus", "default",
            "--limit", LIMIT, "--out", str(out), "--no-progress", "--minimize-budget", "0", *extra]


def test_losing_a_node_costs_the_run_nothing_and_its_lines_stay_off_the_terminal(tmp_path, tiny_spec, cluster):
    """Before: the shard retries were used up in seconds ('actor temporarily unavailable'),
    before Ray declared the node dead: INCOMPLETE, exit 1, 'its actor died each time', and the
    raylet's log on the terminal."""
    whole = tmp_path / "whole"
    local = subprocess.run([sys.executable, "-m", "verify.cli", *argv(tiny_spec, whole, "--workers", "2")], cwd=REPO,
                           capture_output=True, text=True, timeout=600)
    assert local.returncode == 1, local.stderr
    out = tmp_path / "out"
    block = cluster["block"]
    env = tagged_env(**LOOPBACK)
    proc = subprocess.Popen([sys.executable, "-m", "verify.cli", *argv(tiny_spec, out, "--executor", "ray",
                                                                        "--ray-address", cluster["address"],
                                                                        "--timeout", "3600")],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(proc, lambda: len(workers(out)) == 2)  # both actors run shards
        block.touch()  # from now on each holds the shard it is given: the run cannot finish
        os.kill(cluster["raylet"], signal.SIGKILL)  # node 2 is lost, with the shard its actor holds
        block.unlink()  # node 1 goes on; what node 2 held never comes back from it
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        if block.exists():
            block.unlink()
    assert proc.returncode == 1, stderr  # the planted divergences, as in the local run
    assert stderr.strip() == "" and "raylet" not in stdout.lower(), (stdout, stderr)
    got, expected = results(out), results(whole)
    assert got[0]["complete"] and got[0]["shards"]["failed"] == []
    assert got[0]["counts"] == expected[0]["counts"] and got[1] == expected[1]
    events = last_attempt(out)["events"]
    assert any("lost with node 127.0.0.1 (id" in e and "declared dead" in e for e in events), events
    assert "(raylet)" in ray_log(out)  # Ray's own lines, kept


def test_an_address_nothing_answers_at_is_one_line_and_exit_2(tmp_path, tiny_spec, cluster):
    """Without the loopback switch Ray tries this machine's other address for 127.0.0.1,
    where the loopback cluster does not listen. Before: minutes of silence."""
    from ray._private.services import canonicalize_bootstrap_address

    tried = canonicalize_bootstrap_address(cluster["address"])
    if tried == cluster["address"]:
        pytest.skip("this machine has no address but the loopback one")
    env = {k: v for k, v in tagged_env().items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    proc = subprocess.run([sys.executable, "-m", "verify.cli",
                           *argv(tiny_spec, tmp_path / "out", "--executor", "ray", "--ray-address", cluster["address"])],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert tried in line and cluster["address"] in line and "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in line
    assert not (tmp_path / "out").exists()
