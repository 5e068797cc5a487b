"""Committed files are untrusted input: a findings line whose ``input_file`` points outside
OUT (``../secret/secret.json``, an absolute path, ``../../etc/passwd``) is refused with one
line -- ``verify triage OUT`` never reads it, never copies its text under OUT, never
exits 3."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

SECRET = "TOP-SECRET-7f3a9c"


def record(input_file: str) -> dict:
    return {"schema": "verify.divergence/2", "kind": "ids", "engine": "tiktoken:cl100k_base",
            "reference": "hf:cl100k_base", "sample_id": "s1", "source": "x", "finding_key": "k1",
            "input_key": "0" * 32, "input_file": input_file, "token_index": 0, "char_offset": 0}


@pytest.mark.parametrize("where", ["../secret/secret.json", "ABSOLUTE", "../../../../../../etc/passwd"])
def test_triage_refuses_an_input_file_outside_out(tmp_path, where):
    secret = tmp_path / "secret" / "secret.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"keys_version": 1, "segments": [[SECRET, False]]}))
    out = tmp_path / "out"
    out.mkdir()
    path = str(secret) if where == "ABSOLUTE" else where
    (out / "divergences.jsonl").write_text(json.dumps(record(path)) + "\n")
    proc = run_cli("triage", str(out), "--minimize-budget", "0", "--in-process")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refused" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr
    for file in out.rglob("*"):
        if file.is_file():
            assert SECRET not in file.read_text(errors="replace"), file


def test_an_input_file_inside_out_is_read(tmp_path):
    out = tmp_path / "out"
    (out / "inputs").mkdir(parents=True)
    (out / "inputs" / "k.json").write_text(json.dumps({"keys_version": 1, "segments": [["hello", False]]}))
    (out / "divergences.jsonl").write_text(json.dumps(record("inputs/k.json")) + "\n")
    proc = run_cli("triage", str(out), "--minimize-budget", "0", "--in-process")
    assert proc.returncode == 0, proc.stderr
    assert "1 findings" in proc.stdout
