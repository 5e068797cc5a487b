"""Text-like content kinds of the generated corpus: prose, numbers, ids, whitespace, emoji, marks and more.

One ``kind_*`` function each, returning a piece of text, with the tables they draw from.
Code and JSON live in ``kinds_code``; the weighted ``KINDS`` table in ``kinds``.
"""

from __future__ import annotations

import base64
import random

from verify.corpora.generated.scripts import Gen, _capitalize, _chars


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
