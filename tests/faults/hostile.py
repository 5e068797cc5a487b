"""What the hostile-input tests share (issue 24): planted engines that hang, escape or answer
wrongly, a runner that measures a command's peak memory and CPU time, and the checks every
attack ends with -- one line on stderr (or none), no traceback, nothing left running.

Each attack is a real process, file or server. Nothing here waits for time: a test waits
for a state (a file a plugin writes when it is inside its constructor, a process gone)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO
from faults.helpers import left_behind, tagged_env

GIB = 1 << 30
PEAK_LIMIT = GIB  # the acceptance: every attack within 1 GB of memory

ENGINES = '''
import hashlib, json, os, subprocess, sys, time
from tokenizers import Tokenizer

TOKENIZER = PATH


def _tok():
    tok = Tokenizer.from_file(TOKENIZER)
    tok.encode_special_tokens = True
    return tok


def _entered():
    """Tell the test this process is where it was sent (a state it waits for)."""
    marker = os.environ.get("HOSTILE_ENTERED")
    if marker:
        with open(marker, "a") as fh:
            fh.write(f"{os.getpid()}\\n")


def _record(pid):
    with open(os.environ["HOSTILE_PIDS"], "a") as fh:
        fh.write(f"{pid}\\n")


class Tiny:
    def __init__(self):
        self.tok = _tok()

    def encode_batch(self, texts):
        return [list(e.ids) for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]


class Hangs(Tiny):
    """Loads, then never answers a call (the fingerprint probes included)."""

    def encode_batch(self, texts):
        _entered()
        while True:
            time.sleep(3600)


def hangs():
    return Hangs()


def sleeps_loading():
    """A factory that never returns, in Python (a signal reaches it)."""
    _entered()
    while True:
        time.sleep(3600)


def spins_in_c():
    """A factory inside one C call that releases the GIL and never looks at signals."""
    _entered()
    hashlib.pbkdf2_hmac("sha256", b"x", b"y", 2**31 - 1)  # minutes in C
    return Tiny()


class Nested(Tiny):
    """Answers [[ids]] for each text: a nested list, never to be flattened into ids."""

    def encode_batch(self, texts):
        return [[ids] for ids in super().encode_batch(texts)]


def nested():
    return Nested()


SLEEPER = [sys.executable, "-c", "import time; time.sleep(3600)"]


def new_session_child():
    """Starts a child in a session of its own (start_new_session=True): out of every process group."""
    _record(subprocess.Popen(SLEEPER, start_new_session=True).pid)
    return Tiny()


def forks_and_setsids():
    """Forks a worker that leaves the session (setsid) and starts multiprocessing's resource
    tracker, and a grandchild orphaned by a double fork."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        from multiprocessing.resource_tracker import ResourceTracker

        tracker = ResourceTracker()  # this worker's own (the one it inherited belongs to its parent)
        tracker.ensure_running()
        _record(os.getpid())
        _record(tracker._pid)
        if os.fork() == 0:  # the double fork: the grandchild's parent exits at once
            _record(os.getpid())
            time.sleep(3600)
            os._exit(0)
        time.sleep(3600)
        os._exit(0)
    return Tiny()
'''

SERVER = '''
import json, os, subprocess, sys, time
from tokenizers import Tokenizer

tok = Tokenizer.from_file(PATH)
tok.encode_special_tokens = True
MODE = sys.argv[1]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()


def record(pid):
    with open(os.environ["HOSTILE_PIDS"], "a") as fh:
        fh.write(f"{pid}\\n")


if MODE == "setsid":  # a helper in a session of its own, started through setsid(1)
    record(subprocess.Popen(["setsid", sys.executable, "-c", "import time; time.sleep(3600)"]).pid)
send({"protocol": "verify-tokenize/1", "name": "hostile", "version": "0",
      "capabilities": {"special_tokens": False, "segments": False, "decode": False}})
