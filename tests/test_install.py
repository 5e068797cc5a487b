"""Every command works from the base install: a venv made from ``pip install .`` alone
(no extras) runs every subcommand's smallest real invocation and never exits 3 (a harness
bug); an optional dependency it lacks (ray, datasets, atheris) is one line naming the extra
to install, exit 2. Then, with the example nightly suite's candidate installed as the
workflow installs it, ``verify gate ci/nightly.toml`` runs to a verdict (exit 0 or 1).

Slow: building the venv takes a minute (once per session, from this machine's package
index), the commands a few more.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

# What `pip install .` needs and what the commands read: the package and the project's tables.
COPIED = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "verify", "engines", "corpora", "ci", "adversarial")
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", "hypothesis", "*.pyc")
OPTIONAL = ("ray", "datasets", "atheris", "torch", "pytest")  # the base install must not have these


def _pip(venv: Path, *args: str) -> None:
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.fixture(scope="session")
def base_install(tmp_path_factory):
    """(venv, checkout): a copy of the checkout and a venv made from ``pip install .`` in it."""
    root = tmp_path_factory.mktemp("install")
    checkout = root / "checkout"
    checkout.mkdir()
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, checkout / name, ignore=IGNORED)
        elif source.is_file():
            shutil.copy2(source, checkout / name)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    wheels = root / "dist"  # a wheel, as a package index serves it: what it carries is all there is
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                           str(checkout)], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (wheel,) = wheels.glob("verify_tokenizers-*.whl")
    _pip(venv, str(wheel))
    return venv, checkout


def verify(base_install, *args: str, timeout: int = 900, cwd: Path | None = None) -> subprocess.CompletedProcess:
    venv, checkout = base_install
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "VERIFY_PROJECT")}
    return subprocess.run([str(venv / "bin" / "verify"), *args], capture_output=True, text=True,
                          cwd=cwd or checkout, env={**env, "VERIFY_FUZZ_EXAMPLES": "50"}, timeout=timeout)


def test_the_base_install_has_hypothesis_and_none_of_the_extras(base_install):
    venv, _ = base_install
    probe = ("import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) is not None "
             f"for m in {('hypothesis',) + OPTIONAL!r}}}))")
    found = json.loads(subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                                      check=True).stdout)
    assert found.pop("hypothesis") is True
    assert not any(found.values()), f"the base install pulled in extras: {found}"


def _shadow_file(folder: Path) -> Path:
    path = folder / "shadow.jsonl"
    path.write_text(json.dumps({"schema": "verify.shadow/1", "request_id": "r1", "timestamp": "2026-03-01T12:00:00Z",
                                "tokenizer": {"name": "t", "version": "1", "vocab_sha256": None},
                                "text": "Hello world", "ids": [9906, 1917]}) + "\n")
    return path


def smallest_invocations(out: Path) -> dict[str, list[str]]:
    """One real run of every subcommand, as small as it gets (``verify.commands.COMMANDS``)."""
    common = ["--workers", "1"]
    return {
        "engines": ["engines"],
        "vocab": ["vocab", "list"],
        "run": ["run", "--corpus", "smoke", "--limit", "20", *common, "--out", str(out / "run")],
        "triage": ["triage", str(out / "run"), "--minimize-budget", "0"],
        "report": ["report", str(out / "run"), "--html", "--markdown"],
        "replay": ["replay", "--engine", "repair:tiktoken:cl100k_base", "--traces", "agent:1:1", "--limit", "1",
                   *common, "--out", str(out / "replay")],
        "ledger": ["ledger", "stats", str(out / "ledger")],
        "unicode": ["unicode", "--start", "0", "--stop", "100", *common, "--out", str(out / "unicode")],
        "length": ["length", "sweep", "--max-chars", "200", *common, "--out", str(out / "length")],
        "fuzz": ["fuzz", "--max-examples", "20", "--budget", "5", "--no-stress", *common, "--out", str(out / "fuzz")],
        "recheck": ["recheck", "--engine", "kitoken:cl100k_base", "--allow-unavailable", *common, "--out",
                    str(out / "recheck")],
        "check": ["check", "--engine", "tiktoken:cl100k_base", "--limit", "10", "--no-stress", *common,
                  "--out", str(out / "check")],
        "selftest": ["selftest", "--kinds", "substitute", "--faults", "2", *common, "--out", str(out / "selftest")],
        "shadow": ["shadow", str(_shadow_file(out)), "--reference", "tiktoken:cl100k_base", *common,
                   "--out", str(out / "shadow")],
        "sweep": ["sweep", "--reference", "tiktoken-cl100k", "--limit", "10", *common, "--out", str(out / "sweep")],
        "certify": ["certify", "--k", "1", *common, "--out", str(out / "certify")],
        "gate": ["gate", "ci/nightly.toml", "--out", str(out / "gate")],  # its candidate is not installed: exit 2
    }


def test_every_subcommand_runs_from_the_base_install_and_never_exits_3(base_install, tmp_path):
    from verify.commands import COMMANDS

    out = tmp_path / "out"
    out.mkdir()
    # the ledger command reads what a run with --ledger wrote
    seeded = verify(base_install, "run", "--corpus", "smoke", "--limit", "10", "--workers", "1",
                    "--ledger", str(out / "ledger"), "--out", str(out / "run-ledger"))
    assert seeded.returncode in (0, 1), seeded.stderr
    invocations = smallest_invocations(out)
    assert set(invocations) == set(COMMANDS), "a new command needs its smallest invocation here"
    codes = {}
    for name in COMMANDS:
        proc = verify(base_install, *invocations[name])
        codes[name] = proc.returncode
        assert proc.returncode != 3, f"verify {name}: {proc.stderr[-2000:]}"
        if proc.returncode == 2:  # a configuration error is one line saying what to do
            assert len(proc.stderr.strip().splitlines()) == 1 or name == "gate", (name, proc.stderr)
    expected_two = {"gate"}  # ci/nightly.toml names gigatoken, which `pip install .` does not install
    assert {name for name, code in codes.items() if code == 2} == expected_two, codes
    gate = json.loads((out / "gate" / "gate.json").read_text())
    assert {c["status"] for c in gate["checks"]} <= {"error", "fail", "skipped"}
    assert "pip install gigatoken" in " ".join(str(c.get("note") or "") for c in gate["checks"])


@pytest.mark.parametrize("argv, extra", [
    (["run", "--corpus", "smoke", "--limit", "5", "--executor", "ray"], "verify-tokenizers[ray]"),
    (["run", "--corpus", "hf:someone/some-dataset", "--limit", "5"], "verify-tokenizers[hf]"),
    (["fuzz", "--atheris", "--max-examples", "5"], "verify-tokenizers[fuzz]"),
    (["run", "--candidate", "maturin:tests/fixtures/rust-bpe", "--corpus", "smoke", "--limit", "5"],
     "verify-tokenizers[maturin]"),
])
def test_a_missing_extra_is_one_line_naming_it_and_exit_2(base_install, tmp_path, argv, extra):
    proc = verify(base_install, *argv, "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert extra in line


# The nightly suite's sizes, made small: what this test shows is that every check of the committed
# suite runs from the base install to a verdict, not how long a night is (its full sizes take four
# minutes of the suite's time; tests/test_gate_init.py sizes suites, tests/test_gate.py runs each kind)
SMALL_NIGHT = {r"^sample = 0\.2$": "sample = 0.02", r"^examples = 400$": "examples = 40",
               r"^seconds = 30$": "seconds = 10", r"^full = true$": 'range = ["0000", "1000"]',
               r"^limit = 2000$": "limit = 200", r"^limit = 100$": "limit = 10",
               r"^stress_seconds = 10$": "stress_seconds = 2", r"^max_chars = 100000$": "max_chars = 2000",
               r"^k = 3$": "k = 2"}


def small_nightly_suite(checkout: Path) -> Path:
    """ci/nightly.toml with every size made small, beside it (its allowlist is found the same way)."""
    from verify.gate.suite import load_suite

    text = (checkout / "ci" / "nightly.toml").read_text(encoding="utf-8")
    for pattern, small in SMALL_NIGHT.items():
        text, n = re.subn(pattern + r"(?=\s|$)", small, text, flags=re.M)
        assert n == 1, f"ci/nightly.toml no longer has one {pattern!r}: update SMALL_NIGHT"
    small = checkout / "ci" / "nightly-small.toml"
    small.write_text(text, encoding="utf-8")
    committed, shrunk = load_suite(checkout / "ci" / "nightly.toml"), load_suite(small)
    assert [(c.name, c.kind) for c in shrunk.checks] == [(c.name, c.kind) for c in committed.checks]
    return small


def test_the_nightly_gate_runs_to_a_verdict_once_its_candidate_is_installed(base_install, tmp_path):
    """As ci/github-actions-nightly.yml does it: `pip install .`, then the candidate; every check of
    the committed suite, at small sizes."""
    venv, checkout = base_install
    _pip(venv, "gigatoken==0.10.0")
    suite = small_nightly_suite(checkout)
    proc = verify(base_install, "gate", str(suite), "--out", str(tmp_path / "gate"), timeout=1800)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    gate = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert [c["name"] for c in gate["checks"]] == [c["name"] for c in gate["checks"] if not c.get("cut")] == \
        re.findall(r'^name = "(.+)"$', suite.read_text(encoding="utf-8"), re.M)[1:]  # every check ran, none cut
    assert gate["verdict"] in ("pass", "fail") and not [c for c in gate["checks"] if c["status"] == "error"], \
        [(c["name"], c.get("note")) for c in gate["checks"] if c["status"] == "error"]


def test_the_wheel_carries_the_declarative_side_and_runs_from_an_empty_folder(base_install, tmp_path):
    """Named corpora, named engines, chat templates, tags and regression cases come with the
    wheel: the README's commands run outside any checkout (an empty folder, nothing on the path)."""
    here = tmp_path / "elsewhere"
    here.mkdir()
    run = verify(base_install, "run", "--corpus", "smoke", "--limit", "20", "--workers", "1", "--out", "smoke-run",
                 cwd=here)
    assert run.returncode == 0, run.stderr
    manifest = json.loads((here / "smoke-run" / "manifest.json").read_text())
    assert manifest["reference"]["spec"] == "tiktoken-cl100k"  # engines/defaults.toml, from the wheel
    nemo = verify(base_install, "run", "--corpus", "nemotron-cc", "--where", "quality=high", "--limit", "5",
                  "--out", "nemo", cwd=here)
    assert nemo.returncode == 2 and "needs a root" in nemo.stderr and "not found" not in nemo.stderr, nemo.stderr
    replay = verify(base_install, "replay", "--engine", "repair:tiktoken:cl100k_base", "--traces", "agent:1:1",
                    "--limit", "1", "--workers", "1", "--out", "replay", cwd=here)  # a chat template, packaged
    assert replay.returncode == 0, replay.stderr
    recheck = verify(base_install, "recheck", "--engine", "kitoken:cl100k_base", "--allow-unavailable",
                     "--workers", "1", "--out", "recheck", cwd=here)
    assert recheck.returncode != 2 and "kitoken-0.11.1" in recheck.stdout, recheck.stderr
    init = verify(base_install, "gate", "init", "--candidate", "hf:o200k_base", "--write", "ci/pr/gate.toml",
                  cwd=here)
    assert init.returncode == 0, init.stderr
    assert 'reference = "tiktoken-o200k"' in (here / "ci" / "pr" / "gate.toml").read_text()
    assert not (here / "engines").exists() and not (here / "corpora").exists()
