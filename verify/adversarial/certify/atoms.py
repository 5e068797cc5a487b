"""The alphabet of an engine spec's vocabulary (``verify.alphabet`` does the patterns): what
``verify certify`` enumerates over, read from the reference's files (``verify.vocab.inspect``)."""

from __future__ import annotations

from verify.alphabet import Alphabet, alphabet_of_vocabulary
from verify.engine_spec import EngineSpec
from verify.errors import UsageError
from verify.vocab.inspect import vocabulary_view


def alphabet_of(spec: EngineSpec) -> Alphabet:
    """The alphabet of ``spec``'s pattern, refined by its special-token literals and normalizer.
    One line, exit 2, when there is no pattern to read."""
    return alphabet_of_vocabulary(view_of(spec))


def patterns_of(spec: EngineSpec) -> list[str]:
    """The split patterns of ``spec``'s vocabulary."""
    return [p.regex for p in view_of(spec).patterns]


def view_of(spec: EngineSpec):
    try:
        view = vocabulary_view(spec.target, spec.options)
    except UsageError:
        raise
    except Exception as exc:  # an unknown vocabulary, a plugin target: no files of ours to read
        raise UsageError(f"cannot read the pre-tokenizer pattern of {spec!r} ({type(exc).__name__}: {exc}); "
                         "certify needs a reference whose vocabulary verify knows (e.g. tiktoken:cl100k_base)") from None
    if not view.patterns:
        raise UsageError(f"{spec} has no pre-tokenizer pattern (a {view.kind} vocabulary): certify has no alphabet "
                         "to enumerate")
    return view
