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
NOT_CATALOGUED = {"tiktoken", "hf", "python", "subprocess", "http", "repair", "naive", "concat", "faulty",
                   "maturin"}


def third_party() -> list[str]:
    return sorted(name for name, entry in adapters().items() if name not in NOT_CATALOGUED and entry.installed())


def loads(name: str) -> dict[str, str | None]:
    """vocabulary -> None when adapter ``name`` loads it here, else why not."""
    found = {}
    for target in REFERENCE_VOCABULARIES:
        try:
            engine = build_engine(f"{name}:{target}")
            close = getattr(engine, "close", None)
            if callable(close):
                close()
            found[target] = None
        except Exception as exc:  # refused or failed: it does not load this vocabulary here
            found[target] = f"{type(exc).__name__}: {exc}"
    return found


@pytest.mark.parametrize("name", third_party())
def test_the_rows_of_an_adapter_are_exactly_what_it_loads(name):
    """Per adapter (the loads are the cost; the workers share the adapters): every vocabulary
    it loads offline has a row, no row names one it does not load, and its ``OFFLINE_VOCABS``
    say exactly what it loads."""
    loaded = loads(name)
    rows = {s.target for s in named_engines().values() if s.adapter == name}
    real = {target for target, why in loaded.items() if why is None}
    assert not sorted(real - rows), f"loads offline but engines/thirdparty.toml has no row: {sorted(real - rows)}"
    broken = {target: loaded[target] for target in rows if target in loaded and loaded[target] is not None}
    assert not broken, f"rows that do not load here: {broken}"
    module = importlib.import_module(adapters()[name].target.split(":")[0])
    declared = set(getattr(module, "OFFLINE_VOCABS", ())) & set(REFERENCE_VOCABULARIES)
    assert declared == real, {"declared, does not load": sorted(declared - real),
                              "loads, not declared": sorted(real - declared)}
