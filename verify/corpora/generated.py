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
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import random
import re
import textwrap
import unicodedata
from dataclasses import dataclass
from typing import Callable, Iterator

from verify.sample import Sample, Segment

GENERATOR_VERSION = 1

LONG_DOCUMENT_MIN_CHARS = 120_000


def _chars(*ranges: int | tuple[int, int], exclude: tuple[int, ...] = ()) -> str:
    """Characters of the given code points and inclusive (first, last) ranges."""
    out = []
    for r in ranges:
        first, last = (r, r) if isinstance(r, int) else r
        out.extend(chr(c) for c in range(first, last + 1) if c not in exclude)
    return "".join(out)


# --------------------------------------------------------------------------
# Scripts: how to build a word, and how words and sentences are punctuated.
# --------------------------------------------------------------------------

LATIN_ONSETS = ("", "b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m",
                "n", "p", "pl", "qu", "r", "s", "sh", "sk", "st", "t", "th", "tr", "v", "w", "y", "z")
LATIN_NUCLEI = ("a", "e", "i", "o", "u", "y", "ai", "ea", "ee", "io", "oo", "ou")
LATIN_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "nd", "ng", "ck", "st", "x", "rt")
ACCENTED_NUCLEI = ("a", "e", "i", "o", "u", "à", "â", "ä", "é", "è", "ê", "ë", "î", "ï", "ô", "ö", "ù",
                   "û", "ü", "ÿ", "œ", "æ", "á", "í", "ó", "ú", "ã", "õ", "ă", "ơ", "ư", "ạ", "ả",
                   "ấ", "ầ", "ẩ", "ẫ", "ậ", "ắ", "ằ", "ẳ", "ẵ", "ặ", "ẹ", "ẻ", "ẽ", "ế", "ề", "ể",
                   "ễ", "ệ", "ỉ", "ị", "ọ", "ỏ", "ố", "ồ", "ổ", "ỗ", "ộ", "ớ", "ờ", "ở", "ỡ", "ợ",
                   "ụ", "ủ", "ứ", "ừ", "ử", "ữ", "ự", "ỳ", "ỵ", "ỷ", "ỹ")
ACCENTED_CODAS = LATIN_CODAS + ("ß", "ç", "ñ", "đ", "tz", "ch")

CYRILLIC = _chars((0x0430, 0x044F), 0x0451, 0x0454, 0x0456, 0x0457, 0x0491)
GREEK = _chars((0x03B1, 0x03C9), 0x03AC, 0x03AD, 0x03AE, 0x03AF, 0x03CC, 0x03CD, 0x03CE, exclude=(0x03C2,))
ARABIC = _chars((0x0621, 0x063A), (0x0641, 0x064A))
HEBREW = _chars((0x05D0, 0x05EA))
GEORGIAN = _chars((0x10D0, 0x10F0))
ARMENIAN = _chars((0x0561, 0x0586))
ETHIOPIC = _chars((0x1200, 0x1246))
HANGUL = _chars((0xAC00, 0xD7A3))
HAN = _chars((0x4E00, 0x9FA5))
HIRAGANA = _chars((0x3041, 0x3096))
KATAKANA = _chars((0x30A1, 0x30FA))


@dataclass(frozen=True)
class Abugida:
    """Consonants carry vowel signs; a virama joins consonants into clusters."""

    consonants: str
    vowel_signs: str
    independent_vowels: str
    virama: str
    extras: str = ""  # anusvara and similar signs that may end a syllable

    def word(self, rng: random.Random) -> str:
        out = [rng.choice(self.independent_vowels)] if rng.random() < 0.2 else []
        for _ in range(rng.randint(1, 4)):
            out.append(rng.choice(self.consonants))
            roll = rng.random()
            if roll < 0.15:
                out.append(self.virama + rng.choice(self.consonants))
            if roll < 0.7:
                out.append(rng.choice(self.vowel_signs))
            if self.extras and rng.random() < 0.1:
                out.append(rng.choice(self.extras))
        return "".join(out)


DEVANAGARI = Abugida(_chars((0x0915, 0x0939)), _chars((0x093E, 0x094C)), _chars((0x0905, 0x0914)),
                     "\u094d", _chars(0x0902, 0x0901))
BENGALI = Abugida(_chars((0x0995, 0x09B9), exclude=(0x09A9, 0x09B1, 0x09B3, 0x09B4, 0x09B5)),
                  _chars((0x09BE, 0x09C4), 0x09C7, 0x09C8, 0x09CB, 0x09CC),
                  _chars((0x0985, 0x098C), 0x098F, 0x0990, 0x0993, 0x0994), "\u09cd", _chars(0x0982))
TAMIL = Abugida(_chars(0x0B95, 0x0B99, 0x0B9A, 0x0B9E, 0x0B9F, 0x0BA3, 0x0BA4, 0x0BA8, 0x0BAA, 0x0BAE,
                       0x0BAF, 0x0BB0, 0x0BB2, 0x0BB5, 0x0BB4, 0x0BB3, 0x0BB1, 0x0BA9),
                _chars((0x0BBE, 0x0BC2), (0x0BC6, 0x0BC8), (0x0BCA, 0x0BCC)),
                _chars((0x0B85, 0x0B8A), (0x0B8E, 0x0B90), (0x0B92, 0x0B94)), "\u0bcd")

THAI_CONSONANTS = _chars((0x0E01, 0x0E2E))
THAI_LEADING_VOWELS = _chars((0x0E40, 0x0E44))
THAI_VOWELS = _chars(0x0E30, 0x0E31, 0x0E32, 0x0E33, (0x0E34, 0x0E39))
THAI_TONES = _chars((0x0E48, 0x0E4B))


def _letters_word(letters: str, lo: int, hi: int) -> Callable[[random.Random], str]:
    return lambda rng: "".join(rng.choices(letters, k=rng.randint(lo, hi)))


def _latin_word(rng: random.Random) -> str:
    return "".join(rng.choice(LATIN_ONSETS) + rng.choice(LATIN_NUCLEI) + rng.choice(LATIN_CODAS)
                   for _ in range(rng.choice((1, 1, 1, 2, 2, 3))))


def _accented_word(rng: random.Random) -> str:
    return "".join(rng.choice(LATIN_ONSETS) + rng.choice(ACCENTED_NUCLEI) + rng.choice(ACCENTED_CODAS)
                   for _ in range(rng.choice((1, 1, 2, 2, 3))))


def _greek_word(rng: random.Random) -> str:
    word = "".join(rng.choices(GREEK, k=rng.randint(2, 9)))
    return word[:-1] + "ς" if word.endswith("σ") else word


