"""``verify fuzz`` reaches past hypothesis' public API in one module only, and the hooks it uses
are there: an upgrade that moves them fails here instead of making searches draw differently
per process."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import hypothesis
from hypothesis import given, settings, strategies as st
from packaging.requirements import Requirement
from packaging.version import Version

import verify
from verify.adversarial.fuzz import hypothesis_internals as internals

PACKAGE = Path(verify.__file__).resolve().parent
HOME = "adversarial/fuzz/hypothesis_internals.py"


def test_every_private_hook_the_fuzzer_uses_is_in_the_installed_hypothesis():
    assert internals.missing_hooks() == []


def test_the_declared_hypothesis_range_stops_before_the_next_major_and_admits_the_installed_one():
    declared = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["dependencies"]
    (requirement,) = [Requirement(d) for d in declared if Requirement(d).name == "hypothesis"]
    installed = Version(hypothesis.__version__)
    assert installed in requirement.specifier
    assert Version(f"{installed.major + 1}.0") not in requirement.specifier


def test_no_other_module_reaches_into_hypothesis_internals():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        source = path.read_text(encoding="utf-8")
        if rel != HOME and ("hypothesis.internal" in source or "_hypothesis_internal" in source):
            offenders.append(rel)
    assert not offenders


def _draws(seed: int) -> list[str]:
    seen: list[str] = []

    @settings(max_examples=20, database=None, derandomize=False)
    @given(st.text(max_size=8))
    def record(text):
        seen.append(text)

    internals.seed_keeping_database(record, seed)
    with internals.without_local_constants():
        record()
    return seen


def test_a_seeded_search_without_local_constants_draws_the_same_examples_twice():
    assert _draws(7) == _draws(7)


def test_the_local_constants_come_back_after_the_search():
    original = internals.providers._get_local_constants
    with internals.without_local_constants():
        assert internals.providers._get_local_constants is not original
    assert internals.providers._get_local_constants is original
