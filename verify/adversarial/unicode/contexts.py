"""What the Unicode-table sweep probes: the code-point range and the probe contexts.

``CONTEXTS`` are the templates each code point is put into (one probe per
context), chosen so that a GPT-style pre-tokenizer regex asks a different
question about the code point in each. ``WHITESPACE_LIKE`` lists the code points
some engine or other counts as whitespace: mismatches there are reported apart,
as a different *definition* of whitespace rather than a table version.
``code_points`` is the swept range (surrogates excluded); ``SEP`` joins probes
into packed samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.unicode_tables.whitespace import MAX_CP, WHITESPACE_LIKE, whitespace_like_mask

SURROGATES = (0xD800, 0xDFFF)
SEP = "\n\n"

__all__ = ["CONTEXTS", "Context", "MAX_CP", "SEP", "SURROGATES", "WHITESPACE_LIKE", "code_points",
           "whitespace_like_mask"]


@dataclass(frozen=True)
class Context:
    name: str
    template: str  # "{c}" marks the code point
    why: str


# Each probe puts the code point where a GPT-style pre-tokenizer regex asks a
# different question about it (cl100k / o200k / llama3 / gpt2 patterns).
CONTEXTS: tuple[Context, ...] = (
    Context("alone", "{c}", "start and end of text: `\\s+(?!\\S)` at the end, the character's own merges"),
    Context("in-word", "a{c}b", "inside a lowercase letter run: is it in \\p{L} (or \\p{M} for o200k), Ll vs Lu runs"),
    Context("after-upper", "A{c}", "after an uppercase letter: o200k's [\\p{Lu}\\p{Lt}...]*[\\p{Ll}...]+ case runs"),
    Context("prefix", "{c}a", "as the optional one-character prefix of a letter run: [^\\r\\n\\p{L}\\p{N}]?\\p{L}+"),
    Context("in-number", "1{c}2", "inside a digit run: is it in \\p{N}; \\p{N}{1,3} chunking"),
    Context("spaced", " {c} ", "after the optional space ` ?` and before a space: the whitespace class, \\s+(?!\\S)"),
    Context("contraction", "'{c}a", "after an apostrophe: (?i:'s|'t|...) case folding (U+017F folds to s), apostrophe prefix"),
    Context("run", "{c}{c}{c}{c}", "a run of it: + quantifiers, \\p{N}{1,3} splitting four digits"),
    Context("after-newline", "\n{c}", "after a newline: the [\\r\\n] class, \\s*[\\r\\n]+, [^\\r\\n...] exclusions (U+0085, U+2028)"),
    Context("before-newline", "{c}\n\n", "before a newline: punctuation runs absorb trailing newlines "
            "([\\r\\n]* in cl100k, [\\r\\n/]* in o200k), letter runs do not"),
    Context("in-punct", ".{c}.", "between punctuation: membership of the ` ?[^\\s\\p{L}\\p{N}]+` run"),
    Context("space-before-letter", " {c}a", "space, then it, then a letter: whitespace-or-not decides whether "
            "the space joins it (` ?[^\\s...]`) or stays behind (`\\s+(?!\\S)`); U+180E lives here"),
    Context("spaces-before", "  {c}", "two spaces before it: the last-space-joins-the-next-word rule of `\\s+(?!\\S)`"),
)

def code_points(start: int = 0, stop: int = MAX_CP + 1) -> np.ndarray:
    """All code points in ``[start, stop)`` except the surrogates."""
    cps = np.arange(max(0, start), min(stop, MAX_CP + 1), dtype=np.int64)
    return cps[(cps < SURROGATES[0]) | (cps > SURROGATES[1])]
