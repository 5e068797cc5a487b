"""`verify gate init`: a suite written for one candidate -- the reference for its vocabulary,
the checks it can take part in (from its capabilities), the budgets of the profile -- that
loads as a suite and says how to run it. (The pr suite for kitoken on o200k_base, run to its
verdict, is the README's own walk-through: tests/test_first_ten_minutes.py.)"""

from __future__ import annotations

import pytest

from conftest import run_cli
from verify.gate.budget import PLANNED_SHARE, PROFILE_BUDGET_S
from verify.gate.init import Facts, plan_checks
from verify.gate.suite import load_suite

PLAIN_PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    """Plain text only, no sessions: what a team's first adapter looks like."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def encode_batch(self, texts):
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

class Session:
    def __init__(self, tok):
        self.tok, self.text = tok, ""
    def append(self, text):
        self.text += text
        return self.tok.encode(self.text, add_special_tokens=False).ids

class Sessions:
    """A stateful plain-text engine."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def open_session(self, state=None):
        return Session(self.tok)

def plain():
    return Engine()

def sessions():
    return Sessions()
'''


@pytest.fixture
def plugins(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "init_plugins.py").write_text(PLAIN_PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))


def rows_of(suite) -> dict:
    return {c.name: c for c in suite.checks}


def facts(**kw) -> Facts:
    base = {"spec": "x:y", "vocab": "cl100k_base", "special_tokens": True, "sessions": False, "decode": True,
            "pair_seconds": 0.25}
    return Facts(**{**base, **kw})


def test_init_writes_a_pr_suite_for_kitoken_on_o200k_that_loads_and_says_how_to_run_it(tmp_path):
    pytest.importorskip("kitoken")
    path = tmp_path / "ci" / "pr.toml"
    proc = run_cli("gate", "init", "--candidate", "kitoken:o200k_base", "--profile", "pr", "--write", str(path))
    assert proc.returncode == 0, proc.stderr
    assert f"run it:   verify gate {path} --out gate-out" in proc.stdout
    suite = load_suite(path)
    assert suite.reference == "tiktoken-o200k" and suite.candidates == ["kitoken:o200k_base"]
    assert suite.allowlist == path.parent / "allowlist.toml" and suite.allowlist.is_file()
    checks = rows_of(suite)
    # kitoken honours special tokens and has no sessions: whole transcripts are replayed, skips allowed there only
    # a pull request's search is the certificate (deterministic), not a time-bounded fuzz
    assert list(checks) == ["corpus", "agent-replay", "certificate", "unicode", "vocab", "metamorphic", "length"]
    assert checks["certificate"].options["k"] >= 3 and checks["certificate"].kind == "certificate"
    assert checks["agent-replay"].allow_skipped and not checks["corpus"].allow_skipped
    assert 0 < checks["corpus"].options.get("sample", 1) <= 1 and checks["vocab"].options.get("limit", 250) >= 250
    assert checks["length"].options["max_chars"] == 30000
    assert suite.deadline_s == 300 and "plan for this machine" in proc.stdout and "of the pr profile's 300 s" in \
        proc.stdout
    assert "special" in checks["length"].options["kinds"]
    text = path.read_text()
    assert text.startswith("# The pr gate for kitoken:o200k_base against tiktoken-o200k on o200k_base.")
    # a second init does not overwrite a suite, nor an allowlist someone has filled in
    again = run_cli("gate", "init", "--candidate", "kitoken:o200k_base", "--write", str(path))
    assert again.returncode == 2 and "--force" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    (path.parent / "allowlist.toml").write_text("# ours\n")
    forced = run_cli("gate", "init", "--candidate", "kitoken:o200k_base", "--write", str(path), "--force")
    assert forced.returncode == 0 and (path.parent / "allowlist.toml").read_text() == "# ours\n"


def test_a_candidate_with_regression_cases_gets_a_recheck_and_nightly_sweeps_in_full(tmp_path):
    pytest.importorskip("kitoken")
    path = tmp_path / "nightly.toml"
    proc = run_cli("gate", "init", "--candidate", "kitoken:cl100k_base", "--profile", "nightly", "--write", str(path))
    assert proc.returncode == 0, proc.stderr
    suite = load_suite(path)
    checks = rows_of(suite)
    assert suite.reference == "tiktoken-cl100k" and "recheck" in checks  # adversarial/regressions has kitoken cl100k cases
    assert checks["length"].options["max_chars"] == 500000 and suite.deadline_s == 1800
    assert checks["fuzz"].options["examples"] >= 100 and "seed" not in checks["fuzz"].options
    assert checks["certificate"].options["k"] >= 4  # nightly: a larger space than a pull request's


def test_a_plain_text_plugin_needs_a_reference_and_gets_skips_allowed_where_inputs_carry_specials(
        tmp_path, plugins, tiny_spec):
    path = tmp_path / "pr.toml"
    proc = run_cli("gate", "init", "--candidate", "python:init_plugins:plain", "--write", str(path))
    assert proc.returncode == 2 and not path.exists()
    (line,) = proc.stderr.strip().splitlines()
    assert "--reference" in line and "vocabulary" in line
    proc = run_cli("gate", "init", "--candidate", "python:init_plugins:plain", "--reference", tiny_spec,
                   "--write", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "no special-token support" in proc.stdout
    checks = rows_of(load_suite(path))
    assert "agent-replay" not in checks and "recheck" not in checks  # no sessions, no specials: nothing to replay
    assert all(checks[name].allow_skipped for name in ("corpus", "vocab", "length"))
    # the reference's pattern gives an alphabet: a certificate (plain strings, nothing to skip) instead of fuzz
    assert "fuzz" not in checks and not checks["certificate"].allow_skipped
    assert "special" not in checks["length"].options["kinds"] and not checks["metamorphic"].allow_skipped


def test_a_stateful_plain_text_plugin_gets_its_sessions_replayed(tmp_path, plugins, tiny_spec):
    path = tmp_path / "pr.toml"
    proc = run_cli("gate", "init", "--candidate", "python:init_plugins:sessions", "--reference", tiny_spec,
                   "--write", str(path))
    assert proc.returncode == 0, proc.stderr
    replay = rows_of(load_suite(path))["agent-replay"]
    assert replay.kind == "replay" and replay.options["traces"][0].startswith("agent:1:")
    # the plain template where the replay kind takes one; else the skips are allowed (and each says why)
    assert replay.options.get("template") == "plain" or replay.allow_skipped


@pytest.mark.parametrize("profile", ["pr", "nightly"])
def test_budgets_are_sized_from_the_measured_speed_to_fit_the_profile(profile):
    budget = PROFILE_BUDGET_S[profile]
    fast, slow = facts(pair_seconds=0.1), facts(pair_seconds=1.0)
    planned = {name: plan_checks(f, profile, cases=2) for name, f in (("fast", fast), ("slow", slow))}
    for name, rows in planned.items():
        assert sum(seconds for _, _, seconds in rows) <= budget * PLANNED_SHARE + 1, name
    fast_rows, slow_rows = ({row["name"]: row for _, row, _ in rows} for rows in planned.values())
    assert slow_rows["corpus"].get("sample", 1) <= fast_rows["corpus"].get("sample", 1)
    assert slow_rows["vocab"].get("limit", 10**9) < fast_rows["vocab"].get("limit", 10**9)
    assert slow_rows["metamorphic"]["stress_seconds"] >= fast_rows["metamorphic"]["stress_seconds"]
    assert "recheck" in fast_rows and fast_rows["length"]["max_chars"] > 25_000


def test_a_nightly_plan_is_fuller_than_a_pr_plan():
    f = facts(pair_seconds=0.25)
    pr, nightly = ({row["name"]: row for _, row, _ in plan_checks(f, p, cases=0)} for p in ("pr", "nightly"))
    assert nightly["corpus"].get("sample", 1) >= pr["corpus"].get("sample", 1)
    assert nightly["fuzz"]["seconds"] > pr["fuzz"]["seconds"] and nightly["length"]["max_chars"] == 500_000


@pytest.mark.parametrize("argv, words", [
    (["gate", "init"], "--candidate"),
    (["gate", "init", "--candidate", "tiktoken:cl100k_base", "--out", "x"], "--out"),
    (["gate", "init", "--candidate", "tiktoken:cl100k_base", "--reference", "tiktoken:cl100k_base"], "own reference"),
    (["gate", "ci/nightly.toml", "--candidate", "kitoken:o200k_base"], "gate init"),
    (["gate", "init", "--candidate", "nosuchadapter:cl100k_base"], "nosuchadapter"),
])
def test_init_usage_errors_are_one_line_and_exit_2(tmp_path, argv, words):
    proc = run_cli(*argv, cwd=None)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert words in line
