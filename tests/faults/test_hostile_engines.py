"""Hostile engines (issue 24, attacks 1-6 and what was seen beside them): an engine that hangs
while it loads, a constructor Ctrl-C must reach (also started with SIGINT ignored, also inside
a C call), children that leave the run's process groups, an HTTP server that drips its answer
or sends too much, a ``subprocess:`` engine that answers twice or writes an endless line, a
plugin that nests its ids. Each ends in a finding or one line (exit 2, 130 or 143), within
1 GB, with no process of the run left."""

from __future__ import annotations

import random
import re
import signal
import socketserver
import threading

import pytest

from faults.hostile import (PEAK_LIMIT, interrupted, left_behind, manifest, measured, pids_gone, quiet_exit, records,
                            server_spec, tagged_env, write_engines)
from verify.interrupts import HARD_STOP_S, INTERRUPTED_LINE, TERMINATED_LINE
from verify.limits import MAX_ANSWER_LINE_BYTES, MAX_HTTP_BODY_BYTES

pytestmark = pytest.mark.faults


@pytest.fixture
def engines(plugin_dir, tiny_tokenizer_json):
    write_engines(plugin_dir, tiny_tokenizer_json)
    return plugin_dir


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(f'{{"text": "hostile text number {i}, with words"}}\n' for i in range(6)))
    return path


def run_argv(tiny_spec, out, corpus, *options):
    return ["run", "--reference", tiny_spec, "--corpus", str(corpus), "--out", str(out), "--no-progress",
            "--minimize-budget", "0", *options]


# --- 1: every wait while loading has a deadline ---------------------------------------------

@pytest.mark.parametrize("isolation", [[], ["--in-process"]])
def test_an_engine_whose_probe_calls_hang_is_an_engine_start_finding_within_the_timeout(
        tmp_path, engines, tiny_spec, corpus, isolation):
    """Before: stuck at "loading engines" past 120 s with --timeout 20 (the fingerprint probes had
    no deadline)."""
    timeout = random.choice([2, 3, 4])
    env = tagged_env()
    ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate", "python:hostile_engines:hangs",
                            "--timeout", str(timeout), *isolation), env, tmp_path)
    quiet_exit(ran, 1)
    found = records(tmp_path / "out")
    assert found and all(r["kind"] == "crash" and r["error"]["type"] == "EngineDidNotStart" for r in found)
    assert f"did not answer within {timeout} s (--timeout)" in found[0]["error"]["message"]
    assert manifest(tmp_path / "out")["complete"]
    assert left_behind(env) == []


@pytest.mark.parametrize("isolation", [[], ["--in-process"]])
def test_a_factory_that_never_returns_is_an_engine_start_finding_within_the_load_timeout(
        tmp_path, engines, tiny_spec, corpus, isolation):
    load = random.choice([1, 2, 3])
    env = tagged_env()
    ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate",
                            "python:hostile_engines:sleeps_loading", "--load-timeout", str(load), *isolation),
                   env, tmp_path)
    quiet_exit(ran, 1)
    found = records(tmp_path / "out")
    assert found and {r["error"]["type"] for r in found} == {"EngineDidNotStart"}
    assert f"did not load within {load} s (--load-timeout)" in found[0]["error"]["message"]
    assert left_behind(env) == []


# --- 2: Ctrl-C reaches the command wherever it is -------------------------------------------

@pytest.mark.parametrize("where, signal_, line", [
    ("sleeps_loading", signal.SIGINT, INTERRUPTED_LINE),  # a constructor in Python, SIGINT inherited ignored
    ("sleeps_loading", signal.SIGTERM, TERMINATED_LINE),
    ("spins_in_c", signal.SIGINT, INTERRUPTED_LINE),  # inside one C call: the hard stop
])
def test_ctrl_c_and_sigterm_end_a_command_inside_a_plugin_constructor(tmp_path, engines, tiny_spec, corpus, where,
                                                                      signal_, line):
    """Before: SIGINT ignored for 20 s (started as `nohup ... &` starts it), only SIGTERM ended it
    (143, no message). The constructor runs in the command's own process (--in-process --workers 1)."""
    entered = tmp_path / "entered"
    env = tagged_env(HOSTILE_ENTERED=str(entered))
    rc, stderr = interrupted(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate",
                                      f"python:hostile_engines:{where}", "--in-process", "--workers", "1"),
                             env, entered, signal_)
    assert rc == (143 if signal_ == signal.SIGTERM else 130), stderr
    (got,) = stderr.strip().splitlines()
    assert got.startswith(line), got
    if where == "spins_in_c":
        assert f"did not end within {HARD_STOP_S:g} s" in got
    assert left_behind(env) == []


