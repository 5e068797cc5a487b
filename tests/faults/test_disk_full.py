"""A full disk: ``verify run`` with OUT on a tmpfs too small for it ends with exit 2 and one line
on stderr that says the disk holding OUT is full (never a traceback, never exit 3, "harness
bug"); once the disk is bigger, ``--resume`` completes with the results of an uninterrupted run.

The tmpfs is mounted as root, else in a user namespace (``unshare -rm``); without either the
test is skipped, saying why. Both runs and the remount happen in one shell script, so they see
the same mount either way. What a full disk can leave -- a line of OUT/attempts.jsonl cut
short -- must not stop a resume either (a test of its own: where the disk fills is not fixed)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from faults.helpers import boxed_env, left_behind, written_in
from test_pipeline import PLUGIN, results

pytestmark = pytest.mark.faults

PLANTED = "python:pipeline_plugin:planted"
SMALL = "160k"  # room for the plan and about ten of the 25 shards' findings, not for all of them
BIG = "64m"
NO_MOUNT = 97  # the script's exit code when the tmpfs could not be mounted

SCRIPT = '''set -u
mount -t tmpfs -o size={small} tmpfs {disk} || exit {no_mount}
{first} 2>{t}/first.err; echo $? >{t}/first.rc
ls {disk}/out/shards >{t}/full.ls
mount -o remount,size={big} {disk}
{resume} 2>{t}/resume.err; echo $? >{t}/resume.rc
cp -a {disk}/out {t}/out
umount {disk}
'''


def argv(tiny_spec, out, *extra):
    return ["run", "--reference", tiny_spec, "--candidate", PLANTED, "--corpus", "default", "--limit", "400",
            "--out", str(out), "--no-progress", "--in-process", "--workers", "2", "--minimize-budget", "0", *extra]


def command(args) -> str:
    return shlex.join([sys.executable, "-m", "verify.cli", *map(str, args)])


def on_small_disk(script: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """The script as root, else in a user namespace; skipped when neither may mount a tmpfs."""
    tries = [["sh", str(script)]] if os.geteuid() == 0 else []
    if shutil.which("unshare"):
        tries.append(["unshare", "-rm", "sh", str(script)])
    why = "not root and no unshare(1)"
    for how in tries:
        proc = subprocess.run(how, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
        if proc.returncode != NO_MOUNT:
            return proc
        why = f"{' '.join(how[:-2]) or 'root'}: {proc.stderr.strip()}"
    pytest.skip(f"cannot mount a small tmpfs for OUT ({why})")


def test_a_full_disk_is_one_line_and_exit_2_then_resume_on_a_bigger_disk_completes(
        tmp_path, plugin_dir, tiny_tokenizer_json, tiny_spec):
    (plugin_dir / "pipeline_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    box, disk, t = tmp_path / "box", tmp_path / "disk", tmp_path / "t"
    disk.mkdir()
    t.mkdir()
    whole = subprocess.run([sys.executable, "-m", "verify.cli", *argv(tiny_spec, tmp_path / "whole")],
                           env=boxed_env(box), cwd=box / "cwd", capture_output=True, text=True, timeout=600)
    assert whole.returncode == 1, whole.stderr
    env = boxed_env(box)
    resume = ["run", "--resume", "--out", disk / "out", "--no-progress", "--in-process", "--workers", "2",
              "--minimize-budget", "0"]
    script = tmp_path / "disk.sh"
    script.write_text(SCRIPT.format(small=SMALL, big=BIG, no_mount=NO_MOUNT, disk=shlex.quote(str(disk)),
                                    t=shlex.quote(str(t)), first=command(argv(tiny_spec, disk / "out")),
                                    resume=command(resume)))
    try:
        proc = on_small_disk(script, env, box / "cwd")
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)  # as root, if the script stopped early
    assert proc.returncode == 0, proc.stderr
    first_rc, first_err = int((t / "first.rc").read_text()), (t / "first.err").read_text()
    assert first_rc == 2, first_err
    (line,) = first_err.strip().splitlines()
    assert line.startswith("verify: error: no space left on the disk") and str(disk / "out") in line, line
    assert "--resume" in line and "Traceback" not in first_err and "harness bug" not in first_err
    markers = [name for name in (t / "full.ls").read_text().split() if name[:6].isdigit() and name[6:] == ".json"]
    assert 0 < len(markers) < 25  # it filled up part way: some shards were committed, not all
    assert int((t / "resume.rc").read_text()) == 1, (t / "resume.err").read_text()
    (got, keys), (want, expected_keys) = results(t / "out"), results(tmp_path / "whole")
    assert got["complete"] and got["counts"] == want["counts"]
    assert keys == expected_keys and len(set(keys)) == len(keys)
    assert left_behind(env) == []
    assert written_in(box) == []


def test_a_line_cut_short_in_attempts_jsonl_leaves_the_run_resumable(tmp_path, tiny_tokenizer_json, tiny_spec):
    """A full disk can cut the line an attempt appends to OUT/attempts.jsonl. Before: every later
    ``--resume`` of that run ended as a harness bug (exit 3, JSONDecodeError)."""
    from verify.cli import main
    from verify.rundir.attempts import read_attempts

    twin = tmp_path / "twin.json"
    twin.write_bytes(tiny_tokenizer_json.read_bytes())
    out = tmp_path / "out"
    fast = ["--no-progress", "--in-process", "--workers", "1", "--minimize-budget", "0"]
    assert main(["run", "--reference", tiny_spec, "--candidate", f"hf:{twin}", "--corpus", "default", "--limit", "40",
                 "--out", str(out), *fast]) == 0
    with open(out / "attempts.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"attempt": 2, "started": 17')  # the disk filled up here
    assert main(["run", "--resume", "--out", str(out), *fast]) == 0
    attempts = read_attempts(out)
    assert [a["attempt"] for a in attempts] == [1, 2] and attempts[1]["resumed"] and "finished" in attempts[1]
