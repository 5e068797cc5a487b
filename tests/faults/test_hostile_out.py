"""An unlucky machine and a hostile allowlist (issue 24, attacks 12 and 16 and what was seen
beside them): a catastrophic regex in the gate's allowlist, OUT on a read-only file system for
every command that writes there, and two commands writing into one OUT at once."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys

import pytest

from faults.helpers import left_behind, start, wait_until, write_plugins
from faults.hostile import measured, one_line_exit, tagged_env
from test_pipeline import PLUGIN

pytestmark = pytest.mark.faults

PLANTED = "python:pipeline_plugin:planted"


@pytest.fixture
def planted(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    write_plugins(plugin_dir, tiny_tokenizer_json)
    return plugin_dir


SUITE = '''
[gate]
name = "hostile-allowlist"
reference = "{reference}"
candidates = ["{candidate}"]
allowlist = "allowlist.toml"
in_process = true
minimize_budget = 0

[[check]]
kind = "corpus"
corpus = "default"
limit = 64
'''

CATASTROPHIC = '''
[[allow]]
cluster = "^(.+)+Q$"
reason = "a pattern Python's re takes exponential time on for every key that does not end in Q"
'''


def test_a_catastrophic_allowlist_regex_costs_no_time(tmp_path, planted, tiny_spec):
    """Before: the gate hung past 180 s on `cluster = "^(.+)+Q$"` (7 s with a plain regex), and
    ignored SIGINT for 30 s. The regexes run on RE2: linear time."""
    (tmp_path / "allowlist.toml").write_text(CATASTROPHIC)
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(reference=tiny_spec, candidate=PLANTED))
    env = tagged_env()
    ran = measured(["gate", str(suite), "--out", str(tmp_path / "gate")], env, tmp_path)
    assert ran.rc == 1, ran.stderr  # the planted divergences: a new cluster, not accepted by the row
    assert ran.cpu_s < 120, ran.cpu_s
    assert left_behind(env) == []


def test_a_user_regex_re2_cannot_take_is_one_line(tmp_path, planted, tiny_spec):
    (tmp_path / "allowlist.toml").write_text('[[allow]]\ncluster = "(?<=ids)/"\nreason = "look-behind"\n')
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(reference=tiny_spec, candidate=PLANTED))
    ran = measured(["gate", str(suite), "--out", str(tmp_path / "gate")], tagged_env(), tmp_path)
    one_line_exit(ran, 2, "'cluster'", "RE2")


# --- 16: OUT on a read-only file system -------------------------------------------------------

SCRIPT = '''set -u
mount -t tmpfs -o size=64m tmpfs {disk} || exit {no_mount}
{first} >/dev/null 2>{t}/first.err; echo $? >{t}/first.rc
mount -o remount,ro {disk}
{commands}
umount {disk}
'''
NO_MOUNT = 97


def _command(argv) -> str:
    return shlex.join([sys.executable, "-m", "verify.cli", *map(str, argv)])


def test_every_command_writing_to_a_read_only_out_is_one_line_and_exit_2(tmp_path, planted, tiny_spec):
    """Before: `run --out`, `gate --out`, `triage`, `report` and `run --resume` on a read-only
    file system were all exit 3 ("harness bug: OSError: [Errno 30]")."""
    disk, t = tmp_path / "disk", tmp_path / "t"
    disk.mkdir()
    t.mkdir()
    (tmp_path / "allowlist.toml").write_text("")
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(reference=tiny_spec, candidate=PLANTED))
    run = ["run", "--reference", tiny_spec, "--candidate", PLANTED, "--corpus", "default", "--limit", "64",
           "--no-progress", "--minimize-budget", "0", "--in-process", "--workers", "1"]
    commands = {"run": [*run, "--out", disk / "new"], "gate": ["gate", suite, "--out", disk / "gate"],
                "triage": ["triage", disk / "run"], "report": ["report", disk / "run"],
                "resume": ["run", "--resume", "--out", disk / "run", "--no-progress", "--in-process", "--workers", "1"]}
    lines = "\n".join(f"{_command(argv)} >/dev/null 2>{t}/{name}.err; echo $? >{t}/{name}.rc"
                      for name, argv in commands.items())
    script = tmp_path / "ro.sh"
    script.write_text(SCRIPT.format(disk=shlex.quote(str(disk)), no_mount=NO_MOUNT, t=shlex.quote(str(t)),
                                    first=_command([*run, "--out", disk / "run"]), commands=lines))
    env = tagged_env()
    tries = [["sh", str(script)]] if os.geteuid() == 0 else []
    if shutil.which("unshare"):
        tries.append(["unshare", "-rm", "sh", str(script)])
    proc = None
    for how in tries:
        proc = subprocess.run(how, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        if proc.returncode != NO_MOUNT:
            break
    subprocess.run(["umount", "-l", str(disk)], capture_output=True)
    if proc is None or proc.returncode == NO_MOUNT:
        pytest.skip("cannot mount a tmpfs for OUT (not root, and no user namespace)")
    assert int((t / "first.rc").read_text()) == 1, (t / "first.err").read_text()
    for name in commands:
        rc, err = int((t / f"{name}.rc").read_text()), (t / f"{name}.err").read_text()
        assert rc == 2, (name, rc, err)
        (line,) = err.strip().splitlines()
        assert "read-only file system" in line and "harness bug" not in line, (name, line)
    assert left_behind(env) == []


# --- one writer per OUT --------------------------------------------------------------------

def test_a_second_resume_of_a_folder_in_use_is_refused_then_takes_over_when_its_owner_is_gone(
        tmp_path, planted, tiny_spec):
    """Before: two --resume on one OUT ran the same shards twice (no lock)."""
    out, block = tmp_path / "out", tmp_path / "block"
    block.touch()
    env = tagged_env(PLANT_BLOCK=str(block))
    argv = ["run", "--reference", tiny_spec, "--candidate", "python:fault_plugin:gated", "--corpus", "default",
            "--limit", "400", "--out", str(out), "--no-progress", "--minimize-budget", "0", "--workers", "2"]
    first = start(argv, env)
    try:
        wait_until(first, lambda: (out / "plan.json").is_file())
        second = measured(["run", "--resume", "--out", str(out), "--no-progress", "--minimize-budget", "0"], env,
                          tmp_path)
        one_line_exit(second, 2, "in use by another verify", f"process {first.pid}")
        assert first.poll() is None  # the owner runs on, undisturbed
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        first.kill()
        first.wait()
    assert left_behind(env) == []
    block.unlink()
    third = measured(["run", "--resume", "--out", str(out), "--no-progress", "--minimize-budget", "0"], env, tmp_path)
    # skipped special segments, as ever: exit 1 with the one line that says so and nothing else
    assert third.rc == 1 and third.stderr.strip().startswith("verify: exit 1 only because"), third.stderr
    assert len(third.stderr.strip().splitlines()) == 1
    got = json.loads((out / "manifest.json").read_text())
    assert got["complete"] and got["counts"]["samples"] == 400 and got["counts"]["diverged"] == 0
    assert not (out / ".verify.lock").exists()
    assert left_behind(env) == []


def test_the_lock_holds_its_owners_pid_and_leaves_no_trace(tmp_path):
    from verify.rundir.lock import LOCK_FILE, out_lock

    out = tmp_path / "fresh"
    with out_lock(out):
        assert (out / LOCK_FILE).read_text().strip() == str(os.getpid())
    assert not out.exists()  # the lock made OUT and nothing else was written there: gone again
    out.mkdir()
    with out_lock(out):
        (out / "kept").touch()
    assert [p.name for p in out.iterdir()] == ["kept"]


@pytest.mark.parametrize("code, words", [("EROFS", "read-only file system"), ("EACCES", "permission denied"),
                                         ("EPERM", "operation not permitted"), ("ENOSPC", "no space left")])
def test_a_write_the_machine_refuses_is_the_users_to_fix_in_one_line(tmp_path, code, words):
    """EACCES cannot be made real for root (these tests may run as root): the mapping itself."""
    import errno

    from verify.errors import VerifyError, storage_error

    refused = storage_error(OSError(getattr(errno, code), os.strerror(getattr(errno, code)), str(tmp_path / "x")))
    assert isinstance(refused, VerifyError) and words in str(refused) and "\n" not in str(refused)
    assert storage_error(OSError(errno.ENOENT, "gone")) is None  # not storage: raised as it is
