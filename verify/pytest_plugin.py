"""pytest plugin: assert tokenizer parity in a team's own test suite.

Installed with the harness (entry point ``pytest11: verify``), so a test only asks for
the fixtures:

    def test_parity(verify_engine, verify_reference):
        assert_same_ids(verify_engine, verify_reference, ["hello world", "naïve café 12345"])

Which engines, from the command line or the ini file (command line first):

    pytest --verify-engine python:mypkg.engines:make_engine --verify-reference tiktoken:cl100k_base

    [pytest]                                  # or [tool.pytest.ini_options] in pyproject.toml
    verify_engine = python:mypkg.engines:make_engine
    verify_reference = tiktoken:cl100k_base   # the default

Fixtures (session-scoped; engines are built once per spec and closed at the end):

- ``verify_reference``: the reference engine;
- ``verify_engine``: the engine under test (a test that asks for it with none configured
  errors with the reason, it is never skipped);
- ``verify_engine_factory``: ``build(spec) -> engine`` for any other spec.

``assert_same_ids`` (also importable from here) fails with the divergence record -- the
first differing token and both sides' ids and pieces -- and names every input it could not
compare (id, input, reason, remedy): see ``verify.testing``. docs/pytest-plugin.md has the
whole story.
"""

from __future__ import annotations

import pytest

from verify.testing import ParityError, assert_same_ids

__all__ = ["assert_same_ids", "ParityError"]

DEFAULT_REFERENCE = "tiktoken:cl100k_base"
OPTIONS = {  # ini name -> (command-line flag, help)
    "verify_reference": ("--verify-reference", f"reference engine spec for the verify fixtures (default "
                                               f"{DEFAULT_REFERENCE})"),
    "verify_engine": ("--verify-engine", "engine-under-test spec for the verify_engine fixture"),
}


def pytest_addoption(parser) -> None:
    group = parser.getgroup("verify", "tokenizer parity (verify harness)")
    for ini, (flag, text) in OPTIONS.items():
        group.addoption(flag, dest=ini, metavar="SPEC", default=None, help=text)
        parser.addini(ini, text, default=None)


def configured(config, name: str) -> str | None:
    """A spec from the command line, else the ini file, else ``None``."""
    value = str(config.getoption(name) or config.getini(name) or "").strip()
    return value or None


def pytest_report_header(config) -> list[str] | None:
    engine = configured(config, "verify_engine")
    reference = configured(config, "verify_reference") or DEFAULT_REFERENCE
    return [f"verify: engine {engine or '(none)'}, reference {reference}"] if engine else None


class EngineFactory:
    """Builds engines by spec, each once; closes them all at the end of the session."""

    def __init__(self):
        self._built: dict[str, object] = {}

    def __call__(self, spec: str):
        from verify.engines.registry import build_engine
        from verify.errors import VerifyError

        if spec not in self._built:
            try:
                self._built[spec] = build_engine(spec)
            except VerifyError as exc:
                pytest.fail(f"verify: cannot build engine '{spec}': {exc}", pytrace=False)
        return self._built[spec]

    def close(self) -> None:
        for engine in self._built.values():
            engine.close()
        self._built.clear()


@pytest.fixture(scope="session")
def verify_engine_factory():
    factory = EngineFactory()
    yield factory
    factory.close()


@pytest.fixture(scope="session")
def verify_reference(request, verify_engine_factory):
    return verify_engine_factory(configured(request.config, "verify_reference") or DEFAULT_REFERENCE)


@pytest.fixture(scope="session")
def verify_engine(request, verify_engine_factory):
    spec = configured(request.config, "verify_engine")
    if spec is None:
        pytest.fail("verify_engine: no engine configured; pass --verify-engine SPEC or set verify_engine in the "
                    "pytest ini options", pytrace=False)
    return verify_engine_factory(spec)
