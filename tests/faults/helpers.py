"""What the fault tests share: planted engines that kill, die, hang or wait, a `subprocess:`
engine that starts a child of its own, and the processes a run leaves behind.

Every run of a fault test carries a tag in its environment (``VERIFY_FAULT_TAG``); every
process it starts inherits it, so "nothing outlived the run" is: no live process carries
the tag. Tests wait for states (files, markers, processes gone), never for time."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil

from conftest import REPO

TAG = "VERIFY_FAULT_TAG"
GATE = "Leeboondstail"  # a word of one document of the default corpus (shard generated:0[304:320])
GATED_SHARD = 19  # that shard's plan index

FAULTS = '''
import os, signal, time
from tokenizers import Tokenizer

def cut_off():
    """With $PLANT_CUT_OFF: the Ray actor holding this engine has lost its raylet (a lost node
    answers nothing again, whatever its orphaned processes could still do)."""
    if not os.environ.get("PLANT_CUT_OFF"):
        return False
    import psutil
    try:
        return "raylet" not in " ".join(psutil.Process(psutil.Process(os.getppid()).ppid()).cmdline())
    except psutil.Error:
        return True

class Engine:
    """The tiny tokenizer. While the file $PLANT_BLOCK names exists, a text holding GATE waits
    (every text, with $PLANT_BLOCK_ALL); so does everything once its node is cut off."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True
    def encode_batch(self, texts):
        block, every = os.environ.get("PLANT_BLOCK"), os.environ.get("PLANT_BLOCK_ALL")
        while (block and os.path.exists(block) and (every or any("GATE" in text for text in texts))) or cut_off():
            time.sleep(0.05)
        return [list(e.ids) for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

def gated():
    return Engine()

def kills_its_worker():
    """Kills the process that started it (the shard worker, its engines being isolated) while
    loading: $KILL_WORKER=always, or once (the first to create the file $KILL_WORKER_ONCE)."""
    how = os.environ.get("KILL_WORKER")
    if how == "once":
        try:
            os.close(os.open(os.environ["KILL_WORKER_ONCE"], os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            how = None
    if how:
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(3600)  # until the lifeline ends it
    return Engine()

def dies_loading():
    """An engine whose process is killed while it loads, every time (the OOM killer, say)."""
    os.kill(os.getpid(), signal.SIGKILL)
'''

HANG_SERVER = '''
import json, subprocess, sys, time
from tokenizers import Tokenizer
# the tiny tokenizer, so that only the hung input is a finding (every other would be replayed
# on a fresh server of its own)
tok = Tokenizer.from_file(PATH)
tok.encode_special_tokens = True
# a child of its own, as real engine servers have (a helper, a pool): it must not outlive the run
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
send({"protocol": "verify-tokenize/1", "name": "hang", "version": "0",
      "capabilities": {"special_tokens": False, "segments": False, "decode": False}})
for line in sys.stdin:
    request = json.loads(line)
    texts = request.get("texts", [])
    if any("GATE" in text for text in texts):
        time.sleep(3600)  # hung: the harness gives up on it
    send({"id": request["id"], "ids": [list(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]})
'''


def write_plugins(plugin_dir: Path, tiny_tokenizer_json: Path) -> None:
    (plugin_dir / "fault_plugin.py").write_text(
        FAULTS.replace("PATH", repr(str(tiny_tokenizer_json))).replace("GATE", GATE))
    (plugin_dir / "hang_server.py").write_text(
        HANG_SERVER.replace("PATH", repr(str(tiny_tokenizer_json))).replace("GATE", GATE))


def hang_spec(plugin_dir: Path, options: str = "") -> str:
    script = shlex.quote(str(plugin_dir / "hang_server.py"))
    return f"subprocess:{shlex.quote(sys.executable)} {script}" + (f"?{options}" if options else "")


def tagged_env(**extra: str) -> dict[str, str]:
    return {**os.environ, TAG: uuid.uuid4().hex, **extra}


def boxed_env(box: Path, **extra: str) -> dict[str, str]:
    """A tagged environment whose home, temporary folder and caches lie in ``box`` (run it with
    ``cwd=box / "cwd"``): whatever a run writes outside its --out lands in ``box``."""
    for name in ("home", "tmp", "cwd"):
        (box / name).mkdir(parents=True, exist_ok=True)
    return tagged_env(HOME=str(box / "home"), TMPDIR=str(box / "tmp"), XDG_CACHE_HOME=str(box / "home" / ".cache"),
                      **extra)


def written_in(box: Path) -> list[str]:
    """The files in ``box`` (folders are not listed): empty when a run wrote nothing outside its --out."""
    return sorted(str(path.relative_to(box)) for path in box.rglob("*") if not path.is_dir())


def start(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "verify.cli", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def run(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def alive(tag: str) -> list[psutil.Process]:
    """Live processes (zombies are not) whose environment carries ``tag``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(TAG) == tag:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def left_behind(env: dict[str, str], deadline_s: float = 30.0) -> list[str]:
    """What the run tagged in ``env`` still has running once ``deadline_s`` has passed
    (returns as soon as nothing is left)."""
    deadline = time.monotonic() + deadline_s
    while True:
        procs = alive(env[TAG])
        if not procs or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    described = []
    for proc in procs:
        try:
            described.append(f"{proc.pid} (parent {proc.ppid()}): {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            continue
    for proc in procs:  # leave the machine clean for the next test
        try:
            proc.kill()
        except psutil.Error:
            pass
    return described


def committed(out: Path) -> int:
    return len(list((out / "shards").glob("[0-9]*[0-9].json"))) if (out / "shards").is_dir() else 0


def started(out: Path) -> set[int]:
    log = out / "shards" / "started.log"
    return {int(line) for line in log.read_text().split()} if log.is_file() else set()


def wait_until(proc: subprocess.Popen, ready, deadline_s: float = 300.0) -> None:
    """Until ``ready()`` holds, while ``proc`` runs (it must still run then)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and proc.poll() is None and not ready():
        time.sleep(0.05)
    assert proc.poll() is None, proc.stderr.read()
    assert ready(), "the state waited for never came"


def shard_workers(proc: subprocess.Popen) -> list[psutil.Process]:
    """The driver's shard worker processes (multiprocessing children named worker-N)."""
    found = []
    for child in psutil.Process(proc.pid).children():
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def findings(out: Path) -> list[dict]:
    path = out / "divergences.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.is_file() else []


def last_attempt(out: Path) -> dict:
    from verify.rundir.attempts import read_attempts

    return read_attempts(out)[-1]


SIGNALS = {"SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}
