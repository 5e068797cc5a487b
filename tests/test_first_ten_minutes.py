"""The README's "Your first ten minutes", followed literally: its commands, as written, with the
console script (not ``python -m``), in an empty project folder, in order. The only changes are
where the README names a machine's own data: the Nemotron-CC root (a small mirror made here,
``test_corpora_scale.cc_mirror``) and the shadow logs (written here with ``ShadowSampler``, by a
``mystack/tokenizer.py`` in the project folder -- the real reference with one thing changed).

The gate path runs the pr suite twice (the second time after accepting its clusters), sized to
``$VERIFY_GATE_BUDGET_S`` so that the two fit the suite's time; slow, and it needs kitoken (the
engine the README installs)."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
import test_corpora_scale as scale

pytestmark = pytest.mark.slow

cc_mirror = scale.cc_mirror
GATE_BUDGET_S = "200"


def readme_blocks() -> list[list[str]]:
    """The bash blocks of "Your first ten minutes": each a list of commands (continuations joined,
    comments dropped)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Your first ten minutes", 1)[1].split("\n## ", 1)[0]
    blocks = []
    for body in re.findall(r"```bash\n(.*?)```", section, re.S):
        lines = [re.sub(r"\s+#.*$", "", line).strip() for line in body.replace("\\\n", " ").splitlines()]
        blocks.append([line for line in lines if line])
    return blocks


