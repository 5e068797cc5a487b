"""Hypothesis strategies for tokenizer-hostile text (used by ``verify fuzz``).

Each strategy aims at one place where pre-tokenizer regexes, Unicode tables or
special-token matching tend to disagree between implementations:

  category_boundaries  letter / digit / punctuation / space / mark transitions
  digit_groups         runs of 1..40 digits, separators, other-script digits
  whitespace_runs      every Unicode space and the characters some engines take for one
  contractions         's 't 're 've 'm 'll 'd in every case, with ' and U+2019 (and look-alikes)
  combining_sequences  a base followed by combining marks (also on digits, spaces, punctuation)
  zwj_emoji            emoji joined by U+200D, skin tones, VS16, broken sequences
  variation_selectors  VS1..VS16, VS17..VS256, keycaps, tag characters
  bidi_controls        RTL/LTR text with embedding, override and isolate controls
  special_literals     control-token literals and near-misses (case, truncation, fullwidth bars)
  long_runs            one character class repeated up to a few thousand characters
                       (``long_runs(max_len=...)`` for longer)
  mixed_scripts        words from different scripts, adjacent or spaced
  any_text             arbitrary text (no surrogates), so nothing is ruled out

``documents()`` composes them into a ``Sample`` (``documents(family=NAME)``: one strategy
only, as each search shard of ``verify fuzz`` uses); ``segments()`` builds
``[(text, allow_special), ...]`` lists with structural special tokens between
ordinary segments. All characters come from ``ALPHABETS`` (one table); no
strategy produces a surrogate code point. When a strategy is shrunk, hypothesis
moves towards earlier ``one_of`` branches and shorter, lower texts, so the
branches are listed simplest first.
"""

from __future__ import annotations

import hashlib
import json

from hypothesis import strategies as st

from verify.sample import Sample


def _span(first: int, last: int) -> str:
    return "".join(chr(c) for c in range(first, last + 1))


# Every character the strategies draw from, by name. Keep additions here.
ALPHABETS: dict[str, str] = {
    # letters
    "latin_lower": _span(0x61, 0x7A),
    "latin_upper": _span(0x41, 0x5A),
    "latin_accented": "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿßÀÉÎÕÜŒœĳſǅǈǋﬁﬂ",
    "greek": "αβγδεζηθικλμνξοπρσςτυφχψωΑΒΓΔΩάέήίόύώ",
    "cyrillic": "абвгдеёжзийклмнопрстуфхцчшщъыьэюяАБВГДЖЯ",
    "armenian": "աբգդեզէըթժ",
    "hebrew": "אבגדהוזחטיכלמנסעפצקרשת",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "devanagari": "अआइईउऊएऐओऔकखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह",
    "thai": "กขคงจฉชซญดตถทธนบปผพฟภมยรลวศษสหอฮ",
    "georgian": "აბგდევზთიკლმნოპჟრსტუ",
    "hangul": "가나다라마바사아자차카타파하한국어글",
    "hiragana": "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん",
    "katakana": "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンー",
    "cjk": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年日本語文字漢",
    "cjk_ext_b": "𠀀𠀁𠀂𠮷𡈽𪚥",  # outside the BMP
    "math_letters": "𝐀𝐁𝐚𝐛𝑨𝒂𝔄𝔞𝕬𝖆",  # outside the BMP, category L
    # digits and numbers
    "digits": "0123456789",
    "digits_other": (_span(0x0660, 0x0669) + _span(0x06F0, 0x06F9) + _span(0x0966, 0x096F)
                     + _span(0x09E6, 0x09EF) + _span(0x0E50, 0x0E59) + _span(0xFF10, 0xFF19)
                     + _span(0x1D7CE, 0x1D7D7) + _span(0x1040, 0x1049)),
    "numbers_other": "¹²³⁴⁰₀₁₂½¼¾⅓ⅠⅡⅢⅣⅫ①②⑩⓪〇",  # No / Nl, not Nd
    "digit_separators": ",._ '\u2009\u202f\u00a0\u066b\u066c:/-",
    # punctuation and symbols
    "punct": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    "punct_other": "—–…«»¿¡·、。「」『』【】〈〉‘’“”„‹›§¶†‡•′″‰€£¥₹©®™°±×÷",
    # whitespace: White_Space and what some engines take for it
    "spaces": ("\t\n\u000b\u000c\r \u0085\u00a0\u1680" + _span(0x2000, 0x200A)
               + "\u2028\u2029\u202f\u205f\u3000"),
    "space_lookalikes": "\u180e\u200b\ufeff\u001c\u001d\u001e\u001f",
    # marks and modifiers
    "marks": (_span(0x0300, 0x0315) + "\u0327\u0328\u0331\u0338\u0345\u0591\u05b0\u05bc\u064b\u064e\u0651"
              + "\u093f\u0940\u094d\u0e31\u0e48\u1ab0\u1dc0\u20d0\u20dd\u20e3\u302a\u3099\ufe20"),
    "variation_selectors": _span(0xFE00, 0xFE0F) + "".join(chr(c) for c in (0xE0100, 0xE0101, 0xE01EE, 0xE01EF)),
    "tags": "".join(chr(c) for c in (0xE0001, 0xE0020, 0xE0062, 0xE0065, 0xE006E, 0xE0067, 0xE007F)),
    "zwj": "\u200d",
    "zwnj": "\u200c",
    "emoji": "😀😂🙂👍👋👨👩👧👦🧑💻🏳🌈❤☝✌🔥🎉🤖🦀🐍✨⭐🇺🇸🇯🇵",
    "skin_tones": _span(0x1F3FB, 0x1F3FF),
    "bidi": "\u061c\u200e\u200f" + _span(0x202A, 0x202E) + _span(0x2066, 0x2069),
    # apostrophes: ASCII, right single quotation mark, and look-alikes
    "apostrophes": "'\u2019\u02bc\uff07\u2018`",
    # special-token literal parts
    "bars": "|\uff5c\u2502\u00a6",  # ASCII, fullwidth, box drawing, broken bar
}

