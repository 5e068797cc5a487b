"""Scripts for the generated corpus: how to build a word, and how words and sentences are punctuated.

Holds the per-script letter tables, the word builders, ``SCRIPTS`` and the
per-seed vocabularies, and ``Gen``: a document's RNG plus the text helpers
(words, sentences, paragraphs, identifiers) that every content kind uses.
"""

from __future__ import annotations

import functools
import itertools
import random
import unicodedata
from dataclasses import dataclass
from typing import Callable


def _chars(*ranges: int | tuple[int, int], exclude: tuple[int, ...] = ()) -> str:
    """Characters of the given code points and inclusive (first, last) ranges."""
    out = []
    for r in ranges:
        first, last = (r, r) if isinstance(r, int) else r
        out.extend(chr(c) for c in range(first, last + 1) if c not in exclude)
    return "".join(out)

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