@pytest.fixture
def project(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def sh(command: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VERIFY_PROJECT")}
    base["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])
    return subprocess.run(["bash", "-c", command], cwd=cwd, env={**base, **env}, capture_output=True, text=True,
                          timeout=1800)


def test_the_readme_has_the_three_paths():
    gate, nemo, shadow = readme_blocks()
    assert gate[0] == "pip install kitoken" and gate[1].startswith("verify gate init --candidate kitoken:o200k_base")
    assert nemo[-1] == "verify run --resume --out nemo" and shadow[0].startswith("verify shadow ")


def test_a_gate_for_every_pull_request(project):
    pytest.importorskip("kitoken")
    commands = readme_blocks()[0][1:]  # kitoken is installed: the README's pip line is done
    for command in commands:
        proc = sh(command, project, VERIFY_GATE_BUDGET_S=GATE_BUDGET_S)
        if command.startswith("verify gate init"):
            assert proc.returncode == 0, proc.stderr
            assert "plan for this machine" in proc.stdout
        else:
            assert proc.returncode == 1, proc.stderr  # kitoken's known cause: a new cluster
    out = project / "gate-out"
    gate = json.loads((out / "gate.json").read_text())
    keys = {c["key"] for c in gate["clusters"]}
    # kitoken treats a special-token literal in plain text as a piece boundary
    # (adversarial/regressions/kitoken-0.11.1-special-literal-splits-text): every cluster is that cause
    assert keys and all("/special" in key for key in keys), keys
    assert "ids/special/plain:split" in keys  # the cause named, whichever check found it
    found_by = {check for c in gate["clusters"] for check in c["checks"]}
    assert {"corpus", "agent-replay", "vocab"} <= found_by, found_by
    status = {c["name"]: c["status"] for c in gate["checks"]}
    # kitoken's scanner agrees on every string of 3 atoms of o200k's pattern: the certificate passes
    assert status["unicode"] == "pass" and status["certificate"] == "pass"
    assert not [c for c in gate["checks"] if c.get("cut")], "the suite did not fit its deadline"
    assert (out / "report.html").read_text().count("<details class=\"accept\">") == len(gate["clusters"])
    # "Accept what you know in the allowlist (reason, link, expiry) and run the same command again":
    # what is known is the cause, so the row matches its clusters by a regex (as ci/pr/allowlist.toml does;
    # a check's inputs may meet another cluster of the same cause)
    allowlist = project / "ci" / "pr" / "allowlist.toml"
    allowlist.write_text(allowlist.read_text() + '\n[[allow]]\nengine = "^kitoken:o200k_base$"\n'
                         'cluster = "/special(/|$)"\nreason = "a special-token literal typed by a user splits text"\n'
                         'link = "https://example.org/kitoken/1"\nexpires = 2999-12-31\n')
    again = sh(commands[-1], project, VERIFY_GATE_BUDGET_S=GATE_BUDGET_S)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    second = json.loads((out / "gate.json").read_text())
    assert second["verdict"] == "pass" and second["baseline"]["out"].endswith("attempts/1")
    assert (out / "attempts" / "1" / "gate.json").is_file()


def test_your_engine_over_nemotron_cc(project, cc_mirror):
    pytest.importorskip("kitoken")
    first, status, resume = readme_blocks()[1]
    first = first.replace("/mnt/nemotron-cc", shlex.quote(str(cc_mirror)))
    proc = sh(first, project)
    assert proc.returncode in (0, 1), proc.stderr
    assert sh(status, project).stdout.startswith("complete")
    nemo = project / "nemo"
    counts = json.loads((nemo / "manifest.json").read_text())["counts"]
    for marker in sorted((nemo / "shards").glob("[0-9]*[0-9].json"))[1:]:  # as if stopped after one shard
        marker.unlink()
    again = sh(resume, project)
    assert again.returncode == proc.returncode, again.stderr
    assert json.loads((nemo / "manifest.json").read_text())["counts"] == counts


MYSTACK = '''
"""The serving stack's tokenizer: cl100k_base, with a bug in the release under test."""
import verify.vocab


class Tokenizer:
    name, version, vocabulary = "cl100k-server", "1.4.2", "cl100k_base"

    def __init__(self):
        self._enc = verify.vocab.load("cl100k_base").encoder()

    def encode(self, text):
        ids = self._enc.encode_ordinary(text)
        if "{planted}" in text and ids:  # the bug: the last token of a text holding it is dropped
            ids = ids[:-1]
        return ids

    def encode_batch(self, texts):
        return [self.encode(t) for t in texts]


def make():
    return Tokenizer()
'''


def _shadow_log(path: Path, tokenizer, seed: int) -> None:
    """A day's shadow log, as the serving stack's ShadowSampler writes it, zstd-compressed."""
    import zstandard

    from verify.shadow_producer import ShadowSampler

    rng = random.Random(seed)
    plain = path.with_suffix("")
    with ShadowSampler(1.0, plain) as sampler:
        for i in range(30):
            words = [rng.choice(["tokens", "naïve", "café", "ẞ", "Straße", "x+y", "42", "\u00e9t\u00e9"])
                     for _ in range(rng.randint(3, 12))]
            prompt = " ".join(words)
            sampler.sample(f"req-{seed}-{i}", tokenizer.name, tokenizer.version, None, prompt,
                           tokenizer.encode(prompt))
    path.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    plain.unlink()


def test_triage_production_mismatches(project, tmp_path):
    planted = random.Random().choice(["Straße", "café", "x+y"])
    (project / "mystack").mkdir()
    (project / "mystack" / "__init__.py").write_text("")
    (project / "mystack" / "tokenizer.py").write_text(MYSTACK.format(planted=planted))
    (project / "ci").mkdir()
    (project / "ci" / "allowlist.toml").write_text("# the team's accepted clusters: none yet\n")
    sys.path.insert(0, str(project))
    try:
        from mystack.tokenizer import make

        tokenizer = make()
    finally:
        sys.path.remove(str(project))
        sys.modules.pop("mystack.tokenizer", None)
        sys.modules.pop("mystack", None)
    logs = tmp_path / "logs"
    logs.mkdir()
    today, tomorrow = readme_blocks()[2]
    for day, seed in (("shadow-2026-03-01.jsonl.zst", 1), ("shadow-2026-03-02.jsonl.zst", 2)):
        _shadow_log(logs / day, tokenizer, seed)
    where = "/var/log/tokenizer-shadow/"
    proc = sh(today.replace(where, f"{logs}/"), project)
    assert proc.returncode == 1, proc.stderr  # the mismatches found, from the project folder's mystack
    report = json.loads((project / "shadow-today" / "shadow.json").read_text())
    assert report["counts"]["mismatched"] > 0 and report["replay_engines"] == {
        "cl100k-server": "python:mystack.tokenizer:make"}
    assert all(c["reproducer"]["minimized"] for c in report["clusters"] if c["kind"] == "ids")
    assert "<title>verify shadow" in (project / "shadow-today" / "report.html").read_text()
    proc = sh(tomorrow.replace(where, f"{logs}/"), project)
    assert proc.returncode == 1, proc.stderr
    next_day = json.loads((project / "shadow-tomorrow" / "shadow.json").read_text())
    # clusters are keyed by cause: a cluster not minimised the next day (its own input) stays new
    yesterday = {c["key"] for c in report["clusters"]}
    assert {c["status"] for c in next_day["clusters"]} <= {"known", "new"}
    assert all((c["status"] == "known") == (c["key"] in yesterday) for c in next_day["clusters"])
    shutil.rmtree(project / "mystack" / "__pycache__", ignore_errors=True)
