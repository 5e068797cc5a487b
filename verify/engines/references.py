"""The reference for a vocabulary: which trusted engine a candidate on it must agree with.

    reference_for(kitoken:o200k_base, "o200k_base") -> tiktoken-o200k (parsed specs, named or not)
    reference_for("python:mypkg:make", None) -> ConfigError (say --reference)

engines/reference.toml's first engine on the vocabulary (then ``MORE_REFERENCES``), else the
reference adapter of the vocabulary's kind -- never the candidate's own adapter and options.
"""

from __future__ import annotations

from verify.engine_spec import EngineSpec
from verify.errors import ConfigError

REFERENCE_ADAPTER_BY_KIND = {"tiktoken": "tiktoken", "hf-json": "hf", "tekken-json": "tekken",
                             "sentencepiece": "sentencepiece"}
# After engines/reference.toml: the references of `verify sweep` (tekken, SentencePiece).
MORE_REFERENCES = ("tekken-tekken", "sentencepiece-spm-v3")


def reference_for(spec: EngineSpec, vocab: str | None) -> EngineSpec:
    """The reference for ``spec``, a candidate on vocabulary ``vocab`` (a known name or a path)."""
    from verify.config import declared, named_engines
    from verify.toml_config import read_toml
    from verify.vocab.known import KNOWN_VOCABS

    if not vocab:
        raise ConfigError(f"cannot tell which vocabulary {spec} uses: name the tokenizer it must match "
                          f"with --reference SPEC (e.g. tiktoken:cl100k_base, hf:path/tokenizer.json)")
    named = named_engines()
    listed = list(read_toml(declared("engines", "reference.toml"), missing_ok=True).get("engine", {}))
    for name in [*listed, *MORE_REFERENCES]:
        candidate = named.get(name)
        if candidate is not None and candidate.target == vocab and not candidate.builds_same_engine(spec) \
                and candidate.adapter != spec.adapter:
            return candidate
    known = KNOWN_VOCABS.get(vocab)
    adapter = REFERENCE_ADAPTER_BY_KIND.get(getattr(known, "kind", ""))
    if adapter and adapter != spec.adapter:
        return EngineSpec(adapter, vocab, {}, f"{adapter}:{vocab}")
    raise ConfigError(f"no reference is known for vocabulary '{vocab}' of {spec}: name one with --reference SPEC")


def default_reference(spec: EngineSpec) -> EngineSpec | None:
    """The reference for ``spec`` when its spec names a known vocabulary (no engine is loaded),
    else None (a plugin, a file path: the caller asks for --reference or goes without)."""
    from verify.vocab.known import KNOWN_VOCABS

    if spec.target not in KNOWN_VOCABS:
        return None
    try:
        return reference_for(spec, spec.target)
    except ConfigError:  # no reference for its vocabulary: none by default
        return None