SCRIPTS = ("latin_lower", "latin_accented", "greek", "cyrillic", "armenian", "hebrew", "arabic", "devanagari",
           "thai", "georgian", "hangul", "hiragana", "katakana", "cjk", "cjk_ext_b", "math_letters")

# The character classes of the pre-tokenizer regexes (cl100k, o200k, gpt2, llama3).
CLASSES: dict[str, tuple[str, ...]] = {
    "letter": ("latin_lower", "latin_upper", "latin_accented", "greek", "cyrillic", "arabic", "cjk", "hangul"),
    "digit": ("digits", "digits_other", "numbers_other"),
    "punct": ("punct", "punct_other"),
    "space": ("spaces", "space_lookalikes"),
    "mark": ("marks", "variation_selectors", "zwj", "zwnj"),
}

SPECIAL_TOKENS = ("<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>",
                  "<|sep|>", "<|im_start|>", "<|im_end|>")
OTHER_CONTROL_LITERALS = ("<s>", "</s>", "<unk>", "[INST]", "[/INST]", "<pad>", "<|begin_of_text|>",
                          "<\uff5cend\u2581of\u2581sentence\uff5c>")  # DeepSeek's fullwidth-bar token
CONTRACTION_SUFFIXES = ("s", "t", "re", "ve", "m", "ll", "d")

LONG_RUN_MAX = 3000


def chars(*names: str) -> st.SearchStrategy[str]:
    """One character from the named alphabets."""
    return st.sampled_from("".join(ALPHABETS[n] for n in names))


def text_of(*names: str, min_size: int = 1, max_size: int = 8) -> st.SearchStrategy[str]:
    return st.text(chars(*names), min_size=min_size, max_size=max_size)


def _cases(word: str) -> list[str]:
    """Every upper/lower casing of a short word ('ll -> ll, lL, Ll, LL)."""
    out = [""]
    for ch in word:
        out = [p + c for p in out for c in dict.fromkeys((ch.lower(), ch.upper()))]
    return out


# --- the strategies ---------------------------------------------------------

def char_class() -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(CLASSES))


def class_chunk(cls: str, max_size: int = 4) -> st.SearchStrategy[str]:
    return text_of(*CLASSES[cls], max_size=max_size)


def category_boundaries() -> st.SearchStrategy[str]:
    """Short chunks of alternating character classes: 'ab12.. ́x'."""
    chunk = char_class().flatmap(class_chunk)
    return st.lists(chunk, min_size=2, max_size=8).map("".join)


def digit_run(max_size: int = 40) -> st.SearchStrategy[str]:
    return st.one_of(text_of("digits", max_size=max_size),
                     text_of("digits_other", max_size=max_size),
                     text_of("digits", "digits_other", "numbers_other", max_size=max_size))


def digit_groups() -> st.SearchStrategy[str]:
    """Runs of 1..40 digits, or groups joined by separators (1,234,567 / 3.14 / 1 000)."""
    grouped = st.tuples(st.lists(digit_run(6), min_size=2, max_size=6), chars("digit_separators")).map(
        lambda t: t[1].join(t[0]))
    signed = st.tuples(st.sampled_from(("", "-", "+", "$", "v", "0x", "#", "€")), digit_run(), st.sampled_from(
        ("", "%", "th", "px", "e10", "k", ".", "..."))).map("".join)
    return st.one_of(digit_run(), grouped, signed)


