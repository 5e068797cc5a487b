"""Every place ``verify fuzz`` reaches past hypothesis' public API, in one module.

A shard's search must follow from its descriptor alone (the same examples in the CLI, a shard
worker and a Ray actor), and its saved examples must replay for the same pool in the next run.
Hypothesis' public API gives neither: ``hypothesis.seed`` turns the example database off, and
its draws mix in constants read from the source of every *local* module the process imported.
So three private hooks are used, each named here:

    without_local_constants()          no local constants while a search runs (global ones stay)
    key_examples_by(check, digest)     the example-database key of a test function
    seed_keeping_database(test, seed)  ``hypothesis.seed``'s effect, the database kept

``pyproject.toml`` pins hypothesis below its next major version, and
``tests/test_hypothesis_internals.py`` fails when a minor release moves any of these hooks
(``missing_hooks()`` lists what moved) -- so an upgrade that breaks determinism is a failed
test, not a search that quietly draws differently per process.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

try:
    from hypothesis.internal.conjecture import providers
except ImportError:  # pragma: no cover - a hypothesis without the module: missing_hooks() says so
    providers = None

DATABASE_KEY_ATTR = "_hypothesis_internal_add_digest"
SEED_ATTR = "_hypothesis_internal_use_seed"


def missing_hooks() -> list[str]:
    """The private names this module relies on that the installed hypothesis lacks ([] = all there)."""
    if providers is None:
        return ["hypothesis.internal.conjecture.providers"]
    return [f"providers.{name}" for name in ("_get_local_constants", "CONSTANTS_CACHE", "Constants")
            if not hasattr(providers, name)]


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis mixes constants found in the process's imported *local* modules (those outside
    site-packages and the standard library) into what it draws and shrinks to; which modules a
    worker has imported depends on the worker, so a search would too. Inside this block that pool
    is empty (hypothesis' own constants stay), so a shard draws the same examples in any process."""
    if missing_hooks():
        yield
        return
    original, cache = providers._get_local_constants, providers.CONSTANTS_CACHE
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # constants cached for draws before this search
    try:
        yield
    finally:
        providers._get_local_constants = original
        cache.cache.clear()


def key_examples_by(check: Callable[..., Any], digest: bytes) -> None:
    """Saved examples of ``check`` are stored and replayed under ``digest`` (not its source's hash)."""
    setattr(check, DATABASE_KEY_ATTR, digest)


def seed_keeping_database(test: Callable[..., Any], seed: int) -> None:
    """The search of ``test`` draws from ``seed``, as ``hypothesis.seed`` sets it, but keeping the
    example database (``seed()`` and ``derandomize`` turn it off; here the database is part of
    what a shard reads)."""
    setattr(test, SEED_ATTR, seed)