def test_ctrl_c_of_an_isolated_engine_that_hangs_while_loading(tmp_path, engines, tiny_spec, corpus):
    entered = tmp_path / "entered"
    env = tagged_env(HOSTILE_ENTERED=str(entered))
    rc, stderr = interrupted(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate",
                                      "python:hostile_engines:spins_in_c", "--workers", "2"), env, entered,
                             signal.SIGINT)
    assert rc == 130 and stderr.strip() == INTERRUPTED_LINE, stderr
    assert left_behind(env) == []


# --- 3-5: children that leave the process group ---------------------------------------------

@pytest.mark.parametrize("candidate, options", [
    ("python:hostile_engines:new_session_child", []),  # 3: start_new_session=True
    ("python:hostile_engines:new_session_child", ["--in-process", "--workers", "2"]),
    ("SERVER:setsid", []),  # 4: a subprocess: engine whose helper runs under setsid(1)
    ("python:hostile_engines:forks_and_setsids", []),  # 5: fork + setsid + resource tracker + double fork
    ("python:hostile_engines:forks_and_setsids", ["--in-process"]),
])
def test_children_that_leave_the_process_group_end_with_the_run(tmp_path, engines, tiny_spec, corpus, candidate,
                                                                options):
    """Before: these children (and multiprocessing's resource tracker) outlived the run: killing
    the engine's process group missed them."""
    pids = tmp_path / "pids"
    env = tagged_env(HOSTILE_PIDS=str(pids))
    if candidate.startswith("SERVER:"):
        candidate = server_spec(engines, candidate.split(":")[1])
    ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate", candidate, *options), env, tmp_path)
    quiet_exit(ran, 0)
    assert pids.is_file() and pids.read_text().split(), "the engine started no child"
    assert pids_gone(pids) == []
    assert left_behind(env) == []


def test_children_that_left_the_group_end_when_the_run_is_interrupted(tmp_path, engines, tiny_spec, corpus):
    pids, entered = tmp_path / "pids", tmp_path / "entered"
    env = tagged_env(HOSTILE_PIDS=str(pids), HOSTILE_ENTERED=str(entered))
    # the escapes start, then the run hangs in the other candidate's probes until interrupted
    rc, stderr = interrupted(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate",
                                      "python:hostile_engines:forks_and_setsids", "--candidate",
                                      "python:hostile_engines:hangs", "--timeout", "600"), env, entered, signal.SIGTERM)
    assert rc == 143 and stderr.strip() == TERMINATED_LINE, stderr
    assert pids_gone(pids) == []
    assert left_behind(env) == []


# --- 6 and the HTTP body: one deadline per request, a size limit per answer -----------------

class _Drip(socketserver.BaseRequestHandler):
    """Reads the request, then answers one byte at a time, ``every`` seconds apart, for ever."""

    def handle(self):
        self.request.recv(65536)
        answer = b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"tokens": [' + b"1, " * 10**6
        try:
            for byte in answer:
                self.request.sendall(bytes([byte]))
                if self.server.stop.wait(self.server.every):
                    return
        except OSError:
            return


class _Flood(socketserver.BaseRequestHandler):
    """Answers a body of ``size`` bytes, without a length (read until the connection closes), or
    announces it (``declare``)."""

    def handle(self):
        self.request.recv(65536)
        head = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
        if self.server.declare:
            head += f"Content-Length: {self.server.size}\r\n".encode()
        chunk = b"1, " * (1 << 18)
        try:
            self.request.sendall(head + b'\r\n{"tokens": [')
            sent = 0
            while sent < self.server.size and not self.server.stop.is_set():
                self.request.sendall(chunk)
                sent += len(chunk)
        except OSError:
            return


def _serve(handler, **fields):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.stop = threading.Event()
    for name, value in fields.items():
        setattr(server, name, value)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _run_against(server, tmp_path, tiny_spec, corpus, query, *options):
    """A run with ``server`` as an ``http:`` candidate (``?query``); the server stops after it."""
    try:
        env = tagged_env()
        ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate",
                                f"http://127.0.0.1:{server.server_address[1]}?{query}", *options), env, tmp_path)
    finally:
        server.stop.set()
        server.shutdown()
    return ran, env