for line in sys.stdin:
    request = json.loads(line)
    ids = [list(e.ids) for e in tok.encode_batch(request.get("texts", []), add_special_tokens=False)]
    if MODE == "huge":  # one answer line of HUGE bytes
        sys.stdout.write('{"id": %d, "ids": [[' % request["id"] + "1," * (int(os.environ["HUGE"]) // 2) + "1]]}\\n")
        sys.stdout.flush()
        continue
    send({"id": request["id"], "ids": ids})
    if MODE == "twice":  # a second answer, its id forged as the next one's, its ids wrong
        send({"id": request["id"] + 1, "ids": [[0] for _ in ids]})
'''


def write_engines(plugin_dir: Path, tiny_tokenizer_json: Path) -> None:
    (plugin_dir / "hostile_engines.py").write_text(ENGINES.replace("PATH", repr(str(tiny_tokenizer_json))))
    (plugin_dir / "hostile_server.py").write_text(SERVER.replace("PATH", repr(str(tiny_tokenizer_json))))


def server_spec(plugin_dir: Path, mode: str, options: str = "") -> str:
    return (f"subprocess:{sys.executable} {plugin_dir / 'hostile_server.py'} {mode}" +
            (f"?{options}" if options else ""))


# --- running a command ---------------------------------------------------------------------

MEASURE = '''
import json, resource, subprocess, sys
proc = subprocess.run(sys.argv[2:])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # every process of the command that was waited for
with open(sys.argv[1], "w") as fh:
    json.dump({"rc": proc.returncode, "peak_kb": usage.ru_maxrss, "cpu_s": usage.ru_utime + usage.ru_stime}, fh)
sys.exit(0)
'''


class Ran:
    def __init__(self, proc: subprocess.CompletedProcess, measured: dict):
        self.rc = measured["rc"]
        self.stdout, self.stderr = proc.stdout, proc.stderr
        self.peak_bytes = measured["peak_kb"] * 1024
        self.cpu_s = measured["cpu_s"]

    @property
    def lines(self) -> list[str]:
        return self.stderr.strip().splitlines()


def measured(argv: list[str], env: dict[str, str], tmp: Path, cwd: Path = REPO, timeout: float = 600) -> Ran:
    """``verify ARGV`` to its end, with the largest resident set of any of its processes and the
    CPU seconds they used (``getrusage`` of a wrapper's children: load does not change either)."""
    report = tmp / f"measure-{time.monotonic_ns()}.json"
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(report), sys.executable, "-m", "verify.cli", *argv],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Ran(proc, json.loads(report.read_text()))


def one_line_exit(ran: Ran, code: int, *words: str) -> str:
    """The command ended with ``code`` and exactly one stderr line holding ``words`` (no traceback)."""
    assert ran.rc == code, (ran.rc, ran.stdout, ran.stderr)
    assert len(ran.lines) == 1 and "Traceback" not in ran.stderr, ran.stderr
    for word in words:
        assert word in ran.lines[0], ran.lines[0]
    return ran.lines[0]


def quiet_exit(ran: Ran, code: int) -> None:
    """Findings, not errors: the code, nothing on stderr."""
    assert ran.rc == code, (ran.rc, ran.stdout, ran.stderr)
    assert ran.stderr.strip() == "", ran.stderr


def start_ignoring_sigint(argv: list[str], env: dict[str, str], cwd: Path = REPO) -> subprocess.Popen:
    """``verify ARGV`` started as ``nohup verify ... &`` starts it: with SIGINT ignored."""
    return subprocess.Popen([sys.executable, "-m", "verify.cli", *argv], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


def interrupted(argv: list[str], env: dict[str, str], entered: Path, sig: int) -> tuple[int, str]:
    """``verify ARGV`` started with SIGINT ignored, sent ``sig`` once a plugin says it is where the
    test wants it (``entered``): its exit code and stderr."""
    proc = start_ignoring_sigint(argv, env)
    try:
        wait_for_file(entered, proc)
        os.kill(proc.pid, sig)
        _, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, stderr


def wait_for_file(path: Path, proc: subprocess.Popen | None = None, deadline_s: float = 300.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not (path.exists() and path.stat().st_size) and time.monotonic() < deadline:
        assert proc is None or proc.poll() is None, proc.stderr.read() if proc.stderr else proc.returncode
        time.sleep(0.05)
    assert path.exists() and path.stat().st_size, f"{path} never appeared"


def pids_gone(pids_file: Path) -> list[int]:
    """The recorded pids that still run (zombies are gone)."""
    import psutil

    alive = []
    for pid in (int(p) for p in pids_file.read_text().split()) if pids_file.is_file() else []:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.Error:
            continue
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return alive


def records(out: Path) -> list[dict]:
    path = out / "divergences.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.is_file() else []


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


__all__ = ["ENGINES", "GIB", "PEAK_LIMIT", "Ran", "left_behind", "manifest", "measured", "one_line_exit",
           "interrupted", "pids_gone", "quiet_exit", "records", "server_spec", "start_ignoring_sigint", "tagged_env",
           "wait_for_file", "write_engines"]
