"""The probe families of the length sweep: texts that grow with one parameter, the length.

A family builds its text at any length ``n`` exactly (``text(n)``), and says what it is in
run-length form (``runs(n)``, ``verify.run_length``): a run of one character, a run of a block,
a vocabulary token or a special-token literal repeated, or ``X-run + separator + Y-run``.
What a chunking threshold, a tie rule on long runs or a buffer limit does depends on the
character class at the cut, so there is one family per class the reference's pattern
distinguishes:

  run:U+XXXX       one character repeated -- letters of several scripts, digits, punctuation,
                   symbols, CJK, combining marks, emoji, and EVERY whitespace-like and control
                   character (the classes chunkers split at)
  block:...        a two-character block repeated (letter+space, space+letter, digit+letter,
                   CRLF, letter+combining mark, an emoji ZWJ sequence ...)
  token:ID         one of the vocabulary's longest tokens repeated
  special:ID       a special-token literal repeated, as plain text
  sep:X|S|Y        a run of X, one separator S, a run of Y (the separator in the middle)

No length is built in: the sweep grows every family geometrically and bisects where the
candidate first differs (``verify.adversarial.length.search``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verify.adversarial.stress.shapes import PROBES as SEPARATING  # every whitespace-like and control character
from verify.engine_spec import EngineSpec

LETTERS = ("a", "A", "д", "α", "ب", "א", "क", "ก", "あ", "ア", "한", "中")
DIGITS = ("1", "٣", "१")
PUNCTUATION = (".", ",", "!", "-", "_", "/", '"', "'", "(", "#", "*", ":")
SYMBOLS = ("€", "+", "©", "°")
MARKS = ("\u0301", "\u093f")
EMOJI = ("😀", "🇺")
BLOCKS = ("ab", "a ", " a", "1a", "a1", "a.", ".a", " .", "\r\n", "a\n", "aA", "1 ", "e\u0301", "😀a",
          "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F44D\U0001F3FD")
SEPARATORS = (" ", "\t", "\n", "\r\n", "\x1c", "\xa0", ".", "\u3000")
SEPARATED = (("a", "a"), ("1", "1"))
LONGEST_TOKENS = 6
SPECIAL_LITERALS = 4


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # run | block | token | special | separator
    unit: str  # the repeated unit (X for a separator family)
    separator: str = ""
    tail: str = ""  # Y for a separator family

    def text(self, n: int) -> str:
        """The family's text of exactly ``n`` characters."""
        if self.kind != "separator":
            reps = -(-n // len(self.unit))
            return (self.unit * reps)[:n]
        left = max(0, (n - len(self.separator)) // 2)
        right = max(0, n - len(self.separator) - left)
        return (self.unit * left + self.separator + self.tail * right)[:n]

    def runs(self, n: int) -> list[list]:
        """``text(n)`` as ``[[unit, count], ...]`` (what records and reports show)."""
        if self.kind != "separator":
            whole, rest = divmod(n, len(self.unit))
            return [[self.unit, whole]] + ([[self.unit[:rest], 1]] if rest else [])
        left = max(0, (n - len(self.separator)) // 2)
        right = max(0, n - len(self.separator) - left)
        return [r for r in ([self.unit, left], [self.separator, 1], [self.tail, right]) if r[1]]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "unit": self.unit, "separator": self.separator,
                "tail": self.tail}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "Family":
        return cls(doc["name"], doc["kind"], doc["unit"], doc.get("separator", ""), doc.get("tail", ""))


def _code(text: str) -> str:
    return "+".join(f"U+{ord(c):04X}" for c in text)


def character_families() -> list[Family]:
    chars = list(dict.fromkeys([*LETTERS, *DIGITS, *PUNCTUATION, *SYMBOLS, *MARKS, *EMOJI,
                                *(chr(cp) for cp in SEPARATING)]))
    return [Family(f"run:{_code(c)}", "run", c) for c in chars]


def block_families() -> list[Family]:
    return [Family(f"block:{_code(b)}", "block", b) for b in BLOCKS]


def separator_families() -> list[Family]:
    return [Family(f"sep:{x}|{_code(s)}|{y}", "separator", x, s, y) for x, y in SEPARATED for s in SEPARATORS]


def vocabulary_families(reference: EngineSpec) -> list[Family]:
    """The vocabulary's longest tokens that are text, and its special-token literals."""
    try:
        from verify.adversarial.vocab.texts import token_texts, vocabulary_of

        vocab = vocabulary_of(reference)
    except Exception:  # an engine whose vocabulary cannot be listed: the generic families only
        return []
    texts = token_texts(vocab.tokens)
    whole = [(i, t.text) for i, t in texts.items() if t is not None and not t.joined and t.text.strip()]
    longest = sorted(whole, key=lambda it: (-len(it[1]), it[0]))[:LONGEST_TOKENS]
    families = [Family(f"token:{i}", "token", text) for i, text in longest]
    specials = sorted(vocab.added.items(), key=lambda item: item[1])[:SPECIAL_LITERALS]
    families += [Family(f"special:{i}", "special", text) for text, i in specials]
    return families


def families_for(reference: EngineSpec, kinds: tuple[str, ...] | None = None) -> list[Family]:
    every = character_families() + block_families() + separator_families() + vocabulary_families(reference)
    return [f for f in every if kinds is None or f.kind in kinds]
