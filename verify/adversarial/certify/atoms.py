"""The alphabet of an engine spec's vocabulary (``verify.alphabet`` does the patterns): what
``verify certify`` enumerates over, read from the reference's files (``verify.vocab.inspect``)."""

from __future__ import annotations

from verify.alphabet import Alphabet, alphabet_of_vocabulary
from verify.engines.registry import parse_spec
from verify.errors import UsageError
from verify.vocab.inspect import vocabulary_view


def alphabet_of(spec: str) -> Alphabet:
    """The alphabet of ``spec``'s pattern, refined by its special-token literals and normalizer.
    One line, exit 2, when there is no pattern to read."""
    return alphabet_of_vocabulary(view_of(spec))


def patterns_of(spec: str) -> list[str]:
    """The split patterns of ``spec``'s vocabulary."""
    return [p.regex for p in view_of(spec).patterns]


def view_of(spec: str):
    try:
        parsed = parse_spec(spec)
        view = vocabulary_view(parsed.target, parsed.options)
    except UsageError:
        raise
    except Exception as exc:  # an unknown vocabulary, a plugin target: no files of ours to read
        raise UsageError(f"cannot read the pre-tokenizer pattern of {spec!r} ({type(exc).__name__}: {exc}); "
                         "certify needs a reference whose vocabulary verify knows (e.g. tiktoken:cl100k_base)") from None
    if not view.patterns:
        raise UsageError(f"{spec} has no pre-tokenizer pattern (a {view.kind} vocabulary): certify has no alphabet "
                         "to enumerate")
    return view