def test_an_http_server_that_drips_its_answer_is_a_timeout_of_the_whole_request(tmp_path, tiny_spec, corpus):
    """Before: `?timeout=5 --timeout 10` on a server sending one byte every 2 s was still loading
    after 150 s (the timeout applied to each socket read)."""
    ran, env = _run_against(_serve(_Drip, every=0.2), tmp_path, tiny_spec, corpus, "timeout=1", "--timeout", "10")
    quiet_exit(ran, 1)
    found = records(tmp_path / "out")
    assert found and all(r["kind"] == "error" for r in found)
    assert all("timed out: no complete answer within 1 s" in r["error"]["message"] for r in found)
    assert left_behind(env) == []


@pytest.mark.parametrize("declare", [False, True])
def test_an_http_answer_over_the_limit_is_an_error_never_held_whole(tmp_path, tiny_spec, corpus, declare):
    """Before: a 1 GB body was read whole (2.3 GB peak)."""
    size = MAX_HTTP_BODY_BYTES + random.randrange(1 << 20, 64 << 20)
    # the limit is what is measured, not time: a request deadline a loaded machine cannot trip (reading
    # 256 MiB took over 60 s once with four test workers on two cores, and the finding was a timeout)
    ran, env = _run_against(_serve(_Flood, size=size, declare=declare), tmp_path, tiny_spec, corpus, "timeout=300",
                            "--in-process")
    quiet_exit(ran, 1)
    found = records(tmp_path / "out")
    assert found and all(r["kind"] == "error" and "answered too much" in r["error"]["message"] for r in found)
    assert ran.peak_bytes < PEAK_LIMIT, ran.peak_bytes
    assert left_behind(env) == []


# --- strict engine output --------------------------------------------------------------------

def test_a_plugin_that_nests_its_ids_is_an_error_never_flattened(tmp_path, engines, tiny_spec, corpus):
    """Before: [[ids]] was flattened and counted verified."""
    env = tagged_env()
    ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate", "python:hostile_engines:nested",
                            "--in-process"), env, tmp_path)
    quiet_exit(ran, 1)
    counts = manifest(tmp_path / "out")["counts"]
    assert counts["samples"] == 6 and counts["verified"] == 0 and counts["error"] == 6
    assert all("nested sequence" in r["error"]["message"] for r in records(tmp_path / "out"))


def test_a_subprocess_engine_that_answers_twice_is_a_protocol_error_never_a_shift(tmp_path, engines, tiny_spec,
                                                                                  corpus):
    """Before: a second answer whose id was forged as the next request's put the harness out of step
    (10 false divergences)."""
    env = tagged_env()
    ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate", server_spec(engines, "twice"),
                            "--in-process"), env, tmp_path)
    assert ran.rc == 1, ran.stderr
    found = records(tmp_path / "out")
    assert found and not [r for r in found if r["kind"] == "ids"], "a forged answer was taken as ids"
    # Which of the two protocol errors is seen depends on whether the second answer arrived before
    # the next request was sent (nothing outstanding) or after it (the wrong id): both refuse it.
    assert any("no request was outstanding" in r["error"]["message"]
               or re.search(r"answered request \d+ when request \d+ was outstanding", r["error"]["message"])
               for r in found)
    assert left_behind(env) == []


def test_a_subprocess_answer_line_over_the_limit_is_an_error_never_held_whole(tmp_path, engines, tiny_spec,
                                                                              corpus):
    huge = MAX_ANSWER_LINE_BYTES + random.randrange(1 << 20, 32 << 20)
    env = tagged_env(HUGE=str(huge))
    ran = measured(run_argv(tiny_spec, tmp_path / "out", corpus, "--candidate",
                            server_spec(engines, "huge", "restart=false"), "--in-process", "--limit", "1"),
                   env, tmp_path)
    assert ran.rc == 1, ran.stderr
    found = records(tmp_path / "out")
    assert found and "over the limit" in found[0]["error"]["message"]
    assert ran.peak_bytes < PEAK_LIMIT, ran.peak_bytes
    assert left_behind(env) == []
