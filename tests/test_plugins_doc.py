"""docs/plugins.md runs as written: its Python blocks are the files they name, its bash blocks
the commands, in an empty folder with the console script (not ``python -m``, which would put
the folder on the import path by itself). Then what the examples promise: the plugin's name,
version and code digest in the manifest, a gate suite written without ``--reference``.

Slow: the commands run the smoke corpus, a replay and gate init's measurements."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

DOC = REPO / "docs" / "plugins.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang == language]


def commands() -> list[str]:
    lines = []
    for body in blocks("bash"):
        lines += [line for line in body.replace("\\\n", " ").splitlines() if line.strip()]
    return lines


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """An empty folder holding the doc's Python files, the commands run in it."""
    folder = tmp_path_factory.mktemp("plugins-doc")
    for body in blocks("python"):
        first = body.splitlines()[0]
        assert first.startswith("# ") and first.endswith(".py"), f"a Python block names its file first: {first}"
        (folder / first[2:].strip()).write_text(body, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VERIFY_PROJECT")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for command in commands():
        proc = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return folder


def test_the_doc_has_an_example_of_each_kind():
    files = [b.splitlines()[0] for b in blocks("python")]
    assert files == ["# plain_engine.py", "# special_engine.py", "# session_engine.py"]
    joined = "\n".join(commands())
    assert "verify run" in joined and "verify replay" in joined and "verify gate init" in joined


def test_the_plain_plugin_is_named_in_the_manifest_with_its_build_and_its_skips_allowed(project):
    manifest = json.loads((project / "runs" / "plain" / "manifest.json").read_text())
    (cand,) = manifest["candidates"]
    assert (cand["name"], cand["version"], cand["vocab"]) == ("mytok-plain", "0.1.0", "cl100k_base")
    assert cand["files_digest"] and cand["options"] == {"vocab": "cl100k_base", "threads": 2}
    counts = manifest["counts"]
    assert counts["skipped"] > 0 and counts["verified"] + counts["skipped"] == counts["samples"]


def test_the_special_token_plugin_verifies_every_sample(project):
    manifest = json.loads((project / "runs" / "special" / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["samples"] and counts["verified"] == counts["samples"]
    assert manifest["candidates"][0]["name"] == "mytok-special"


def test_the_session_plugin_replays_every_turn(project):
    manifest = json.loads((project / "runs" / "sessions" / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["samples"] and counts["verified"] == counts["samples"]


def test_gate_init_found_the_reference_from_the_declared_vocabulary(project):
    text = (project / "ci" / "pr" / "gate.toml").read_text()
    assert 'reference = "tiktoken-cl100k"' in text
    assert "allow_skipped = true" in text
