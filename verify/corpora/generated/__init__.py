"""The embedded default corpus: a deterministic, seeded text generator.

Every document is built from its own RNG, ``random.Random(f"{seed}:{index}")``,
so ``generate_one(seed, index)`` rebuilds any document of a run on its own; the
per-seed word lists come from ``random.Random(f"{seed}:vocab:{script}")``. Only
string-seeded ``random.Random`` (seeded through SHA-512, not ``hash()``),
literal tables and insertion-ordered containers are used, so the output is the
same in every process for the same arguments.

All text is invented here: words are strings of letters drawn from each
script's code-point ranges, code comes from small templates with random
identifiers. Nothing is copied from third-party text.

A document is one or more *parts*, each of a content kind picked from ``KINDS``
by weight. About 5% of documents are segmented chat / fill-in-the-middle
samples whose structural markers are ``allow_special=True`` segments.
``long_documents`` extra documents of 120k-300k characters sit at evenly spread
indices (``long_document_indices``).

Bump ``GENERATOR_VERSION`` whenever the output for a given seed changes.

Where things live (everything is re-exported here, so import from
``verify.corpora.generated``):

- ``scripts``: per-script letter tables, word builders, ``SCRIPTS``, the per-seed
  vocabularies and ``Gen``, a document's RNG plus the shared text helpers;
- ``kinds_text``: the text-like content kinds (prose, numbers, ids, whitespace,
  emoji, combining marks, control characters, contractions, special-token
  literals, Unicode soup, tiny texts) and their tables;
- ``kinds_code``: the code-template and JSON content kinds;
- ``kinds``: ``Kind`` and the weighted ``KINDS`` table;
- ``documents``: regular, chat / FIM and long documents, and the public API
  (``generate``, ``generate_one``, ``long_document_indices``, ``sample_id``,
  ``parse_sample_id``, ``describe``, ``GENERATOR_VERSION``).
"""

from verify.corpora.generated.scripts import (  # noqa: F401
    ACCENTED_CODAS, ACCENTED_NUCLEI, ARABIC, ARMENIAN, Abugida, BENGALI, CYRILLIC, DEVANAGARI, ETHIOPIC,
    GEORGIAN, GREEK, Gen, HAN, HANGUL, HEBREW, HIRAGANA, KATAKANA, LATIN_CODAS, LATIN_NUCLEI,
    LATIN_ONSETS, SCRIPTS, SCRIPT_BY_NAME, SCRIPT_WEIGHTS, Script, TAMIL, THAI_CONSONANTS,
    THAI_LEADING_VOWELS, THAI_TONES, THAI_VOWELS, VOCABULARY_SIZE, _SCRIPT_CUM_WEIGHTS, _accented_word,
    _arabic_word, _capitalize, _chars, _greek_word, _japanese_word, _latin_word, _letters_word,
    _thai_word, _vocabulary,
)
from verify.corpora.generated.kinds_text import (  # noqa: F401
    ASCII_WHITESPACE, COMBINING_MARKS, CONTRACTION_BASES, CONTRACTION_SUFFIXES, CONTROL_CHARS, EMOJI,
    EMOJI_OBJECTS, EMOJI_PEOPLE, KEYCAP, NON_ASCII_DIGITS, REGIONAL_INDICATORS, SCRIPT_MARKS,
    SKIN_TONES, SPACE_LIKE, SPECIAL_NEAR_MISSES, SPECIAL_TOKEN_LITERALS, SYMBOL_MARKS,
    TEXT_DEFAULT_EMOJI, UNICODE_SPACES, VS15, VS16, ZWJ, _SOUP_RANGES, _digits, _emoji, _grouped,
    _identifier, _number, _vary_case, _whitespace_run, kind_combining, kind_contractions, kind_control,
    kind_emoji, kind_ids, kind_mixed_prose, kind_numbers, kind_prose, kind_special_literals, kind_tiny,
    kind_unicode_soup, kind_whitespace,
)
from verify.corpora.generated.kinds_code import (  # noqa: F401
    CODE_TEMPLATES, _LEADING_INDENT, _PLACEHOLDER, _code_snippet, _fill_template, _json_scalar,
    _json_value, kind_code, kind_json,
)
from verify.corpora.generated.kinds import (  # noqa: F401
    KINDS, Kind, _KIND_WEIGHTS,
)
from verify.corpora.generated.documents import (  # noqa: F401
    CHAT_FRACTION, CRLF_FRACTION, GENERATOR_VERSION, LONG_DOCUMENT_MIN_CHARS, LONG_KINDS,
    _chat_segments, _long_code, _long_document, _long_mixed, _long_run, _mixed_text, _regular_document,
    _user_text, describe, generate, generate_one, long_document_indices, parse_sample_id, sample_id,
)
from verify.sample import Sample, Segment  # noqa: F401  (importable from the old single module)
