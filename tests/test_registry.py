"""Engine specs, named engines, the lazy registry and third-party entry points."""

from types import SimpleNamespace

import pytest

from verify.engines import registry
from verify.engines.registry_entry import AdapterEntry
from verify.errors import ConfigError, EngineUnavailableError, UnknownEngineError


def test_spec_with_options_is_parsed_and_typed():
    spec = registry.parse_spec("basetenkenizer:cl100k_base?tiktoken_safe=false&chunk=400000&mode=fast")
    assert (spec.adapter, spec.target) == ("basetenkenizer", "cl100k_base")
    assert spec.options == {"tiktoken_safe": False, "chunk": 400000, "mode": "fast"}


def test_named_engine_from_engines_toml():
    spec = registry.parse_spec("hf-o200k")
    assert (spec.adapter, spec.target, spec.text) == ("hf", "o200k_base", "hf-o200k")


def test_unknown_name_lists_adapters_and_named_engines():
    with pytest.raises(UnknownEngineError) as err:
        registry.parse_spec("nonsense")
    assert "tiktoken" in str(err.value) and "hf-cl100k" in str(err.value)


def test_a_missing_dependency_names_the_install_hint():
    entry = AdapterEntry("ghost", "ghost_mod:Engine", "ghost_module_not_installed", "pip install ghost", "")
    assert not entry.installed()
    with pytest.raises(EngineUnavailableError, match="pip install ghost"):
        entry.load()


def _fake_entry_points(name, value):
    ep = SimpleNamespace(name=name, value=value, dist=SimpleNamespace(name="thirdparty-dist"))
    return lambda group: [ep] if group == registry.ENTRY_POINT_GROUP else []


def test_third_party_adapters_register_through_entry_points(monkeypatch):
    monkeypatch.setattr(registry.metadata, "entry_points", _fake_entry_points("mine", "verify.engines.fake:FakeEngine"))
    registry.adapters.cache_clear()
    try:
        from verify.engines.fake import FakeEngine
        from verify.sample import Sample

        engine = registry.build_engine("mine:bytes")
        # the entry point's class was loaded and built from the spec, and it encodes
        assert type(engine) is FakeEngine and engine.spec == "mine:bytes"
        assert engine.encode_batch([Sample.plain("s", "ab")])[0].tolist() == [97, 98]
        assert registry.adapters()["mine"].origin == "thirdparty-dist"
    finally:
        registry.adapters.cache_clear()


def test_a_third_party_name_cannot_override_a_builtin(monkeypatch):
    monkeypatch.setattr(registry.metadata, "entry_points", _fake_entry_points("tiktoken", "evil:Engine"))
    registry.adapters.cache_clear()
    try:
        with pytest.raises(ConfigError, match="would override"):
            registry.adapters()
    finally:
        registry.adapters.cache_clear()


def test_listing_adapters_imports_no_engine():
    import subprocess
    import sys

    code = ("import sys; from verify.engines.registry import list_adapters; list_adapters(); "
            "print(sorted(m for m in sys.modules if m.endswith('_engine') or m in ('tiktoken', 'tokenizers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
