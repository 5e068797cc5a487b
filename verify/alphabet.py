"""The alphabet of a pre-tokenizer pattern: every code point in exactly one **atom**.

Two code points are in one atom when every leaf of the reference's split patterns treats
them alike -- each character class (``[^\\r\\n\\p{L}\\p{N}]``), property (``\\p{L}``), escape
(``\\s``, ``\\S``), ``.`` and literal character (``'``, ``\\r``, the contraction letters), each
evaluated under the case folding of the group it sits in (``(?i:...)``) -- every refinement
(``refinements``: the special-token literals' delimiters, what the normalizer changes) treats
them alike, and their UTF-8 encodings have the same length. On cl100k that gives 24 atoms
(letters; the contraction letters ``s/d/m/t``, ``l``, ``e``, ``r`` with ``v``; digits;
whitespace without newlines; newlines; the space; the apostrophe; ``<|>_``; everything else;
each split by UTF-8 length). Literal letters that a group of literal alternatives treats
alike are one test: ``(?i:[sdmt]|ll|ve|re)`` matches what ``(?i:[dmst]|ll|[rv]e)`` matches
(every string of the group stays one of its strings when an ``r`` becomes a ``v`` or back),
so ``r`` and ``v`` share an atom (``merge_alternatives``); ``'s|'t|'m|'d`` likewise.

Leaves are read by a small scanner of the regex syntax (``leaves``); each is evaluated
over the string of every code point at once (``(?:LEAF)+`` with ``regex.finditer``: a
property holds on runs of code points, so a leaf costs a few thousand matches), into a
bit of a signature per code point; atoms are the distinct signatures (numpy). Surrogates
(U+D800..U+DFFF) cannot be encoded in UTF-8 and are in no atom (``EXCLUDED``).

Each atom has representatives, in this order, the first ``reps`` of them used: the
**commonest** (the code point that occurs in the most vocabulary tokens, so that it takes
part in merges; the lowest code point when none does), the **rarest** (the highest code
point) and the **lowest**. The alphabet is deterministic: it follows from the patterns,
the vocabulary's single-code-point tokens and the ``regex`` module's Unicode tables
(recorded as ``regex_version``), and is cached per process.

This module knows patterns and vocabularies, not engines: ``verify certify`` reads an engine
spec's vocabulary with ``verify.adversarial.certify.atoms.alphabet_of(spec)``; triage asks
``pattern_classes`` what a pattern sees of each character.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import regex

from verify.errors import UsageError

ALPHABET_SCHEMA = "verify.alphabet/2"  # /2: literal alternatives merged
MAX_CODE_POINT = 0x10FFFF
EXCLUDED = (0xD800, 0xDFFF)  # surrogates: no UTF-8 encoding, in no atom
MAX_LEAVES = 58  # signature bits (6 are the UTF-8 length)


@dataclass(frozen=True)
class Leaf:
    """One single-character test of a pattern, as it would be written alone."""

    text: str  # regex source matching one character: ``\\p{L}``, ``[sdmt]``, ``'``
    fold: bool  # inside ``(?i...)``
    note: str = ""  # a refinement's name (not a part of the pattern): what it tells apart

    def label(self) -> str:
        if self.note:
            return self.note
        return self.text + (" (case fold)" if self.fold else "")


@dataclass(frozen=True)
class Atom:
    index: int
    size: int  # code points
    utf8: int  # UTF-8 length of every member
    lowest: int
    highest: int
    representatives: tuple[int, ...]  # commonest, rarest, lowest (distinct, in that order)
    leaves: tuple[str, ...]  # the leaves that hold on it
    label: str  # general categories of the representatives, or the literal members

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "label": self.label, "size": self.size, "utf8": self.utf8,
                "lowest": f"U+{self.lowest:04X}", "highest": f"U+{self.highest:04X}",
                "representatives": [{"code_point": f"U+{c:04X}", "char": chr(c)} for c in self.representatives],
                "leaves": list(self.leaves)}


@dataclass(frozen=True)
class Alphabet:
    patterns: tuple[str, ...]
    leaves: tuple[Leaf, ...]
    atoms: tuple[Atom, ...]
    digest: str  # of the patterns, the representatives' ranks and the regex version

    def __len__(self) -> int:
        return len(self.atoms)

    def representatives(self, reps: int) -> list[list[str]]:
        """Per atom, its first ``reps`` representatives as one-character strings."""
        return [[chr(c) for c in a.representatives[:reps]] for a in self.atoms]

    def as_dict(self, reps: int | None = None) -> dict[str, Any]:
        atoms = [a.as_dict() for a in self.atoms]
        if reps is not None:
            for doc in atoms:
                doc["representatives"] = doc["representatives"][:reps]
        return {"schema": ALPHABET_SCHEMA, "digest": self.digest, "patterns": list(self.patterns),
                "regex_version": regex.__version__, "leaves": [leaf.label() for leaf in self.leaves],
                "excluded": f"U+{EXCLUDED[0]:04X}..U+{EXCLUDED[1]:04X} (surrogates)",
                "code_points": int(sum(a.size for a in self.atoms)), "atoms": atoms}


# --- the scanner ----------------------------------------------------------------------------------------

_ESCAPED = {"r": "\r", "n": "\n", "t": "\t", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b", "0": "\0"}
_CLASS_ESCAPES = set("sSdDwWhHvV")  # \v is a literal in Rust's syntax but a class in some; \v: literal above
_ANCHORS = set("bBAzZG")


# an innermost group: its opening (``(``, ``(?:``, ``(?i:``) and a body with no parenthesis
_INNER_GROUP = regex.compile(r"\((\?[a-zA-Z]*:)?((?:[^()\\]|\\.)*)\)")
_PLAIN = regex.compile(r"[A-Za-z0-9']")  # literal characters a merged group may hold
MAX_GROUP_STRINGS = 4096


def merge_alternatives(pattern: str) -> str:
    """``pattern`` with each group of literal alternatives (``(?i:[sdmt]|ll|ve|re)``) written
    with the characters it treats alike as one class (``(?i:[dmst]|ll|[rv]e)``): the same
    strings match, and the letters become one test. Characters ``x`` and ``y`` are alike in
    a group when each of its strings with one ``x`` made a ``y`` (or back) is again one of its
    strings; a group of anything but literal letters, digits, apostrophes and classes of
    them is left as written."""

    def rewrite(m: regex.Match) -> str:
        strings = _group_strings(m.group(2))
        if strings is None:
            return m.group(0)
        chars = sorted({c for s in strings for c in s})
        parent = {c: c for c in chars}

        def root(c: str) -> str:
            while parent[c] != c:
                c = parent[c]
            return c

        for i, x in enumerate(chars):
            for y in chars[i + 1:]:
                if root(x) != root(y) and _alike(strings, x, y):
                    parent[root(y)] = root(x)
        classes: dict[str, list[str]] = {}
        for c in chars:
            classes.setdefault(root(c), []).append(c)
        if all(len(members) == 1 for members in classes.values()):
            return m.group(0)
        written = {c: (c if len(classes[root(c)]) == 1 else "[" + "".join(classes[root(c)]) + "]") for c in chars}
        branches = dict.fromkeys("".join(written[c] for c in s) for s in sorted(strings))
        return "(" + (m.group(1) or "") + "|".join(branches) + ")"

    return _INNER_GROUP.sub(rewrite, pattern)


def _group_strings(body: str) -> set[str] | None:
    """Every string a group body of literal alternatives matches, or None for any other body."""
    if "|" not in body:
        return None
    strings: set[str] = set()
    for branch in body.split("|"):
        options = [""]
        i = 0
        while i < len(branch):
            if branch[i] == "[":
                end = branch.find("]", i)
                members = branch[i + 1:end] if end > i + 1 else ""
                if not members or not all(_PLAIN.fullmatch(c) for c in members):
                    return None
                i = end + 1
            elif _PLAIN.fullmatch(branch[i]):
                members, i = branch[i], i + 1
            else:
                return None
            options = [o + c for o in options for c in members]
            if len(options) > MAX_GROUP_STRINGS:
                return None
        strings.update(options)
    if "" in strings or any(a != b and b.startswith(a) for a in strings for b in strings):
        return None  # an empty branch, or one a prefix of another: their order matters, left as written
    return strings


def _alike(strings: set[str], x: str, y: str) -> bool:
    for s in strings:
        for i, c in enumerate(s):
            if c in (x, y) and s[:i] + (y if c == x else x) + s[i + 1:] not in strings:
                return False
    return True


def leaves(pattern: str) -> list[Leaf]:
    """The single-character tests of ``pattern`` in order of appearance, each once (groups of
    literal alternatives merged first: ``merge_alternatives``)."""
    pattern = merge_alternatives(pattern)
    found: dict[Leaf, None] = {}
    folds = [False]  # the case fold of each open group; the last is the current one
    i, n = 0, len(pattern)

    def add(text: str) -> None:
        found.setdefault(Leaf(text, folds[-1]), None)

    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise UsageError(f"pattern {pattern!r} ends in a backslash")
            e = pattern[i + 1]
            if e in "pP":
                if i + 2 < n and pattern[i + 2] == "{":
                    end = pattern.index("}", i + 2)
                    add(pattern[i:end + 1])
                    i = end + 1
                else:
                    add(pattern[i:i + 3])
                    i += 3
                continue
            if e in "xu":
                m = regex.match(r"\\(?:x\{[0-9A-Fa-f]+\}|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4})", pattern[i:])
                if m is None:
                    raise UsageError(f"pattern {pattern!r}: a \\{e} escape it cannot read at {i}")
                digits = m.group(0)[2:].strip("{}")
                add(regex.escape(chr(int(digits, 16))))
                i += len(m.group(0))
                continue
            if e in _ESCAPED and e != "v":
                add(regex.escape(_ESCAPED[e]))
            elif e in _CLASS_ESCAPES:
                add("\\" + e)
            elif e not in _ANCHORS and not e.isdigit():
                add(regex.escape(e))
            i += 2
            continue
        if c == "[":
            end = _class_end(pattern, i)
            add(pattern[i:end + 1])
            i = end + 1
            continue
        if c == "(":
            i += 1
            fold = folds[-1]
            if pattern.startswith("?", i):
                m = regex.match(r"\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", pattern[i:])
                if m and (m.group(1) or m.group(2) is not None):
                    if "i" in m.group(1):
                        fold = True
                    if m.group(2) and "i" in m.group(2):
                        fold = False
                    if m.group(3) == ")":  # (?i): the rest of the enclosing group
                        folds[-1] = fold
                        i += len(m.group(0))
                        continue
                    i += len(m.group(0))
                else:  # (?: (?= (?! (?<= (?<! (?> (?P<name>
                    m = regex.match(r"\?(?:P?<[A-Za-z_]\w*>|<=|<!|[:=!>])", pattern[i:])
                    if m is None:
                        raise UsageError(f"pattern {pattern!r}: a group it cannot read at {i - 1}")
                    i += len(m.group(0))
            folds.append(fold)
            continue
        if c == ")":
            if len(folds) > 1:
                folds.pop()
            i += 1
            continue
        if c == "{":
            m = regex.match(r"\{\d*(?:,\d*)?\}", pattern[i:])
            if m:
                i += len(m.group(0))
                continue
        if c in "|*+?^$":
            i += 1
            continue
        add("." if c == "." else regex.escape(c))
        i += 1
    return list(found)


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``start`` (nested classes, escapes)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading ] is a literal
        i += 1
    depth = 1
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            if pattern.startswith("[:", i):  # POSIX [:alpha:]
                end = pattern.find(":]", i + 2)
                if end > 0:
                    i = end + 2
                    continue
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise UsageError(f"pattern {pattern!r}: the class opened at {start} is not closed")


# --- evaluation -------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _every_code_point() -> str:
    return "".join(map(chr, range(MAX_CODE_POINT + 1)))


def holds(leaf: Leaf) -> np.ndarray:
    """A boolean per code point: does ``leaf`` match it alone."""
    flags = regex.V0 | (regex.IGNORECASE if leaf.fold else 0)
    try:
        compiled = regex.compile(f"(?:{leaf.text})+", flags)
    except regex.error as exc:
        raise UsageError(f"the pattern's part {leaf.text!r} is not a regex this harness can evaluate ({exc})") from None
    mask = np.zeros(MAX_CODE_POINT + 1, dtype=bool)
    for m in compiled.finditer(_every_code_point()):
        mask[m.start():m.end()] = True
    return mask


def utf8_lengths() -> np.ndarray:
    cp = np.arange(MAX_CODE_POINT + 1)
    return np.where(cp < 0x80, 1, np.where(cp < 0x800, 2, np.where(cp < 0x10000, 3, 4))).astype(np.uint64)


NORMALIZATION_FORMS = ("NFC", "NFD", "NFKC", "NFKD")


def refinements(special_literals: Sequence[str] = (), normalizer: str | None = None) -> tuple[Leaf, ...]:
    """What else than the pattern changes ids, as tests of one character: the characters of the
    special-token literals that are not letters or digits (``<``, ``|``, ``>``: where an engine's
    special-token scanner starts, in plain text too) and, under a normalizer, whether the
    normalization changes the character."""
    out = []
    delimiters = sorted({c for literal in special_literals for c in literal if not c.isalnum()})
    if delimiters:
        out.append(Leaf("[" + "".join(regex.escape(c) for c in delimiters) + "]", False,
                        "special-token delimiter " + "".join(delimiters)))
    if normalizer in NORMALIZATION_FORMS:
        out.append(Leaf(_changed_by(normalizer), False, f"changed by {normalizer}"))
    return tuple(out)


@lru_cache(maxsize=4)
def _changed_by(form: str) -> str:
    """A character class of the code points ``form`` changes (ranges of ``\\UXXXXXXXX`` escapes)."""
    changed = [c for c in range(MAX_CODE_POINT + 1)
               if not EXCLUDED[0] <= c <= EXCLUDED[1] and unicodedata.normalize(form, chr(c)) != chr(c)]
    parts, start = [], None
    for i, c in enumerate(changed):
        if start is None:
            start = c
        if i + 1 == len(changed) or changed[i + 1] != c + 1:
            parts.append(f"\\U{start:08X}" + (f"-\\U{c:08X}" if c != start else ""))
            start = None
    return "[" + "".join(parts) + "]"


def alphabet(patterns: Sequence[str], ranks: dict[bytes, int] | None = None,
             refined: tuple[Leaf, ...] = ()) -> Alphabet:
    """The atoms of ``patterns`` (applied in order; their leaves pooled), refined by the tests
    ``refined`` (``refinements``). ``ranks``: the
    vocabulary's token -> rank, to pick each atom's commonest member: the one that occurs in
    the most tokens (so it takes part in merges: ``'.'``, not ``'!'``, joins a letter after it
    into one token), ties to the lower rank as a token of its own, then the lower code point
    (None: the lowest member)."""
    occurs: dict[int, int] = {}
    own_rank: dict[int, int] = {}
    for token, rank in (ranks or {}).items():
        text = token.decode("utf-8", "ignore")
        for c in set(text):
            occurs[ord(c)] = occurs.get(ord(c), 0) + 1
        if len(text) == 1 and len(text.encode()) == len(token):
            own_rank[ord(text)] = min(rank, own_rank.get(ord(text), rank))
    score = tuple(sorted((c, (-n, own_rank.get(c, 1 << 40))) for c, n in occurs.items()))
    digest = hashlib.sha256(repr(score).encode()).hexdigest()[:16]
    return _alphabet(tuple(patterns), score, digest, tuple(refined))


@lru_cache(maxsize=8)
def _alphabet(patterns: tuple[str, ...], score: tuple[tuple[int, tuple[int, int]], ...], rank_digest: str,
              refined: tuple[Leaf, ...] = ()) -> Alphabet:
    pooled: dict[Leaf, None] = {}
    for pattern in patterns:
        for leaf in leaves(pattern):
            pooled.setdefault(leaf, None)
    for leaf in refined:
        pooled.setdefault(leaf, None)
    found = list(pooled)
    if len(found) > MAX_LEAVES:
        raise UsageError(f"the pattern has {len(found)} distinct character tests; at most {MAX_LEAVES} are supported")
    signature = _signature(tuple(found))
    valid = np.ones(MAX_CODE_POINT + 1, dtype=bool)
    valid[EXCLUDED[0]:EXCLUDED[1] + 1] = False
    code_points = np.flatnonzero(valid)
    keys, inverse = np.unique(signature[code_points], return_inverse=True)
    score_of = dict(score)
    groups: list[tuple[int, int, np.ndarray, int]] = []
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(keys) + 1))
    for g in range(len(keys)):
        members = code_points[order[bounds[g]:bounds[g + 1]]]  # ascending
        groups.append((int(keys[g] & np.uint64(7)), int(members[0]), members, int(keys[g])))
    groups.sort(key=lambda t: (t[0], t[1]))
    atoms = []
    for index, (utf8, lowest, members, key) in enumerate(groups):
        ranked = [(score_of[int(c)], int(c)) for c in members if int(c) in score_of]
        commonest = min(ranked)[1] if ranked else lowest
        highest = int(members[-1])
        reps = tuple(dict.fromkeys((commonest, highest, lowest)))
        held = tuple(found[b].label() for b in range(len(found)) if key >> (b + 3) & 1)
        atoms.append(Atom(index, int(members.size), utf8, lowest, highest, reps, held, _label(members)))
    digest = hashlib.sha256("\0".join([ALPHABET_SCHEMA, *patterns, *(leaf.text for leaf in refined), rank_digest,
                                       regex.__version__]).encode()).hexdigest()[:16]
    return Alphabet(patterns, tuple(found), tuple(atoms), digest)


def _label(members: np.ndarray) -> str:
    if members.size <= 4:
        return " ".join(repr(chr(int(c))) for c in members)
    sample = members[:: max(1, members.size // 64)]
    cats: dict[str, int] = {}
    for c in sample:
        cat = unicodedata.category(chr(int(c)))
        cats[cat] = cats.get(cat, 0) + 1
    top = sorted(cats, key=lambda k: (-cats[k], k))
    return "|".join(top[:3]) + ("|..." if len(top) > 3 else "")


def atom_table(alpha: Alphabet) -> np.ndarray:
    """Code point -> atom index (-1 for the excluded), for classifying texts."""
    table = np.full(MAX_CODE_POINT + 1, -1, dtype=np.int32)
    return _fill_table(alpha, table)


@lru_cache(maxsize=4)
def _signature(found: tuple[Leaf, ...]) -> np.ndarray:
    """Per code point: bits 0..2 its UTF-8 length, bit 3 + i whether leaf i holds on it. Cached:
    the alphabet and its table (``atom_table``) need the same one (read-only)."""
    signature = utf8_lengths()
    for bit, leaf in enumerate(found):
        signature |= holds(leaf).astype(np.uint64) << np.uint64(bit + 3)
    signature.flags.writeable = False
    return signature


def _fill_table(alpha: Alphabet, table: np.ndarray) -> np.ndarray:
    signature = _signature(alpha.leaves)
    by_key = {}
    for atom in alpha.atoms:
        by_key[int(signature[atom.lowest])] = atom.index
    valid = np.ones(MAX_CODE_POINT + 1, dtype=bool)
    valid[EXCLUDED[0]:EXCLUDED[1] + 1] = False
    for key, index in by_key.items():
        table[(signature == np.uint64(key)) & valid] = index
    return table


def atoms_of(text: str, table: np.ndarray) -> list[int]:
    return [int(table[ord(c)]) for c in text]


def alphabet_of_vocabulary(view) -> Alphabet:
    """The alphabet of a vocabulary's pattern (a ``verify.vocab.inspect.VocabularyView``: its
    patterns, tokens for the commonest members, special-token literals and normalizer)."""
    special = set(view.special.values())
    ranks = {t: i for i, t in enumerate(view.tokens) if t and i not in special}
    return alphabet([p.regex for p in view.patterns], ranks, refinements(tuple(view.special), view.normalizer))


@lru_cache(maxsize=4)
def _class_table(patterns: tuple[str, ...]) -> np.ndarray:
    """Code point -> the index of the set of pattern tests that hold on it (atoms that differ
    only in UTF-8 length share it); -1 for the excluded."""
    alpha = alphabet(patterns)
    by_atom = atom_table(alpha)
    ids: dict[tuple[str, ...], int] = {}
    of_atom = np.array([ids.setdefault(a.leaves, len(ids)) for a in alpha.atoms] + [-1], dtype=np.int32)
    return of_atom[by_atom]  # -1 indexes the trailing -1


def pattern_classes(patterns: Sequence[str]):
    """``classes(text)``: per character, the set of the patterns' tests that holds on it, as a
    tuple of small integers -- two texts with the same tuple are one input to the pre-tokenizer
    (``'\\t.a'``, ``'\\x0c.A'`` and ``'\\t\u2019a'`` alike), which is how triage tells one
    unexplained scanner rule from another (``verify.causes``). The table is built on first use."""
    key = tuple(patterns)

    def classes(text: str) -> tuple[int, ...]:
        table = _class_table(key)
        return tuple(int(table[ord(c)]) for c in text)

    return classes
