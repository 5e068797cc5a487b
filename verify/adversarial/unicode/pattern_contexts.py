"""Probe contexts derived from a vocabulary's pre-tokenizer patterns.

A class change of a code point X (letter in one table, symbol in another) is only
visible where it moves a pre-token boundary in a way that changes token ids. Two
kinds of context make that happen:

* Structural: a neighbour whose OWN tokens change with X's class, whatever X's
  bytes -- digits regroup under ``\\p{N}{1,3}`` when X is a number ("X123" gives
  "X12"+"3" instead of "123"), a space run splits differently under ``\\s+(?!\\S)``
  when X is whitespace, a contraction matches or not through case folding, a
  case run (o200k) ends or goes on. ``structural_contexts(features)`` lists the
  ones each pattern's alternatives ask for, each with the regex question it asks.
* Merges: a neighbour that shares a vocabulary entry with X's bytes, so that
  joining or splitting them changes the merge (``verify.adversarial.unicode.neighbours``).

``features(patterns)`` reads which classes and constructs the patterns use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from verify.adversarial.unicode.contexts import Context

FEATURES = ("letters", "cased", "marks", "numbers_grouped", "numbers_run", "numbers_single", "punct_symbol",
            "whitespace", "whitespace_lookahead", "newlines", "prefix", "optional_space", "contractions",
            "folded_contractions", "slash")


@dataclass(frozen=True)
class PatternFeatures:
    names: frozenset[str]

    def __contains__(self, name: str) -> bool:
        return name in self.names


def features(regexes: Iterable[str]) -> PatternFeatures:
    found: set[str] = set()
    for rx in regexes:
        if re.search(r"\\p\{L[ultmo]?\}", rx):
            found.add("letters")
        if re.search(r"\\p\{L[ut]\}", rx):
            found.add("cased")
        if "\\p{M}" in rx:
            found.add("marks")
        if re.search(r"\\p\{N\}\{1,3\}", rx):
            found.add("numbers_grouped")
        elif re.search(r"\\p\{N\}\+", rx):
            found.add("numbers_run")
        elif "\\p{N}" in rx:
            found.add("numbers_single")
        if "\\p{P}" in rx or "\\p{S}" in rx:
            found.add("punct_symbol")
        if "\\s" in rx:
            found.add("whitespace")
        if "(?!\\S)" in rx:
            found.add("whitespace_lookahead")
        if "\\r\\n" in rx or "\r\n" in rx:
            found.add("newlines")
        if re.search(r"\[\^\\?r?\\?n?[^\]]*\\p\{L\}[^\]]*\]\?", rx) or re.search(r"\[\^\r\n", rx):
            found.add("prefix")
        if " ?" in rx:
            found.add("optional_space")
        if "'s" in rx or "'(?" in rx:
            found.add("contractions")
        if "(?i:" in rx:
            found.add("folded_contractions")
        if "/]" in rx:
            found.add("slash")
    return PatternFeatures(frozenset(found))


def _c(name: str, template: str, why: str) -> Context:
    return Context(name, template, why)


# Asked of every pattern: the code point's own merges, a run of it, the optional space.
ALWAYS = (
    _c("alone", "{c}", "start and end of text: `\\s++$` / `\\s+(?!\\S)` at the end, the character's own merges"),
    _c("run", "{c}{c}{c}{c}", "a run of it: do `+` quantifiers keep it in one pre-token (`\\p{N}{1,3}` splits four)"),
    _c("spaced", " {c}", "after a space: ` ?` joins a space to letters, numbers (GPT-2) and punctuation, "
                         "never to whitespace"),
)

BY_FEATURE: dict[str, tuple[Context, ...]] = {
    "letters": (
        _c("in-word", "a{c}b", "inside a lowercase letter run: is it in \\p{L} (else the run ends at it)"),
        _c("after-word", "ab{c}", "after a letter run: joins it only as a letter (or mark)"),
    ),
    "cased": (
        _c("after-upper", "A{c}", "after an uppercase letter: o200k's `[\\p{Lu}\\p{Lt}..]*[\\p{Ll}..]+` case runs"),
        _c("upper-run", "AB{c}c", "in an uppercase run before a lowercase letter: is it Lu/Lt (run goes on) or Ll"),
        _c("before-upper", "a{c}B", "between lower and upper: Ll ends a run before B, Lu starts the next"),
        _c("title", "{c}bc", "starting a word: a lowercase tail makes `[Lu..]*[Ll..]+` one pre-token either way "
                             "unless it is no letter"),
    ),
    "marks": (
        _c("after-letter", "e{c}", "after a base letter: \\p{M} continues letter runs (o200k, DeepSeek)"),
        _c("mark-in-word", "ab{c}cd", "inside a word: a mark keeps the word one pre-token"),
    ),
    "numbers_grouped": (
        _c("digits-after", "{c}123", "before three digits: as \\p{N} it takes the first place of `\\p{N}{1,3}`, "
                                     "so \"123\" regroups into \"12\"+\"3\""),
        _c("digits-around", "1{c}23", "inside a digit run: `\\p{N}{1,3}` groups differ when it is a number"),
    ),
    "numbers_run": (
        _c("digit-before", "1{c}", "after a digit: ` ?\\p{N}+` joins numbers into one pre-token"),
        _c("digit-after", "{c}2", "before a digit: the same, from the other side"),
    ),
    "numbers_single": (
        _c("digit-pair", "{c}1", "before a digit: single `\\p{N}` splits every number; as punctuation it stays "
                                 "alone too, as a letter it may take a prefix"),
    ),
    "punct_symbol": (
        _c("after-punct", ".{c}", "after punctuation: ` ?[\\p{P}\\p{S}]+` runs join punctuation and symbols only"),
        _c("punct-newline", "{c}\n", "before a newline: punctuation runs absorb `[\\r\\n]*`, other classes not"),
    ),
    "whitespace": (
        _c("spaces-before", "  {c}a", "two spaces then it then a letter: whitespace makes a three-space run "
                                      "(`\\s+(?!\\S)` leaves the last one), anything else takes one space"),
        _c("space-before-letter", " {c}a", "space, it, letter: whitespace-or-not decides whether the space joins it "
                                           "(` ?[^\\s...]`) or stays behind (`\\s+(?!\\S)`); U+180E lives here"),
        _c("spaced-both", " {c} ", "between spaces: a whitespace run, or a word with spaces around"),
    ),
    "whitespace_lookahead": (
        _c("spaces-end", "  {c}", "two spaces before it at the end: `\\s++$` takes all when it is whitespace"),
    ),
    "newlines": (
        _c("after-newline", "\n{c}", "after a newline: `\\s*[\\r\\n]+` and the [\\r\\n] exclusions of the prefix class"),
        _c("before-newline", "{c}\n\n", "before newlines: punctuation runs absorb trailing newlines "
                                        "(`[\\r\\n]*`), letter runs and whitespace runs do not"),
    ),
    "prefix": (
        _c("before-punct-word", "{c}.get", "before punctuation and a word: as punctuation it keeps \".\" in its own "
                                          "run (\"X.\" + \"get\"), otherwise \".\" is the prefix of the word (\".get\")"),
        _c("before-underscore-word", "{c}_id", "the same with an underscore, a prefix of identifiers"),
        _c("prefix", "{c}ab", "as the optional one-character prefix of a letter run: `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`"),
        _c("punct-prefix", ".{c}ab", "after punctuation, before letters: a letter joins \"ab\", punctuation joins "
                                     "\".\", whitespace is the prefix of \"ab\""),
    ),
    "contractions": (
        _c("before-contraction", "{c}'s", "before 's: a contraction (or o200k's word suffix) after a letter, "
                                          "but \"X'\" + \"s\" when it is punctuation"),
        _c("contraction", "'{c}a", "after an apostrophe: (?i:'s|'t|...) and the apostrophe as a prefix"),
        _c("contraction-end", "a'{c}", "after a word and an apostrophe: is \"'X\" a contraction"),
    ),
    "slash": (
        _c("punct-slash", "{c}/", "before a slash: o200k's ` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*` takes slashes after "
                                  "punctuation only"),
    ),
}

# Code points whose category is the same in every known Unicode version (stable tier): one
# context per class question.
FOR_STABLE = ("alone", "spaced", "in-word", "run", "digits-after", "digit-before", "digit-pair", "spaces-before",
              "space-before-letter", "before-punct-word", "before-contraction", "after-punct", "prefix",
              "after-upper", "upper-run", "after-letter", "after-newline", "punct-newline")
# Code points no known version assigns, private use, noncharacters (cheap tier): only an
# engine bug moves them; each of these asks a class question that shows whatever the bytes.
FOR_UNASSIGNED = ("spaced", "digits-after", "digit-before", "spaces-before", "before-punct-word")


def structural_contexts(feats: PatternFeatures) -> list[Context]:
    """The contexts the pattern's alternatives ask for, ``ALWAYS`` first, no name twice."""
    chosen: dict[str, Context] = {c.name: c for c in ALWAYS}
    for name in FEATURES:
        if name in feats:
            for context in BY_FEATURE.get(name, ()):
                chosen.setdefault(context.name, context)
    return list(chosen.values())