def whitespace_runs() -> st.SearchStrategy[str]:
    """Runs of spaces (every Unicode one and look-alikes), optionally around a word."""
    run = text_of("spaces", "space_lookalikes", max_size=12)
    around = st.tuples(run, text_of("latin_lower", "digits", "punct", max_size=4), run).map("".join)
    return st.one_of(run, around)


def contractions() -> st.SearchStrategy[str]:
    """word + apostrophe + suffix in any case ('s 'S 'Ll ’re), optionally followed by more text."""
    suffix = st.sampled_from([c for s in CONTRACTION_SUFFIXES for c in _cases(s)])
    word = st.one_of(st.just(""), text_of("latin_lower", "latin_upper", "latin_accented", "digits", max_size=6))
    tail = st.one_of(st.just(""), text_of("latin_lower", "spaces", "punct", max_size=3))
    return st.tuples(word, chars("apostrophes"), suffix, tail).map("".join)


def combining_sequences() -> st.SearchStrategy[str]:
    """A base (letter, digit, space, punctuation, emoji) followed by 1..6 combining marks."""
    base = chars("latin_lower", "latin_upper", "greek", "cyrillic", "arabic", "devanagari", "digits", "spaces",
                 "punct", "emoji")
    seq = st.tuples(base, text_of("marks", max_size=6)).map("".join)
    return st.lists(seq, min_size=1, max_size=4).map("".join)


def zwj_emoji() -> st.SearchStrategy[str]:
    """Emoji joined by ZWJ, with skin tones and VS16; also broken (leading, doubled, trailing) joins."""
    one = st.tuples(chars("emoji"), st.one_of(st.just(""), chars("skin_tones")),
                    st.sampled_from(("", "\ufe0f"))).map("".join)
    joined = st.lists(one, min_size=2, max_size=5).map("\u200d".join)
    broken = st.tuples(st.sampled_from(("\u200d", "")), joined, st.sampled_from(("\u200d", "\u200d\u200d", ""))
                       ).map("".join)
    return st.one_of(joined, broken)


def variation_selectors() -> st.SearchStrategy[str]:
    """Characters followed by variation selectors; keycaps (1️⃣); tag sequences (flag subdivisions)."""
    with_vs = st.tuples(chars("latin_lower", "digits", "cjk", "emoji", "punct"),
                        text_of("variation_selectors", max_size=3)).map("".join)
    keycap = chars("digits").map(lambda d: d + "\ufe0f\u20e3")
    tagged = st.tuples(chars("emoji"), text_of("tags", max_size=6)).map("".join)
    return st.lists(st.one_of(with_vs, keycap, tagged), min_size=1, max_size=4).map("".join)


def bidi_controls() -> st.SearchStrategy[str]:
    """Left-to-right and right-to-left words with bidi controls inside and between them."""
    word = text_of("latin_lower", "hebrew", "arabic", "digits", "digits_other", max_size=5)
    piece = st.one_of(word, chars("bidi"), chars("spaces"))
    return st.lists(piece, min_size=2, max_size=8).map("".join)