def _arabic_word(rng: random.Random) -> str:
    word = "".join(rng.choices(ARABIC, k=rng.randint(2, 7)))
    return "ال" + word if rng.random() < 0.3 else word


def _thai_word(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            out.append(rng.choice(THAI_LEADING_VOWELS))
        out.append(rng.choice(THAI_CONSONANTS))
        if rng.random() < 0.6:
            out.append(rng.choice(THAI_VOWELS))
        if rng.random() < 0.3:
            out.append(rng.choice(THAI_TONES))
        if rng.random() < 0.4:
            out.append(rng.choice(THAI_CONSONANTS))
    return "".join(out)


def _japanese_word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:  # katakana loanword, often with the long-vowel mark
        word = "".join(rng.choices(KATAKANA, k=rng.randint(2, 5)))
        return word + "ー" if rng.random() < 0.3 else word
    if roll < 0.5:
        return "".join(rng.choices(HIRAGANA, k=rng.randint(1, 3)))
    return "".join(rng.choices(HAN, k=rng.randint(1, 2))) + "".join(rng.choices(HIRAGANA, k=rng.randint(0, 3)))


@dataclass(frozen=True)
class Script:
    name: str
    word: Callable[[random.Random], str]
    word_sep: str = " "
    sentence_sep: str = " "
    endings: tuple[str, ...] = (".", ".", ".", "?", "!")
    comma: str = ","
    cased: bool = False
    quotes: tuple[str, str] = ("\u201c", "\u201d")
    sentence_words: tuple[int, int] = (3, 14)


SCRIPTS: tuple[Script, ...] = (
    Script("latin", _latin_word, cased=True, quotes=('"', '"')),
    Script("accented_latin", _accented_word, cased=True, quotes=("\u00ab\u00a0", "\u00a0\u00bb")),
    Script("cyrillic", _letters_word(CYRILLIC, 1, 10), cased=True, quotes=("\u00ab", "\u00bb")),
    Script("greek", _greek_word, cased=True, endings=(".", ".", "\u037e", "!")),
    Script("arabic", _arabic_word, endings=(".", "\u061f", "!"), comma="\u060c"),
    Script("hebrew", _letters_word(HEBREW, 2, 7)),
    Script("devanagari", DEVANAGARI.word, endings=("\u0964", "\u0964", "?")),
    Script("bengali", BENGALI.word, endings=("\u0964", "\u0964", "?")),
    Script("thai", _thai_word, word_sep="", endings=("",), comma=" ", sentence_words=(4, 20)),
    Script("han", _letters_word(HAN, 1, 3), word_sep="", sentence_sep="",
           endings=("\u3002", "\u3002", "\uff1f", "\uff01"), comma="\uff0c", quotes=("\u300c", "\u300d"),
           sentence_words=(4, 20)),
    Script("japanese", _japanese_word, word_sep="", sentence_sep="", endings=("\u3002", "\u3002", "\uff01"),
           comma="\u3001", quotes=("\u300c", "\u300d"), sentence_words=(4, 16)),
    Script("hangul", _letters_word(HANGUL, 1, 4), endings=(".", ".", "?")),
    Script("georgian", _letters_word(GEORGIAN, 2, 10)),
    Script("armenian", _letters_word(ARMENIAN, 2, 9), cased=True, endings=("\u0589", "\u0589", "\u055e"),
           comma="\u055d"),
    Script("tamil", TAMIL.word),
    Script("ethiopic", _letters_word(ETHIOPIC, 1, 5), endings=("\u1362",), comma="\u1363"),
)
SCRIPT_BY_NAME = {s.name: s for s in SCRIPTS}
# Scripts weighted for prose: Latin-like text is the most common input by far.
SCRIPT_WEIGHTS = {"latin": 10, "accented_latin": 3, "cyrillic": 2, "han": 2, "japanese": 2}
_SCRIPT_CUM_WEIGHTS = tuple(itertools.accumulate(SCRIPT_WEIGHTS.get(s.name, 1) for s in SCRIPTS))

VOCABULARY_SIZE = 300


@functools.lru_cache(maxsize=256)
def _vocabulary(seed: int, script: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """A per-seed word list and Zipf-like cumulative weights, so words repeat as in real text."""
    rng = random.Random(f"{seed}:vocab:{script}")
    make = SCRIPT_BY_NAME[script].word
    # Shortest first: the most frequent words of a language tend to be the short ones.
    words = tuple(sorted((make(rng) for _ in range(VOCABULARY_SIZE)), key=len))
    cum = tuple(itertools.accumulate(1.0 / (rank + 2.7) for rank in range(VOCABULARY_SIZE)))
    return words, cum


def _capitalize(word: str) -> str:
    return word[:1].upper() + word[1:]


class Gen:
    """A document's RNG plus the text helpers that the content kinds share."""

    def __init__(self, seed: int, rng: random.Random):
        self.seed = seed
        self.rng = rng

    def script(self) -> Script:
        return self.rng.choices(SCRIPTS, cum_weights=_SCRIPT_CUM_WEIGHTS)[0]

    def words(self, script: Script, n: int) -> list[str]:
        vocab, cum = _vocabulary(self.seed, script.name)
        return self.rng.choices(vocab, cum_weights=cum, k=n)

    def sentence(self, script: Script | None = None) -> str:
        script = script or self.script()
        rng = self.rng
        words = self.words(script, rng.randint(*script.sentence_words))
        if script.cased:
            words[0] = _capitalize(words[0])
            if rng.random() < 0.3:  # a proper name or an acronym
                i = rng.randrange(len(words))
                words[i] = words[i].upper() if rng.random() < 0.3 else _capitalize(words[i])
        if len(words) > 4 and rng.random() < 0.5:
            i = rng.randrange(1, len(words) - 1)
            words[i] += script.comma
        if rng.random() < 0.08:
            i = rng.randrange(len(words))
            words[i] = script.quotes[0] + words[i] + script.quotes[1]
        return script.word_sep.join(words) + rng.choice(script.endings)

    def paragraph(self, script: Script | None = None, sentences: tuple[int, int] = (1, 6)) -> str:
        script = script or self.script()
        text = script.sentence_sep.join(self.sentence(script) for _ in range(self.rng.randint(*sentences)))
        if script.name == "accented_latin" and self.rng.random() < 0.2:
            text = unicodedata.normalize("NFD", text)  # the same letters as base + combining marks
        return text

    def latin_words(self, n: int) -> list[str]:
        return self.words(SCRIPT_BY_NAME["latin"], n)

    def ident(self, style: str | None = None) -> str:
        rng = self.rng
        parts = self.latin_words(rng.randint(1, 4))
        style = style or rng.choice(("snake", "snake", "camel", "pascal", "screaming", "kebab"))
        if style == "snake":
            name = "_".join(parts)
        elif style == "camel":
            name = parts[0] + "".join(_capitalize(p) for p in parts[1:])
        elif style == "pascal":
            name = "".join(_capitalize(p) for p in parts)
        elif style == "screaming":
            name = "_".join(parts).upper()
        else:
            name = "-".join(parts)
        if rng.random() < 0.15:
            name += str(rng.randint(0, 99))
        return name

    def join_pieces(self, pieces: list[str]) -> str:
        """Join inline pieces with mostly single spaces."""
        rng = self.rng
        seps = rng.choices((" ", " ", " ", " ", ", ", "\n", "\t", " | ", ""), k=len(pieces))
        return "".join(p + s for p, s in zip(pieces, seps)).rstrip(" ")


# --------------------------------------------------------------------------
# Content kinds: one function each, returning a piece of text.
# --------------------------------------------------------------------------


def kind_prose(g: Gen) -> str:
    script = g.script()
    sep = g.rng.choice(("\n\n", "\n\n", "\n", "\n\n\n"))
    return sep.join(g.paragraph(script) for _ in range(g.rng.randint(1, 4)))


def kind_mixed_prose(g: Gen) -> str:
    """Code-switching: sentences in different scripts, and foreign words inside a sentence."""
    rng = g.rng
    out = []
    for _ in range(rng.randint(2, 6)):
        sentence = g.sentence()
        if rng.random() < 0.5:
            foreign = " ".join(g.words(g.script(), rng.randint(1, 3)))
            words = sentence.split(" ")
            if len(words) > 1:
                words.insert(rng.randrange(1, len(words)), foreign)
                sentence = " ".join(words)
            else:  # a script written without spaces
                sentence += f" ({foreign})"
        out.append(sentence)
    return " ".join(out)


CODE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "python": (
        '''
        def {{id_fn}}({{id_a}}, {{id_b}}={{int_1}}):
            """{{text_doc}}"""
            if {{id_a}} > {{id_b}}:
                return [{{id_a}} * k for k in range({{int_2}})]
            {{id_c}} = {"{{id_k1}}": {{id_a}}, "{{id_k2}}": '{{str_1}}'}
            # {{text_comment}}
            return {{id_c}}
        ''',
        '''
        class {{T_cls}}({{T_base}}):
            {{id_attr}}: int = {{int_1}}

            def __init__(self, {{id_a}}: str = "{{str_1}}") -> None:
                super().__init__()
                self.{{id_a}} = {{id_a}}

            def {{id_m}}(self, *args, **kwargs):
                for i, x in enumerate(args):
                    if i % {{int_2}} == 0:
                        yield f"{x!r}: {self.{{id_a}}}"
                raise {{T_cls}}Error("{{str_2}}")
        ''',
        '''
        import {{id_mod}}
        from {{id_pkg}}.{{id_mod2}} import {{T_a}}, {{id_f}}

        {{SC_const}} = {{float_1}}

        async def {{id_fn}}(session, url="https://{{id_host}}.example/{{id_path}}"):
            async with session.get(url, timeout={{int_1}}) as resp:
                data = await resp.json()
            return {k: v for k, v in data.items() if k.startswith("{{id_p}}")}
        ''',
    ),
    "javascript": (
        '''
        export function {{cc_fn}}({{cc_a}}, {{cc_b}} = {{int_1}}) {
            // {{text_comment}}
            const {{cc_c}} = {{cc_a}}.map((x) => x * {{cc_b}}).filter(Boolean);
            if ({{cc_c}}.length === 0) {
                throw new Error(`{{str_1}}: ${{{cc_a}}}`);
            }
            return { {{cc_k}}: {{cc_c}}, total: {{cc_c}}.reduce((s, v) => s + v, 0) };
        }
        ''',
        '''
        class {{T_cls}} extends {{T_base}} {
            #{{cc_priv}} = {{int_1}};
            constructor({{cc_a}}) {
                super();
                this.{{cc_a}} = {{cc_a}} ?? "{{str_1}}";
            }
            async {{cc_m}}() {
                const res = await fetch("/api/{{id_path}}?id=" + encodeURIComponent(this.{{cc_a}}));
                return res.ok ? res.json() : null;
            }
        }
        module.exports = { {{T_cls}} };
        ''',
    ),
    "rust": (
        '''
        use std::collections::HashMap;

        /// {{text_doc}}
        pub fn {{id_fn}}<'a>({{id_a}}: &'a str, {{id_b}}: usize) -> Result<Vec<&'a str>, String> {
            let mut {{id_m}}: HashMap<&str, u32> = HashMap::new();
            for word in {{id_a}}.split_whitespace().take({{id_b}}) {
                *{{id_m}}.entry(word).or_insert(0) += {{int_1}};
            }
            if {{id_m}}.is_empty() {
                return Err(format!("{{str_1}} {}", {{id_b}}));
            }
            Ok({{id_m}}.into_keys().collect())
        }
        ''',
        '''
        #[derive(Debug, Clone, PartialEq)]
        pub struct {{T_s}} {
            pub {{id_x}}: f64,
            {{id_y}}: Option<Box<{{T_s}}>>,
        }

        impl {{T_s}} {
            pub const {{SC_c}}: u64 = 0x{{hex_1}};

            pub fn new({{id_x}}: f64) -> Self {
                Self { {{id_x}}, {{id_y}}: None }
            }
        }
        ''',
    ),
    "c": (
        '''
        #include <stdio.h>
        #include <stdlib.h>

        #define {{SC_max}} {{int_1}}

        /* {{text_comment}} */
        static int {{id_fn}}(const char *{{id_s}}, size_t {{id_n}}) {
            int {{id_acc}} = 0;
            for (size_t i = 0; i < {{id_n}} && {{id_s}}[i] != '\\0'; ++i) {
                {{id_acc}} = ({{id_acc}} * 31 + {{id_s}}[i]) % {{SC_max}};
            }
            printf("%s: %d\\n", "{{str_1}}", {{id_acc}});
            return {{id_acc}};
        }
        ''',
        '''
        typedef struct {{id_node}} {
            struct {{id_node}} *next;
            unsigned long {{id_key}};
            char {{id_name}}[{{int_1}}];
        } {{id_node}}_t;

        int main(int argc, char **argv) {
            {{id_node}}_t *head = NULL;
            if (argc < 2) {
                fprintf(stderr, "usage: %s <{{id_arg}}>\\n", argv[0]);
                return EXIT_FAILURE;
            }
            return head ? 0 : {{int_2}};
        }
        ''',
    ),
    "shell": (
        '''
        #!/usr/bin/env bash
        set -euo pipefail
        {{SC_dir}}="${HOME}/{{id_path}}"
        for f in "${{{SC_dir}}}"/*.{{id_ext}}; do
            grep -c '{{str_1}}' "$f" || echo "no match in $f" >&2
        done | sort -n | tail -n {{int_1}}
        ''',
    ),
    "html": (
        '''
        <!DOCTYPE html>
        <html lang="en">
        <head><meta charset="utf-8"><title>{{text_title}}</title></head>
        <body>
            <div class="{{id_cls}}" data-{{id_k}}="{{int_1}}">
                <p>{{text_p}}</p>
                <a href="https://{{id_host}}.example/{{id_path}}?q={{int_2}}&amp;x=1">{{str_1}}</a>
            </div>
        </body>
        </html>
        ''',
        '''
        # {{text_title}}

        - **{{id_a}}**: `{{id_b}}()` returns {{int_1}}
        - [{{str_1}}](https://{{id_host}}.example/{{id_path}})

        | {{id_c}} | {{id_d}} |
        |---|---:|
        | {{str_2}} | {{float_1}} |
        ''',
    ),
}

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_LEADING_INDENT = re.compile(r"(?m)^((?:    )+)")


def _fill_template(g: Gen, template: str) -> str:
    """Fill ``{{prefix_name}}`` placeholders; the same name gets the same value within a snippet."""
    rng = g.rng
    values: dict[str, str] = {}

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            prefix = key.split("_", 1)[0]
            if prefix == "id":
                values[key] = g.ident("snake")
            elif prefix == "cc":
                values[key] = g.ident("camel")
            elif prefix == "T":
                values[key] = g.ident("pascal")
            elif prefix == "SC":
                values[key] = g.ident("screaming")
            elif prefix == "int":
                values[key] = str(rng.choice((0, 1, 2, 3, 8, 10, 16, 42, 100, 255, 1024, rng.randint(0, 99999))))
            elif prefix == "float":
                values[key] = repr(round(rng.uniform(-1000, 1000), rng.randint(0, 6)))
            elif prefix == "hex":
                values[key] = format(rng.getrandbits(rng.choice((16, 32, 64))), "X")
            elif prefix == "str":  # string literal content: any script, no quotes or backslashes
                values[key] = " ".join(g.words(g.script(), rng.randint(1, 4)))
            else:  # text_*: comments, docstrings, titles
                values[key] = g.sentence(g.script() if rng.random() < 0.3 else SCRIPT_BY_NAME["latin"])
        return values[key]

    return _PLACEHOLDER.sub(value, template)


def _code_snippet(g: Gen, language: str | None = None) -> str:
    rng = g.rng
    language = language or rng.choice(tuple(CODE_TEMPLATES))
    text = _fill_template(g, textwrap.dedent(rng.choice(CODE_TEMPLATES[language])).strip("\n"))
    unit = rng.choice(("    ", "    ", "  ", "\t", "\t", "        "))
    text = _LEADING_INDENT.sub(lambda m: unit * (len(m.group(1)) // 4), text)
    if rng.random() < 0.15:  # mixed tabs and spaces, as in real-world diffs
        text = re.sub(r"(?m)^    ", "\t", text, count=rng.randint(1, 3))
    if rng.random() < 0.15:
        text = re.sub(r"(?m)$", lambda m: " " * rng.choice((0, 0, 1, 2)), text)
    return text + "\n"


def kind_code(g: Gen) -> str:
    language = g.rng.choice(tuple(CODE_TEMPLATES))
    return "\n".join(_code_snippet(g, language) for _ in range(g.rng.randint(1, 3)))


def _json_scalar(g: Gen) -> object:
    rng = g.rng
    roll = rng.random()
    if roll < 0.3:
        return " ".join(g.words(g.script(), rng.randint(1, 5)))
    if roll < 0.4:  # strings json.dumps has to escape
        return rng.choice(('say "hi"', "C:\\path\\to", "line1\nline2\ttab", "\u0007bell", "</script>",
                           "emoji " + _emoji(g), "nul\u0000byte", "\u2028sep\u2029"))
    if roll < 0.6:
        return rng.choice((0, -1, rng.randint(-10**6, 10**6), rng.getrandbits(64), 2**53 + 1))
    if roll < 0.75:
        return rng.choice((rng.uniform(-1e6, 1e6), rng.random(), 1e-9 * rng.random(), 6.02e23, -0.0))
    if roll < 0.85:
        return rng.choice((True, False, None))
    return g.ident()


def _json_value(g: Gen, depth: int) -> object:
    rng = g.rng
    if depth <= 0 or rng.random() < 0.4:
        return _json_scalar(g)
    if rng.random() < 0.35:
        return [_json_value(g, depth - 1) for _ in range(rng.randint(0, 5))]
    obj = {}
    for _ in range(rng.randint(0, 6)):
        key = g.ident() if rng.random() < 0.8 else " ".join(g.words(g.script(), 1))
        obj[key] = _json_value(g, depth - 1)
    return obj


def kind_json(g: Gen) -> str:
    rng = g.rng
    value = {g.ident(): _json_value(g, rng.randint(1, 4)) for _ in range(rng.randint(1, 5))}
    indent = rng.choice((None, None, 0, 1, 2, 2, 4, "\t"))
    separators = (",", ":") if indent is None and rng.random() < 0.4 else None
    return json.dumps(value, indent=indent, ensure_ascii=rng.random() < 0.4, separators=separators,
                      sort_keys=rng.random() < 0.2)


NON_ASCII_DIGITS = ("٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "০১২৩৪৫৬৭৮৯", "０１２３４５６７８９", "๐๑๒๓๔๕๖๗๘๙")


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choices("0123456789", k=n))


def _grouped(n: int, sep: str) -> str:
    s = str(n)
    head = len(s) % 3 or 3
    return sep.join([s[:head]] + [s[i:i + 3] for i in range(head, len(s), 3)])


def _number(g: Gen) -> str:
    rng = g.rng
    roll = rng.randrange(16)
    if roll == 0:
        return str(rng.randint(-1000, 1000))
    if roll == 1:
        return str(rng.randint(0, 10 ** rng.randint(1, 18)))
    if roll == 2:
        return f"{rng.uniform(-1e4, 1e4):.{rng.randint(1, 8)}f}"
    if roll == 3:
        return f"{rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30):{rng.choice(('e', 'E', 'g'))}}"
    if roll == 4:
        sep = rng.choice((",", ",", ".", " ", "\u202f", "'", "\u00a0"))
        return _grouped(rng.randint(1000, 10**12), sep) + rng.choice(("", ".50", ",00", ".999"))
    if roll in (5, 6):  # the long digit runs that number-splitting rules disagree on
        return _digits(rng, rng.randint(1, 60))
    if roll == 7:
        y, m, d = rng.randint(1900, 2099), rng.randint(1, 12), rng.randint(1, 28)
        return rng.choice((f"{y}-{m:02d}-{d:02d}", f"{d:02d}/{m:02d}/{y}", f"{d}.{m}.{y}", f"{m}/{d}/{y % 100:02d}",
                           f"{y}-{m:02d}-{d:02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:"
                           f"{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z", f"{y}年{m}月{d}日"))
    if roll == 8:
        return rng.choice((f"+1 ({_digits(rng, 3)}) {_digits(rng, 3)}-{_digits(rng, 4)}",
                           f"+{rng.randint(1, 999)} {_digits(rng, 2)} {_digits(rng, 4)} {_digits(rng, 4)}",
                           f"0{_digits(rng, 3)}-{_digits(rng, 6)}", f"{_digits(rng, 3)}.{_digits(rng, 3)}.{_digits(rng, 4)}"))
    if roll == 9:
        v = ".".join(str(rng.randint(0, 30)) for _ in range(rng.randint(2, 4)))
        return rng.choice(("", "v", "V")) + v + rng.choice(("", "", "-rc.1", "-beta2", "+build.77", ".dev0"))
    if roll == 10:
        return rng.choice(("$", "€", "£", "¥", "₹", "")) + _grouped(rng.randint(0, 10**7), ",") + \
            f".{rng.randint(0, 99):02d}" + rng.choice(("", " USD", "€", "%"))
    if roll == 11:
        digits = rng.choice(NON_ASCII_DIGITS)
        return "".join(rng.choices(digits, k=rng.randint(1, 12)))
    if roll == 12:
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}" + rng.choice(("", ":00", " AM", " PM", "h"))
    if roll == 13:
        n = rng.randint(1, 120)
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"
    if roll == 14:
        return f"{rng.randint(0, 100)}{rng.choice(('%', ' %', 'km', 'ms', 'GB', '°C', 'x'))}"
    return f"{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}"


def kind_numbers(g: Gen) -> str:
    rng = g.rng
    pieces = []
    for _ in range(rng.randint(3, 25)):
        pieces.append(_number(g) if rng.random() < 0.6 else " ".join(g.latin_words(rng.randint(1, 3))))
    return g.join_pieces(pieces)


def _identifier(g: Gen) -> str:
    rng = g.rng
    roll = rng.randrange(10)
    if roll == 0:
        return format(rng.getrandbits(rng.choice((32, 128, 160, 256))), "x").zfill(8)
    if roll == 1:
        h = format(rng.getrandbits(128), "032x")
        h = h[:12] + "4" + h[13:16] + "89ab"[rng.randrange(4)] + h[17:]
        uid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return uid.upper() if rng.random() < 0.2 else uid
    if roll == 2:
        data = rng.randbytes(rng.randint(3, 64))
        return (base64.urlsafe_b64encode if rng.random() < 0.3 else base64.b64encode)(data).decode("ascii")
    if roll == 3:
        return g.ident()
    if roll == 4:
        return f"sha256:{rng.getrandbits(256):064x}"
    if roll == 5:
        return f"https://{g.ident('kebab')}.example/{g.ident('snake')}/{rng.randint(1, 9999)}?" \
               f"{g.ident('snake')}={_digits(rng, 4)}&ref={rng.getrandbits(32):08x}#{g.ident('kebab')}"
    if roll == 6:
        return f"{g.ident('snake')}.{rng.randint(0, 99)}@{g.ident('kebab')}.example"
    if roll == 7:
        parts = g.latin_words(rng.randint(2, 5))
        return ("/" + "/".join(parts) + ".py") if rng.random() < 0.6 else ("C:\\" + "\\".join(parts) + ".txt")
    if roll == 8:
        return f"{rng.getrandbits(28):07x}"
    return "-".join(g.ident("screaming") for _ in range(2)) + f"-{rng.randint(1, 9999)}"


def kind_ids(g: Gen) -> str:
    rng = g.rng
    pieces = []
    for _ in range(rng.randint(2, 15)):
        pieces.append(_identifier(g) if rng.random() < 0.7 else " ".join(g.latin_words(rng.randint(1, 3))))
    return g.join_pieces(pieces)


UNICODE_SPACES = ("\u00a0", "\u1680", *(chr(c) for c in range(0x2000, 0x200B)), "\u2028", "\u2029",
                  "\u202f", "\u205f", "\u3000")
# Not all of these are White_Space, but tokenizers split and normalise them inconsistently.
SPACE_LIKE = ("\u0085", "\u200b", "\ufeff", "\u180e")
ASCII_WHITESPACE = (" ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c")


def _whitespace_run(g: Gen) -> str:
    rng = g.rng
    roll = rng.random()
    if roll < 0.45:  # one character repeated
        unit = rng.choice((" ", " ", "\t", "\n", "\n", "\r\n") + UNICODE_SPACES + SPACE_LIKE)
        return unit * rng.choice((1, 2, 3, 4, 8, rng.randint(1, 40), rng.randint(1, 200)))
    if roll < 0.8:  # mixed ASCII
        return "".join(rng.choices(ASCII_WHITESPACE, weights=(8, 3, 4, 1, 1, 1, 1), k=rng.randint(2, 30)))
    return "".join(rng.choices(ASCII_WHITESPACE + UNICODE_SPACES + SPACE_LIKE, k=rng.randint(1, 12)))


def kind_whitespace(g: Gen) -> str:
    rng = g.rng
    out = [_whitespace_run(g)] if rng.random() < 0.4 else []
    for _ in range(rng.randint(2, 12)):
        out.append(" ".join(g.words(g.script(), rng.randint(1, 4))))
        out.append(_whitespace_run(g))
    return "".join(out)


EMOJI = _chars((0x1F600, 0x1F64F), (0x1F680, 0x1F6C5), (0x1F400, 0x1F43E), (0x1F330, 0x1F335),
               (0x1F337, 0x1F37C), (0x1F380, 0x1F393), (0x1F442, 0x1F4F7), (0x1F910, 0x1F93A),
               0x2600, 0x2601, 0x2614, 0x2615, 0x26A1, 0x2705, 0x2728, 0x274C, 0x2B50)
EMOJI_PEOPLE = _chars((0x1F466, 0x1F469), 0x1F44B, 0x1F44C, 0x1F44D, 0x1F44E, 0x1F44F, 0x1F450, 0x1F46E,
                      (0x1F471, 0x1F478), 0x1F47C, 0x1F481, 0x1F482, 0x1F483, 0x1F485, 0x1F486, 0x1F487,
                      0x1F4AA, 0x1F645, 0x1F646, 0x1F647, 0x1F64B, 0x1F64C, 0x1F64F, 0x1F6B4, 0x1F6B6,
                      (0x1F918, 0x1F91C), 0x1F91E, 0x270A, 0x270B, 0x270C, 0x261D, 0x1F9D1)
EMOJI_OBJECTS = _chars(0x1F4BB, 0x1F52C, 0x1F680, 0x1F692, 0x1F373, 0x1F33E, 0x1F393, 0x1F3A4, 0x1F3EB,
                       0x1F527, 0x1F4BC, 0x1F3A8, 0x2695, 0x2696, 0x2708)
SKIN_TONES = _chars((0x1F3FB, 0x1F3FF))
# Emoji whose emoji presentation needs VS16 (U+FE0F).
TEXT_DEFAULT_EMOJI = _chars(0x263A, 0x2764, 0x2714, 0x2600, 0x2602, 0x260E, 0x2618, 0x2622, 0x267B,
                            0x26A0, 0x2B06, 0x27A1, 0x00A9, 0x00AE, 0x2122)
ZWJ, VS16, VS15, KEYCAP = "\u200d", "\ufe0f", "\ufe0e", "\u20e3"
REGIONAL_INDICATORS = _chars((0x1F1E6, 0x1F1FF))


def _emoji(g: Gen) -> str:
    rng = g.rng
    roll = rng.randrange(12)
    if roll <= 2:
        return rng.choice(EMOJI)
    if roll == 3:
        return rng.choice(EMOJI_PEOPLE) + rng.choice(SKIN_TONES)
    if roll == 4:  # family / group: people joined by ZWJ
        return ZWJ.join(rng.choices("\U0001F468\U0001F469\U0001F467\U0001F466", k=rng.randint(2, 4)))
    if roll == 5:  # person + object profession, optionally skin-toned
        person = rng.choice("\U0001F468\U0001F469\U0001F9D1")
        tone = rng.choice(SKIN_TONES) if rng.random() < 0.5 else ""
        return person + tone + ZWJ + rng.choice(EMOJI_OBJECTS)
    if roll == 6:
        return rng.choice(("\U0001F3F3\ufe0f\u200d\U0001F308", "\u2764\ufe0f\u200d\U0001F525",
                           "\U0001F469\u200d\u2764\ufe0f\u200d\U0001F468", "\U0001F3F4\u200d\u2620\ufe0f",
                           "\U0001F3C3\u200d\u2640\ufe0f", "\U0001F9D1\u200d\U0001F91D\u200d\U0001F9D1"))
    if roll == 7:  # flags, including pairs that are no country
        return "".join(rng.choices(REGIONAL_INDICATORS, k=rng.choice((1, 2, 2, 2, 4, 3))))
    if roll == 8:  # keycaps, with and without VS16
        return rng.choice("0123456789#*") + (VS16 if rng.random() < 0.7 else "") + KEYCAP
    if roll == 9:
        return rng.choice(TEXT_DEFAULT_EMOJI) + rng.choice((VS16, VS16, VS15, ""))
    if roll == 10:  # subdivision flag: black flag + tag letters + cancel tag
        tag = rng.choice(("gbeng", "gbsct", "gbwls", "usca"))
        return "\U0001F3F4" + "".join(chr(0xE0000 + ord(c)) for c in tag) + "\U000E007F"
    # Non-RGI ZWJ chains and stray modifiers.
    return ZWJ.join(rng.choices(EMOJI, k=rng.randint(2, 3))) + rng.choice(("", ZWJ, rng.choice(SKIN_TONES)))


def kind_emoji(g: Gen) -> str:
    rng = g.rng
    pieces = []
    for _ in range(rng.randint(3, 20)):
        if rng.random() < 0.5:
            pieces.append(" ".join(g.words(g.script(), rng.randint(1, 4))))
        pieces.append("".join(_emoji(g) for _ in range(rng.choice((1, 1, 1, 2, 3, 6)))))
    return "".join(p + rng.choice((" ", " ", "", "\n")) for p in pieces)


COMBINING_MARKS = _chars((0x0300, 0x036F))
SYMBOL_MARKS = _chars((0x20D0, 0x20F0))
SCRIPT_MARKS = _chars((0x05B0, 0x05BC), (0x064B, 0x0652), 0x093C, 0x0E47, 0x3099, 0x309A)


def kind_combining(g: Gen) -> str:
    rng = g.rng
    out = []
    if rng.random() < 0.2:  # a mark with no base at the very start
        out.append(rng.choice(COMBINING_MARKS))
    for _ in range(rng.randint(3, 15)):
        word = list(g.words(g.script(), 1)[0])
        for i in rng.sample(range(len(word)), k=min(len(word), rng.randint(1, 3))):
            stack = rng.choice((1, 1, 1, 2, 3, rng.randint(4, 12)))  # up to "zalgo" stacks
            marks = COMBINING_MARKS if rng.random() < 0.7 else SCRIPT_MARKS + SYMBOL_MARKS
            word[i] += "".join(rng.choices(marks, k=stack))
        out.append("".join(word))
        if rng.random() < 0.1:  # orphan marks after a space, digit or emoji
            out.append(rng.choice((" ", "7", "\U0001F600", "\u200c", "\u200d")) + rng.choice(COMBINING_MARKS))
    return " ".join(out)


CONTROL_CHARS = _chars((0x00, 0x1F), 0x7F, (0x80, 0x9F))


def kind_control(g: Gen) -> str:
    rng = g.rng
    words = g.latin_words(rng.randint(4, 30))
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.6:
            ctrl = "".join(rng.choices(CONTROL_CHARS, k=rng.choice((1, 1, 2, 5))))
        elif roll < 0.8:
            ctrl = f"\x1b[{rng.choice((0, 1, 31, 32, 33, 38))}m"  # ANSI colour codes
        else:
            ctrl = rng.choice(("\x00", "\x7f", "\x85", "\x9b")) * rng.randint(2, 20)
        i = rng.randrange(len(words))
        cut = rng.randint(0, len(words[i]))
        words[i] = words[i][:cut] + ctrl + words[i][cut:]
    return " ".join(words)


CONTRACTION_BASES = ("don", "can", "won", "isn", "didn", "we", "they", "you", "i", "it", "she", "that", "who")
CONTRACTION_SUFFIXES = ("t", "s", "re", "ve", "m", "ll", "d")


def _vary_case(rng: random.Random, text: str) -> str:
    roll = rng.randrange(5)
    if roll == 0:
        return text.upper()
    if roll == 1:
        return _capitalize(text)
    if roll == 2:
        return "".join(c.upper() if rng.random() < 0.5 else c for c in text)
    return text


def kind_contractions(g: Gen) -> str:
    rng = g.rng
    words = g.latin_words(rng.randint(5, 30))
    for _ in range(rng.randint(2, 8)):
        base = rng.choice(CONTRACTION_BASES) if rng.random() < 0.6 else rng.choice(words)
        apostrophe = rng.choice(("'", "'", "'", "\u2019", "`"))
        suffix = rng.choice(CONTRACTION_SUFFIXES)
        roll = rng.random()
        if roll < 0.7:
            word = _vary_case(rng, base) + apostrophe + _vary_case(rng, suffix)
        elif roll < 0.85:  # quoted word, or a bare suffix after a space
            word = rng.choice((f"'{base}'", f"' {suffix}", f"{base}s'", f"'{suffix}{suffix}"))
        else:
            word = f"{base}'{suffix}'{rng.choice(CONTRACTION_SUFFIXES)}"
        words.insert(rng.randint(0, len(words)), word)
    return " ".join(words)


SPECIAL_TOKEN_LITERALS = (
    "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>",
    "<|im_start|>", "<|im_end|>", "<|im_sep|>", "<s>", "</s>", "<unk>", "<pad>", "<mask>", "[INST]",
    "[/INST]", "<<SYS>>", "<</SYS>>", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>",
    "<|start_header_id|>", "<|end_header_id|>", "[CLS]", "[SEP]", "[MASK]", "[PAD]", "<bos>", "<eos>",
    "<start_of_turn>", "<end_of_turn>", "<|system|>", "<|user|>", "<|assistant|>",
)
# Near misses that must never be recognised as special tokens.
SPECIAL_NEAR_MISSES = ("<|endoftext|", "|endoftext|>", "<|endoftext|>>", "<<|endoftext|>", "<|ENDOFTEXT|>",
                       "< |endoftext| >", "<|endof text|>", "<|endoftext\u200b|>", "<\uff5cendoftext\uff5c>",
                       "<|endoftext|><|endoftext|>", "<|fim_prefix|><|fim_suffix|>", "<s><s>", "</s </s>",
                       "[INST ]", "[[INST]]")


def kind_special_literals(g: Gen) -> str:
    rng = g.rng
    words = g.latin_words(rng.randint(3, 25))
    for _ in range(rng.randint(1, 5)):
        lit = rng.choice(SPECIAL_TOKEN_LITERALS) if rng.random() < 0.75 else rng.choice(SPECIAL_NEAR_MISSES)
        i = rng.randint(0, len(words))
        if rng.random() < 0.3 and i < len(words):  # glued to a word
            words[i] = words[i] + lit if rng.random() < 0.5 else lit + words[i]
        else:
            words.insert(i, lit)
    return " ".join(words)


# Scalar values by range, weighted: mostly assigned blocks, some private-use,
# noncharacters and unassigned planes. Surrogates are never included.
_SOUP_RANGES = ((0x20, 0x7E, 4), (0xA0, 0x24F, 3), (0x370, 0x52F, 2), (0x590, 0x6FF, 2), (0x900, 0xDFF, 2),
                (0x1E00, 0x1FFF, 2), (0x2000, 0x2BFF, 3), (0x3000, 0x30FF, 2), (0x4E00, 0x9FFF, 2),
                (0xAC00, 0xD7A3, 1), (0xE000, 0xF8FF, 1), (0xF900, 0xFFFF, 2), (0x10000, 0x1FFFF, 3),
                (0x20000, 0x3134F, 1), (0xE0000, 0xE01EF, 1), (0xF0000, 0x10FFFF, 1))


def kind_unicode_soup(g: Gen) -> str:
    rng = g.rng
    ranges = rng.choices(_SOUP_RANGES, weights=[w for _, _, w in _SOUP_RANGES], k=rng.randint(1, 60))
    return "".join(chr(rng.randint(lo, hi)) for lo, hi, _ in ranges)


def kind_tiny(g: Gen) -> str:
    """Very short texts (possibly empty): edge cases for every encoder."""
    rng = g.rng
    pool = (" ", "\n", "a", "A", "'s", "0", "00", "\u00e9", "e\u0301", "\u3000", "\t", "\u200b", "\ufeff",
            "\U0001F600", "\u4e00", "\x00", "<|endoftext|>", "\r\n", "\u0301", "\U0001F1FA")
    return "".join(rng.choices(pool, k=rng.choice((0, 1, 1, 1, 2, 3, 5))))


@dataclass(frozen=True)
class Kind:
    name: str
    weight: float
    make: Callable[[Gen], str]


KINDS: tuple[Kind, ...] = (
    Kind("prose", 30, kind_prose),
    Kind("mixed_prose", 6, kind_mixed_prose),
    Kind("code", 10, kind_code),
    Kind("json", 5, kind_json),
    Kind("numbers", 7, kind_numbers),
    Kind("ids", 5, kind_ids),
    Kind("whitespace", 6, kind_whitespace),
    Kind("emoji", 6, kind_emoji),
    Kind("combining", 4, kind_combining),
    Kind("control", 3, kind_control),
    Kind("contractions", 4, kind_contractions),
    Kind("special_literals", 4, kind_special_literals),
    Kind("unicode_soup", 2, kind_unicode_soup),
    Kind("tiny", 2, kind_tiny),
)
_KIND_WEIGHTS = tuple(k.weight for k in KINDS)

CHAT_FRACTION = 0.05
CRLF_FRACTION = 0.07

# --------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------


def _mixed_text(g: Gen, parts: int | None = None) -> str:
    rng = g.rng
    n = parts or rng.choices((1, 2, 3, 4, 6, 8), weights=(30, 22, 18, 12, 12, 6))[0]
    kinds = rng.choices(KINDS, weights=_KIND_WEIGHTS, k=n)
    out = [kinds[0].make(g)]
    for kind in kinds[1:]:
        out.append(rng.choice(("\n\n", "\n\n", "\n", " ", "", "\n\n\n", "\t")))
        out.append(kind.make(g))
    return "".join(out)


def _user_text(g: Gen) -> str:
    text = _mixed_text(g, g.rng.randint(1, 2))
    if g.rng.random() < 0.3:  # a user pasting a special-token literal: must stay ordinary text
        text += " " + g.rng.choice(SPECIAL_TOKEN_LITERALS) + " " + g.sentence()
    return text


def _chat_segments(g: Gen) -> list[Segment]:
    """A chat / FIM / packed-documents sample: markers may be special, content never is."""
    rng = g.rng
    special, plain = (lambda t: Segment(t, True)), (lambda t: Segment(t, False))
    style = rng.choice(("chatml", "llama2", "llama3", "fim", "packed"))
    segs: list[Segment] = []
    if style == "chatml":
        for role in ("system", "user", "assistant")[: rng.randint(2, 3)]:
            segs += [special("<|im_start|>"), plain(f"{role}\n"), plain(_user_text(g)), special("<|im_end|>"),
                     plain("\n")]
    elif style == "llama2":
        segs += [special("<s>"), plain("[INST] <<SYS>>\n" + g.sentence() + "\n<</SYS>>\n\n"),
                 plain(_user_text(g) + " [/INST] "), plain(_user_text(g)), special("</s>")]
    elif style == "llama3":
        segs.append(special("<|begin_of_text|>"))
        for role in ("system", "user", "assistant")[: rng.randint(2, 3)]:
            segs += [special("<|start_header_id|>"), plain(role), special("<|end_header_id|>"),
                     plain("\n\n" + _user_text(g)), special("<|eot_id|>")]
    elif style == "fim":
        code = kind_code(g)
        a, b = sorted(rng.sample(range(len(code) + 1), 2))
        segs += [special("<|fim_prefix|>"), plain(code[:a]), special("<|fim_suffix|>"), plain(code[b:]),
                 special("<|fim_middle|>"), plain(code[a:b])]
    else:
        for _ in range(rng.randint(2, 4)):
            segs += [plain(_user_text(g)), special("<|endoftext|>" * rng.choice((1, 1, 2)))]
    return segs


def _regular_document(g: Gen) -> list[Segment]:
    rng = g.rng
    if rng.random() < CHAT_FRACTION:
        return _chat_segments(g)
    text = _mixed_text(g)
    if rng.random() < CRLF_FRACTION:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return [Segment(text, False)]


def _long_mixed(g: Gen, target: int) -> str:
    out, size = [], 0
    while size < target:
        piece = _mixed_text(g, 8)
        out.append(piece)
        size += len(piece) + 2
    return "\n\n".join(out)


def _long_run(g: Gen, target: int) -> str:
    rng = g.rng
    roll = rng.randrange(8)
    if roll == 0:
        return " " * target
    if roll == 1:
        return _digits(rng, target)
    if roll == 2:
        return "\n" * target
    if roll == 3:
        return "".join(rng.choices(ASCII_WHITESPACE + UNICODE_SPACES, k=target))
    if roll == 4:
        return rng.choice("a\u4e00\u0e01x") * target
    if roll == 5:
        return "".join(rng.choices(HAN, k=target))
    if roll == 6:
        return "\U0001F600" * (target // 2) + "\U0001F44D\U0001F3FD" * (target // 4)
    return "".join(rng.choices(COMBINING_MARKS, k=target))


def _long_code(g: Gen, target: int) -> str:
    language = g.rng.choice(tuple(CODE_TEMPLATES))
    out, size = [], 0
    while size < target:
        piece = _code_snippet(g, language)
        out.append(piece)
        size += len(piece) + 1
    return "\n".join(out)


LONG_KINDS: tuple[tuple[str, Callable[[Gen, int], str]], ...] = (
    ("long_mixed", _long_mixed),
    ("long_run", _long_run),
    ("long_code", _long_code),
)


def _long_document(g: Gen, ordinal: int) -> list[Segment]:
    _, make = LONG_KINDS[ordinal % len(LONG_KINDS)]
    lo = LONG_DOCUMENT_MIN_CHARS
    target = g.rng.randint(lo, 300_000 if make is _long_run else 200_000)
    return [Segment(make(g, target), False)]


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def long_document_indices(documents: int = 2000, long_documents: int = 3) -> list[int]:
    """Indices of the long documents, evenly spread through the ``documents + long_documents`` run."""
    total = documents + long_documents
    return [((k + 1) * total) // (long_documents + 1) for k in range(long_documents)]


def generate_one(seed: int, index: int, documents: int = 2000, long_documents: int = 3) -> Sample:
    """Document ``index`` of ``generate(seed, documents, long_documents)``, built on its own.

    Only whether ``index`` is a long document depends on ``documents`` / ``long_documents``
    (both recorded by ``describe``); every other document depends on ``seed`` and ``index`` alone."""
    total = documents + long_documents
    if not 0 <= index < total:
        raise IndexError(f"generated document index {index} out of range 0..{total - 1} "
                         f"(documents={documents}, long_documents={long_documents})")
    g = Gen(seed, random.Random(f"{seed}:{index}"))
    longs = long_document_indices(documents, long_documents)
    segments = _long_document(g, longs.index(index)) if index in longs else _regular_document(g)
    return Sample(sample_id(seed, index), tuple(segments))


def generate(seed: int = 0, documents: int = 2000, long_documents: int = 3) -> Iterator[Sample]:
    for index in range(documents + long_documents):
        yield generate_one(seed, index, documents, long_documents)


def sample_id(seed: int, index: int) -> str:
    return f"generated:{seed}:{index}"


def parse_sample_id(value: str) -> tuple[int, int]:
    """``"generated:SEED:INDEX"`` -> ``(seed, index)``; ValueError for anything else."""
    prefix, _, rest = value.partition(":")
    seed, _, index = rest.partition(":")
    if prefix != "generated" or not seed.lstrip("-").isdigit() or not index.isdigit():
        raise ValueError(f"not a generated-corpus sample id: {value!r}")
    return int(seed), int(index)


def describe(seed: int = 0, documents: int = 2000, long_documents: int = 3) -> dict:
    """Everything needed to regenerate the run, for the run manifest."""
    return {
        "generator": "verify.corpora.generated",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "documents": documents,
        "long_documents": long_documents,
        "total_documents": documents + long_documents,
        "long_document_indices": long_document_indices(documents, long_documents),
        "id_format": "generated:{seed}:{index}",
        "content_kinds": {k.name: k.weight for k in KINDS},
        "scripts": [s.name for s in SCRIPTS],
        "chat_fraction": CHAT_FRACTION,
    }
