"""One catalogue: every installed adapter that loads a reference vocabulary offline has a row
in engines/*.toml (so ``verify sweep`` and ``--candidate all`` test it), no row names a
pair that does not load, and every adapter's ``OFFLINE_VOCABS`` (what ``verify engines``
prints) says exactly what it loads. Decided by loading, not by what anybody wrote down."""

from __future__ import annotations

import importlib

import pytest

from verify.config import named_engines
from verify.engines.registry import adapters, build_engine

pytestmark = pytest.mark.slow

REFERENCE_VOCABULARIES = ("cl100k_base", "o200k_base", "p50k_base", "deepseek-v3", "anthropic", "tekken",
                          "mistral-spm-v3")
NOT_CATALOGUED = {"tiktoken", "hf", "python", "subprocess", "http", "repair", "naive", "concat", "faulty"}


def third_party() -> list[str]:
    return sorted(name for name, entry in adapters().items() if name not in NOT_CATALOGUED and entry.installed())


@pytest.fixture(scope="module")
def loads() -> dict[tuple[str, str], str | None]:
    """(adapter, vocabulary) -> None when it loads here, else why not."""
    found = {}
    for name in third_party():
        for target in REFERENCE_VOCABULARIES:
            try:
                engine = build_engine(f"{name}:{target}")
                close = getattr(engine, "close", None)
                if callable(close):
                    close()
                found[(name, target)] = None
            except Exception as exc:  # refused or failed: it does not load this vocabulary here
                found[(name, target)] = f"{type(exc).__name__}: {exc}"
    return found


def test_every_adapter_that_loads_a_reference_has_a_row(loads):
    rows = {(s.adapter, s.target) for s in named_engines().values()}
    missing = sorted(pair for pair, why in loads.items() if why is None and pair not in rows)
    assert not missing, f"loads offline but engines/thirdparty.toml has no row: {missing}"


def test_no_row_names_a_pair_that_does_not_load(loads):
    rows = {(s.adapter, s.target) for s in named_engines().values()}
    broken = {pair: loads[pair] for pair in rows if pair in loads and loads[pair] is not None}
    assert not broken, f"rows that do not load here: {broken}"


@pytest.mark.parametrize("name", third_party())
def test_offline_vocabs_say_what_the_adapter_loads(name, loads):
    module = importlib.import_module(adapters()[name].target.split(":")[0])
    declared = set(getattr(module, "OFFLINE_VOCABS", ())) & set(REFERENCE_VOCABULARIES)
    real = {target for (adapter, target), why in loads.items() if adapter == name and why is None}
    assert declared == real, {"declared, does not load": sorted(declared - real),
                              "loads, not declared": sorted(real - declared)}