def special_literals() -> st.SearchStrategy[str]:
    """A control-token literal, exact or a near miss (case, truncation, fullwidth bars, spacing)."""
    literal = st.sampled_from(SPECIAL_TOKENS + OTHER_CONTROL_LITERALS)

    def near_misses(tok: str) -> st.SearchStrategy[str]:
        return st.one_of(
            st.just(tok),
            st.just(tok.upper()),
            st.integers(1, max(1, len(tok) - 1)).map(lambda n: tok[:n]),
            st.integers(1, max(1, len(tok) - 1)).map(lambda n: tok[n:]),
            chars("bars").map(lambda bar: tok.replace("|", bar)),
            st.just(tok.replace("<", "<<").replace(">", ">>")),
            st.just(tok.replace("|", "| ")),
            st.just(tok + tok),
            st.just(tok[:len(tok) // 2] + tok + tok[len(tok) // 2:]),  # one literal inside another
        )

    piece = literal.flatmap(near_misses)
    context = st.one_of(st.just(""), text_of("latin_lower", "spaces", "punct", max_size=3))
    return st.tuples(context, piece, context).map("".join)


def long_runs(max_len: int = LONG_RUN_MAX) -> st.SearchStrategy[str]:
    """One character class repeated to ``max_len`` characters: a short pattern tiled to a length
    (cheap to generate and shrink: the length shrinks as one integer)."""
    pattern = char_class().flatmap(lambda cls: class_chunk(cls, max_size=3))
    pattern = st.one_of(pattern, text_of("digits", max_size=3), text_of("spaces", max_size=2))
    return st.tuples(pattern, st.integers(1, max_len)).map(
        lambda t: (t[0] * (t[1] // len(t[0]) + 1))[:t[1]])


def mixed_scripts() -> st.SearchStrategy[str]:
    """Words from different scripts, adjacent or separated by a space or punctuation."""
    word = st.sampled_from(SCRIPTS).flatmap(lambda s: text_of(s, max_size=5))
    glue = st.sampled_from(("", " ", "-", "_", "'", ".", "\u00a0"))
    pair = st.tuples(word, glue).map("".join)
    return st.lists(pair, min_size=2, max_size=6).map("".join)


def any_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Arbitrary code points, unassigned ones included; never a surrogate."""
    return st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=max_size)


STRATEGIES = {
    "digit_groups": digit_groups,
    "category_boundaries": category_boundaries,
    "whitespace_runs": whitespace_runs,
    "contractions": contractions,
    "combining_sequences": combining_sequences,
    "zwj_emoji": zwj_emoji,
    "variation_selectors": variation_selectors,
    "bidi_controls": bidi_controls,
    "special_literals": special_literals,
    "mixed_scripts": mixed_scripts,
    "long_runs": long_runs,
    "any_text": any_text,
}


def hostile_text(long_max: int = LONG_RUN_MAX, family: str | None = None) -> st.SearchStrategy[str]:
    """One piece from any strategy (``family``: from that one only)."""
    names = list(STRATEGIES) if family is None else [family]
    return st.one_of([STRATEGIES[name](long_max) if name == "long_runs" else STRATEGIES[name]() for name in names])


def texts(long_max: int = LONG_RUN_MAX, family: str | None = None) -> st.SearchStrategy[str]:
    """1..4 hostile pieces concatenated, sometimes with a space or newline between."""
    glue = st.sampled_from(("", " ", "\n"))
    piece = st.tuples(hostile_text(long_max, family), glue).map("".join)
    return st.lists(piece, min_size=1, max_size=4).map("".join)


def structural_special() -> st.SearchStrategy[str]:
    return st.sampled_from(SPECIAL_TOKENS[:1] + SPECIAL_TOKENS)  # <|endoftext|> twice as likely


def segments(long_max: int = LONG_RUN_MAX, family: str | None = None) -> st.SearchStrategy[list[tuple[str, bool]]]:
    """``[(text, allow_special), ...]``: ordinary segments (which may contain special-token
    look-alikes that must stay text) around structural special tokens; sometimes an
    allowed segment holds text with literals in it. With a ``family``, the texts come from
    that strategy only (control-token literals in allowed segments: ``special_literals``'s)."""
    plain = texts(long_max, family).map(lambda t: (t, False))
    allowed = [structural_special(), texts(long_max, family)]
    if family in (None, "special_literals"):
        allowed.insert(1, special_literals())
    special = st.one_of(allowed).map(lambda t: (t, True))
    return st.lists(st.one_of(plain, special), min_size=1, max_size=6)


def sample_id(segs) -> str:
    payload = json.dumps([[t, a] for t, a in segs], ensure_ascii=False)
    return "fuzz:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def document_segments(special: bool = True, long_max: int = LONG_RUN_MAX, family: str | None = None
                      ) -> st.SearchStrategy[list[tuple[str, bool]]]:
    """What ``documents`` draws, as ``[(text, allow_special), ...]``. ``family``: one strategy of
    ``STRATEGIES`` only (a ``verify fuzz`` search shard). Plain lists and tuples on purpose:
    hypothesis keeps a weak reference to each drawn object it can, and shrinks differently when
    the garbage collector has taken it, so a drawn ``Sample`` would make shrinking depend on the
    process it runs in."""
    if family is not None and family not in STRATEGIES:
        raise ValueError(f"unknown strategy family {family!r} (one of {', '.join(STRATEGIES)})")
    plain = texts(long_max, family).map(lambda t: [(t, False)])
    return st.one_of(plain, segments(long_max, family)) if special else plain


def documents(special: bool = True, long_max: int = LONG_RUN_MAX, family: str | None = None
              ) -> st.SearchStrategy[Sample]:
    """A Sample: plain hostile text, or (when ``special``) a segment list with special tokens."""
    return document_segments(special, long_max, family).map(to_sample)


def to_sample(segs) -> Sample:
    return Sample.from_segments(sample_id(segs), segs)
