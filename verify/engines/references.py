"""The reference for a vocabulary: which trusted engine a candidate on it must agree with.

    reference_for("kitoken:o200k_base", "o200k_base") -> "tiktoken-o200k"
    reference_for("python:mypkg:make", None) -> ConfigError (say --reference)

engines/reference.toml's first engine on the vocabulary (then ``MORE_REFERENCES``), else the
reference adapter of the vocabulary's kind -- never the candidate's own adapter and options.
"""

from __future__ import annotations

from verify.errors import ConfigError

REFERENCE_ADAPTER_BY_KIND = {"tiktoken": "tiktoken", "hf-json": "hf", "tekken-json": "tekken",
                             "sentencepiece": "sentencepiece"}
# After engines/reference.toml: the references of `verify sweep` (tekken, SentencePiece).
MORE_REFERENCES = ("tekken-tekken", "sentencepiece-spm-v3")


def same_engine(a, b) -> bool:
    """Two parsed specs that build the same engine (adapter, target, options)."""
    return (a.adapter, a.target, a.options) == (b.adapter, b.target, b.options)


def reference_for(spec: str, vocab: str | None) -> str:
    """The reference for ``spec``, a candidate on vocabulary ``vocab`` (a known name or a path)."""
    from verify.config import declared, named_engines
    from verify.engines.registry import parse_spec
    from verify.toml_config import read_toml
    from verify.vocab.known import KNOWN_VOCABS

    if not vocab:
        raise ConfigError(f"cannot tell which vocabulary {spec} uses: name the tokenizer it must match "
                          f"with --reference SPEC (e.g. tiktoken:cl100k_base, hf:path/tokenizer.json)")
    mine = parse_spec(spec)
    named = named_engines()
    listed = list(read_toml(declared("engines", "reference.toml"), missing_ok=True).get("engine", {}))
    for name in [*listed, *MORE_REFERENCES]:
        candidate = named.get(name)
        if candidate is not None and candidate.target == vocab and not same_engine(candidate, mine) \
                and candidate.adapter != mine.adapter:
            return name
    known = KNOWN_VOCABS.get(vocab)
    adapter = REFERENCE_ADAPTER_BY_KIND.get(getattr(known, "kind", ""))
    if adapter and adapter != mine.adapter:
        return f"{adapter}:{vocab}"
    raise ConfigError(f"no reference is known for vocabulary '{vocab}' of {spec}: name one with --reference SPEC")


def default_reference(spec: str) -> str | None:
    """The reference for ``spec`` when its spec names a known vocabulary (no engine is loaded),
    else None (a plugin, a file path: the caller asks for --reference or goes without)."""
    from verify.engines.registry import parse_spec
    from verify.vocab.known import KNOWN_VOCABS

    try:
        target = parse_spec(spec).target
        return reference_for(spec, target) if target in KNOWN_VOCABS else None
    except Exception:  # an unknown engine, or no reference for its vocabulary: none by default
        return None
