"""Causes: what explains a minimised reproducer, and the cluster key that follows from it.

A cluster's identity -- the key that baselines, allowlists and ``--known-clusters`` match -- is
its *cause*, established from the minimised reproducer, never its symptom (the character
classes where the first difference happened to fall in some larger input): one bug met in
24 surroundings is one cluster, and a new bug never inherits the key of an old one because
both first differ between a letter and a space.

    explain(kind, error_type, block, probe) -> Cause      one minimised block (triage's ``minimized``)
    merge_length(causes) -> {index: merged Cause}         one threshold across character classes

The explanations, tried in this order (the first that holds names the cause):

  history      the finding needs calls made before it (``block["history"]``, minimised):
               ``ids/history/<poison shapes>><victim shape>``
  batch        it needs the other inputs of its own batch call: ``ids/batch/<element shapes>``
  special      the reproducer holds a special-token literal of the reference's vocabulary (or a
               look-alike) and the engine treats it otherwise: ``ids/special/<plain|allowed>:<what>``
               (``as-special``: a literal in plain text became the special token; ``as-text``:
               an allowed literal stayed text; ``split``: the text around it splits otherwise)
  contraction  an apostrophe contraction (``'s 't 're 've 'm 'll 'd``) at the difference:
               ``ids/contraction/after:<class before the apostrophe>``
  length       a run ``unit × n`` that differs where ``unit × (n-1)`` agrees: a threshold, kept as
               an interval in characters and in UTF-8 bytes; ``merge_length`` joins thresholds of
               one engine whose intervals meet (``'a'×500`` and ``'\\u3000'×167`` are both "500
               bytes") and names them ``ids/length/bytes>=500`` (``chars``, or neither when only
               ASCII runs say it)
  cut          a run with one other character near its end (``'1'×24997 + '\\x1c' + '1'×3``) that
               agrees one character shorter while the plain run as long agrees: a character at a
               length threshold, ``ids/cut/chars>=25001`` whatever the character (merged like
               ``length``). When the plain run as long differs too, and is a threshold, the other
               characters are incidental: it is that ``length`` cause (``'.'×495 + '\\x00' + '.'×4``
               and ``'/'×2 + '-'×112 + ...`` are ``'.'×500``'s and ``'-'×500``'s 500 bytes; so is a
               reproducer that is one pre-token of the reference's pattern, '\\xa0' + 'a'×498). A
               long reproducer of several runs (at least ``LONG_TEXT_CHARS``: a separator family at a
               chunk size) that agrees one unit shorter is a threshold on the text's length: a ``cut``
               when a character found nowhere in its body sits near its end, else a ``length``.
               Thresholds within 1/``NEAR`` of each other are one (a chunk of 25,000 characters
               first shows at 25,001 in one run and at 25,008 in another)
  unicode      a code point whose Unicode data differs between versions (assigned in, or with a
               general category changed in, a version newer than the oldest known), or that some
               engines count as whitespace, or that NFC/NFKC changes:
               ``ids/unicode/<assigned|category|whitespace|nfc|nfkc>@<version>``; or a sequence that
               NFC/NFKC changes though none of its code points does alone (a letter and its
               combining mark): ``ids/unicode/nfc@normalization``
  cross-split  the engine's first differing token spans a boundary of the reference's
               pre-tokenizer: a token joined across a split, whatever the characters:
               ``ids/cross-split``
  reproducer   none of these: the cause is the reproducer itself,
               ``ids/reproducer/<shape>/<digest>`` -- a different reproducer is a different key,
               so an unexplained bug stays new until someone names it. When the reference's
               pattern is known, a short reproducer is keyed instead by what the pattern sees
               of each character (``ids/reproducer/<shape>/pattern-<digest>``: the tests of the
               pattern that hold on it, ``verify.alphabet.pattern_classes``), so ``'\\t.a'`` and
               ``'\\x0c.A'``, one input to the scanner, are one cluster. One exception: a
               reproducer that is one character, or a run of it (``' '``, ``'\\t'``, ``'\\n\\n'``:
               the minimiser keeps each finding's own characters), is keyed by its class and
               what the engine did to it, ``ids/reproducer/space/drops`` (``drops``, ``adds``,
               ``splits``, ``merges``, ``changes`` its tokens): one rule met on every whitespace
               character is one cluster

A finding with no minimised reproducer (triage's budget, or it did not reproduce) is
``.../unminimised/<symptom>/<input key>``: new every time, never matched to another bug.
``ids`` above is the finding kind; failures are ``error/<type>/...``, ``crash/<type>/...``.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from verify.classify import SPECIAL_LOOKALIKE, char_class
from verify.outcome import FindingKind
from verify.run_length import describe, to_runs
from verify.unicode_tables import tables as ud
from verify.unicode_tables.whitespace import WHITESPACE_LIKE

CONTRACTION_SUFFIXES = ("s", "t", "re", "ve", "m", "ll", "d")
MIN_RUN_CHARS = 8  # a shorter run is no length threshold
CUT_NEAR_END = 8  # the probe of a cut sits within this many characters of the end
MAX_UNITS_TRIED = 3  # plain runs tried per reproducer of several runs (its longest units)
LONG_TEXT_CHARS = 512  # a reproducer this long that agrees one unit shorter is a length threshold
MAX_CLASSED_CHARS = 64  # a reproducer up to this long is keyed by its pattern classes, when known
NEAR = 1000  # thresholds within 1/NEAR of each other are one (a cut meets tokens a few characters on)


@dataclass(frozen=True)
class Cause:
    kind: str  # history | batch | special | contraction | length | cut | unicode | cross-split | reproducer | unminimised
    key: str  # the cluster's identity
    name: str  # one line a person reads, from the minimised reproducer
    chars: tuple[int, int] | None = None  # length/cut: the threshold lies in (lo, hi] characters
    bytes: tuple[int, int] | None = None  # ... and in (lo, hi] UTF-8 bytes
    ascii: bool = False  # length/cut: the run's unit is ASCII (characters = bytes)
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        doc = {"kind": self.kind, "key": self.key, "name": self.name}
        if self.chars is not None:
            doc["threshold"] = {"chars": list(self.chars), "bytes": list(self.bytes or ())}
        if self.params:
            doc.update(self.params)
        return doc


@dataclass
class Probe:
    """What explaining may ask: whether reference and candidate agree on a text (None when it cannot
    be told), the reference's special-token literals and pre-tokenizer pattern (None: unknown)."""

    agree: Callable[[list], "bool | None"] = lambda segments: None
    specials: tuple[str, ...] = ()
    pattern: Any = None  # a compiled ``regex`` pattern of the reference's pre-tokenizer
    # per character, which of the pattern's tests hold on it (``verify.alphabet.pattern_classes``); None: unknown
    classes: Callable[[str], tuple[int, ...]] | None = None


def prefix(kind: str, error_type: str | None) -> str:
    return kind if kind == FindingKind.IDS else f"{kind}/{error_type or 'unknown'}"


MAX_SHAPE_PARTS = 4


def shape(text: str) -> str:
    """The character classes of a text, runs collapsed: ``' '×4096 + 'a'`` is ``space*·letter``; a
    text of more than ``MAX_SHAPE_PARTS`` runs is the set of its classes, ``mixed(letter+punct+space)``."""
    out: list[str] = []
    prev, count = None, 0
    for ch in text:
        c = char_class(ch)
        if c == prev:
            count += 1
            continue
        if prev is not None:
            out.append(prev + ("*" if count > 1 else ""))
        prev, count = c, 1
    if prev is not None:
        out.append(prev + ("*" if count > 1 else ""))
    if len(out) > MAX_SHAPE_PARTS:
        return "mixed(" + "+".join(sorted({part.rstrip("*") for part in out})) + ")"
    return "·".join(out) or "empty"


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass")
                          ).hexdigest()[:10]


def _text(block: dict[str, Any]) -> str:
    return "".join(t for t, _ in block.get("input") or [])


def _readable(text: str, limit: int = 80) -> str:
    runs = to_runs(text)
    return describe(runs, limit=limit) if len(text) > 24 else repr(text)


# --- the explanations ---------------------------------------------------------------------------

def explain(kind: str, error_type: str | None, block: dict[str, Any] | None, probe: Probe,
            symptom: str = "", input_key: str = "") -> Cause:
    """The cause of one finding from its minimised block (None: not minimised)."""
    head = prefix(kind, error_type)
    if not block:
        return Cause("unminimised", f"{head}/unminimised/{symptom or 'unknown'}/{input_key[:12] or 'none'}",
                     "not minimised: no cause established")
    for explainer in (_history, _special, _contraction, _length, _unicode, _cross_split):
        cause = explainer(head, block, probe)
        if cause is not None:
            return cause
    text = _text(block)
    form, edit = shape(text), _edit(block)
    if edit is not None and len(set(text)) == 1:
        one_class = form.rstrip("*")
        return Cause("reproducer", f"{head}/reproducer/{one_class}/{edit}",
                     f"unexplained: the engine {edit} the tokens of a {one_class} text: {_readable(text)}")
    if probe.classes is not None and 0 < len(text) <= MAX_CLASSED_CHARS:
        # characters the pattern cannot tell apart make one input to its scanner: one rule, one key
        # ('\t.a', '\x0c.A' and '\t\u2019a' are whitespace, punctuation, letter to cl100k's pattern)
        return Cause("reproducer", f"{head}/reproducer/{form}/pattern-{_digest(list(probe.classes(text)))}",
                     f"unexplained: {_readable(text)}")
    return Cause("reproducer", f"{head}/reproducer/{form}/{_digest(block.get('input'))}",
                 f"unexplained: {_readable(text)}")


def _edit(block: dict[str, Any]) -> str | None:
    """What the engine did from the first difference on (``ids`` blocks only): ``drops`` or
    ``adds`` every token there, ``merges`` (fewer tokens), ``splits`` (more), ``changes`` (as many)."""
    expected, actual = block.get("expected"), block.get("actual")
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return None
    want, got = len(expected.get("ids") or ()), len(actual.get("ids") or ())
    if want and not got:
        return "drops"
    if got and not want:
        return "adds"
    return "merges" if got < want else "splits" if got > want else "changes"


def _history(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    from verify.history import History

    doc = block.get("history")
    if not doc or "calls" not in doc:
        return None
    history = History.from_json(doc)
    kind = history.cause_kind()
    if kind == "stateless":
        return None
    i, j = history.victim
    victim = "".join(history.calls[i][j].text) if j is not None else None
    if kind == "history":
        poison = sorted({shape(s.text) for call in history.calls[:i] for s in call})
        victim_shape = shape(victim) if victim is not None else "call"
        return Cause("history", f"{head}/history/{'+'.join(poison)}>{victim_shape}",
                     f"depends on earlier calls: {history.describe(48)}",
                     params={"calls": len(history.calls)})
    elements = sorted({shape(s.text) for s in history.calls[i]})
    return Cause("batch", f"{head}/batch/{'+'.join(elements)}",
                 f"depends on its batch ({len(history.calls[i])} inputs): {history.describe(48)}",
                 params={"batch_size": len(history.calls[i])})


def _literals(text: str, probe: Probe) -> list[str]:
    found = [s for s in probe.specials if s and s in text]
    found += [m.group() for m in SPECIAL_LOOKALIKE.finditer(text) if m.group() not in found]
    return found


def _special(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    segments = block.get("input") or []
    literals = [(lit, bool(allow)) for text, allow in segments for lit in _literals(text, probe)]
    if not literals:
        return None
    literal, allowed = literals[0]
    actual = (block.get("actual") or {}).get("pieces") or []
    expected = (block.get("expected") or {}).get("pieces") or []
    if not allowed and literal in actual:
        what = "as-special"
    elif allowed and literal in expected and literal not in actual:
        what = "as-text"
    else:
        what = "split"
    where = "allowed" if allowed else "plain"
    words = {"as-special": "becomes the special token", "as-text": "stays text",
             "split": "changes how the text around it splits"}[what]
    return Cause("special", f"{head}/special/{where}:{what}",
                 f"a special-token literal {'allowed' if allowed else 'in plain text'} {words}: "
                 f"{_readable(_text(block))}", params={"literal": literal})


def _contraction(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    text = _text(block)
    at = block.get("char_offset")
    for i, ch in enumerate(text):
        if ch not in "'’":
            continue
        rest = text[i + 1:i + 3].lower()
        if not any(rest.startswith(s) for s in CONTRACTION_SUFFIXES):
            continue
        if at is not None and abs(int(at) - i) > 2:
            continue  # an apostrophe elsewhere: not where the engines part
        before = char_class(text[i - 1]) if i > 0 else "start"
        return Cause("contraction", f"{head}/contraction/after:{before}",
                     f"contraction rule: {before} before an apostrophe contraction: {_readable(text)}")
    return None


def _threshold(segments: list, probe: Probe) -> tuple[list, int, str] | None:
    """``(runs, k, unit)`` when the reproducer is one segment of runs whose run ``k`` is a long run
    of one unit and, one unit shorter there, agrees."""
    if len(segments) != 1:
        return None
    text, allow = segments[0]
    if len(text) < MIN_RUN_CHARS:
        return None
    runs = to_runs(text)
    longest = max(range(len(runs)), key=lambda k: runs[k][1] * len(runs[k][0]))
    unit, count = runs[longest]
    if count < 2 or count * len(unit) < MIN_RUN_CHARS:
        return None
    shorter = runs[:longest] + [[unit, count - 1]] + runs[longest + 1:]
    from verify.run_length import from_runs

    if probe.agree([[from_runs(shorter), allow]]) is not True:
        return None
    return runs, longest, unit


def _length(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    cause = _run_length(head, block, probe)
    if cause is not None and cause.kind == "length":
        return cause
    return _uniform(head, block, probe) or cause or _long_text(head, block, probe)


def _long_text(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    """A long reproducer of several runs (a separator family at a chunk size: ``'a'×12500 + '\\x1c' +
    'a'×12500``) that agrees one unit shorter: a threshold on the text's length, whatever sits in
    its body -- a ``cut`` when a character found nowhere in the body sits near its end (``'a.'×12498
    + '\\x00' + '.a'×2``), else a ``length``."""
    segments = block.get("input") or []
    if len(segments) != 1 or len(segments[0][0]) < LONG_TEXT_CHARS:
        return None
    found = _threshold(segments, probe)
    if found is None:
        return None
    _, _, unit = found
    text = segments[0][0]
    body, end = text[:-CUT_NEAR_END], text[-CUT_NEAR_END:]
    probe_chars = "".join(dict.fromkeys(c for c in end if c not in set(body)))
    n, size = len(text), len(text.encode("utf-8"))
    is_ascii = text.isascii()
    chars, bytes_ = (n - len(unit), n), (size - len(unit.encode("utf-8")), size)
    if probe_chars:
        return Cause("cut", f"{head}/cut/{'' if is_ascii else 'chars'}>={n}",
                     f"a character at a length threshold ({n} characters): {_readable(text)}",
                     chars=chars, bytes=bytes_, ascii=is_ascii, params={"probe": probe_chars})
    return Cause("length", f"{head}/length/{'' if is_ascii else 'chars'}>={n}",
                 f"a text of {n} characters ({size} bytes) differs, one shorter agrees: {_readable(text)}",
                 chars=chars, bytes=bytes_, ascii=is_ascii, params={"unit": unit, "text": True})


def _uniform(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    """A reproducer of several runs (``'.'×495 + '\\x00' + '.'×4``, ``'/'×2 + '-'×112 + ...``,
    ``'\\xa0' + 'a'×498``) whose content does not matter, only its length: a plain run of one of its
    units, as long in characters or in bytes, still differs and is itself a length threshold; or
    (the reference's pattern known) the reproducer is one pre-token piece that agrees one unit
    shorter -- a threshold on the piece's length, whatever its characters. Then it is that
    ``length`` cause (a character only when neither holds: a ``cut``)."""
    segments = block.get("input") or []
    if len(segments) != 1 or len(segments[0][0]) < MIN_RUN_CHARS:
        return None
    text, allow = segments[0]
    runs = to_runs(text)
    if len(runs) < 2:
        return None
    size = len(text.encode("utf-8"))
    units = sorted({u for u, n in runs if n > 1},  # units that repeat: a run's content, not a probe
                   key=lambda u: -sum(n * len(v) for v, n in runs if v == u))[:MAX_UNITS_TRIED]
    tried = set()
    for unit in units:
        width = len(unit.encode("utf-8"))
        for plain in (unit * (len(text) // len(unit)) if len(text) % len(unit) == 0 else "",
                      unit * (size // width) if size % width == 0 else ""):
            if not plain or plain in tried:
                continue
            tried.add(plain)
            if probe.agree([[plain, allow]]) is not False:
                continue
            cause = _run_length(head, {"input": [[plain, allow]]}, probe)
            if cause is not None and cause.kind == "length":
                return replace(cause, name=f"{cause.name.split(': ', 1)[0]} (as {_readable(plain, 40)}): "
                                           f"{_readable(text)}", params={**cause.params, "uniform": True})
    if probe.pattern is None or [m.group() for m in probe.pattern.finditer(text)] != [text]:
        return None
    found = _threshold(segments, probe)
    if found is None:
        return None
    runs, k, unit = found
    chars = len(text)
    return Cause("length", f"{head}/length/{'' if text.isascii() else 'chars'}>={chars}",
                 f"a pre-token of {chars} characters ({size} bytes) differs, one shorter agrees: {_readable(text)}",
                 chars=(chars - len(unit), chars), bytes=(size - len(unit.encode('utf-8')), size), ascii=text.isascii(),
                 params={"unit": unit, "piece": True})


def _run_length(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    segments = block.get("input") or []
    found = _threshold(segments, probe)
    if found is None:
        return None
    runs, k, unit = found
    text = segments[0][0]
    total_chars, total_bytes = len(text), len(text.encode("utf-8"))
    step_chars, step_bytes = len(unit), len(unit.encode("utf-8"))
    chars, bytes_ = (total_chars - step_chars, total_chars), (total_bytes - step_bytes, total_bytes)
    is_ascii = text.isascii()
    others = [r for i, r in enumerate(runs) if i != k]
    if not others:
        return Cause("length", f"{head}/length/{'' if is_ascii else 'chars'}>={total_chars}",
                     f"a run of {total_chars} characters ({total_bytes} bytes) differs, one shorter agrees: "
                     f"{_readable(text)}", chars=chars, bytes=bytes_, ascii=is_ascii,
                     params={"unit": unit})
    tail = sum(n * len(u) for u, n in runs[k + 1:])
    if len(others) <= 2 and tail <= CUT_NEAR_END and all(len(u) * n <= 2 for u, n in others if u != unit):
        probe_chars = "".join(u for u, _ in others if u != unit)
        return Cause("cut", f"{head}/cut/{'' if is_ascii else 'chars'}>={total_chars}",
                     f"a character at a length threshold ({total_chars} characters): {_readable(text)}",
                     chars=chars, bytes=bytes_, ascii=is_ascii, params={"probe": probe_chars})
    return None


def _unicode_reason(cp: int) -> str | None:
    if cp < 0x80:
        return None
    if any(a <= cp <= b for a, b in WHITESPACE_LIKE):
        return "whitespace@definition"  # some engines count it as whitespace, some do not
    versions = ud.versions()
    assigned = ud.assigned_in(cp)
    if assigned is not None and assigned != versions[0]:
        return f"assigned@{assigned}"
    cats = {ud.category(cp, v) for v in versions}
    if len(cats) > 1:
        changed = next(v for a, v in zip(versions, versions[1:]) if ud.category(cp, a) != ud.category(cp, v))
        return f"category@{changed}"
    ch = chr(cp)
    for form in ("NFKC", "NFC"):
        if unicodedata.normalize(form, ch) != ch:
            return f"{form.lower()}@normalization"
    return None


def _unicode(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    text = _text(block)
    for ch in text:
        reason = _unicode_reason(ord(ch))
        if reason is not None:
            what, _, version = reason.partition("@")
            return Cause("unicode", f"{head}/unicode/{what}@{version}",
                         f"Unicode data ({what}, {version}): U+{ord(ch):04X} in {_readable(text)}",
                         params={"code_point": f"U+{ord(ch):04X}"})
    for form in ("NFC", "NFKC"):  # no code point alone, but the sequence composes ('a' + U+0300 -> U+00E0)
        if unicodedata.normalize(form, text) != text:
            return Cause("unicode", f"{head}/unicode/{form.lower()}@normalization",
                         f"Unicode normalization ({form} changes the sequence): {_readable(text)}")
    return None


def _cross_split(head: str, block: dict[str, Any], probe: Probe) -> Cause | None:
    if probe.pattern is None or block.get("byte_offset") is None:
        return None
    text = _text(block)
    actual = block.get("actual") or {}
    pieces, start = actual.get("pieces"), actual.get("start")
    index = block.get("token_index")
    if not pieces or start is None or index is None or not 0 <= index - start < len(pieces):
        return None
    piece = pieces[index - start].encode("utf-8", "surrogatepass") if isinstance(pieces[index - start], str) else b""
    lo = int(block["byte_offset"])
    hi = lo + len(piece)
    boundaries, at = set(), 0
    for m in probe.pattern.finditer(text):
        at = len(text[:m.end()].encode("utf-8"))
        boundaries.add(at)
    if any(lo < b < hi for b in boundaries):
        return Cause("cross-split", f"{head}/cross-split",
                     f"a token across a pre-token boundary: {_readable(text)}")
    return None


# --- one threshold across character classes --------------------------------------------------------

def _meets(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    """Whether two ``(lo, hi]`` thresholds are one: they share a point, or lie within 1/``NEAR`` of
    each other (a chunk size of 25,000 characters first shows at 25,001 in one run and at 25,008
    in another, where the chunk boundary first splits a token)."""
    if a is None or b is None:
        return False
    slack = max(a[1], b[1]) // NEAR
    return max(a[0], b[0]) - slack < min(a[1], b[1])


def _best_point(intervals: list) -> tuple[int, int]:
    """``(point, how many)``: the point that the most ``(lo, hi]`` intervals contain (the lowest
    such), e.g. 500 for ``'a'×500`` (499, 500] and ``'\u200b'×167`` (498, 501] in bytes."""
    known = [i for i in intervals if i is not None]
    best = (0, 0)
    for point in sorted({hi for _, hi in known}):
        n = sum(1 for lo, hi in known if lo < point <= hi)
        if n > best[1]:
            best = (point, n)
    return best


def merge_length(causes: Sequence[tuple[str, Cause]]) -> dict[int, Cause]:
    """``causes``: ``(engine, cause)`` in cluster order. Length (and cut) causes of one engine whose
    character or byte intervals meet are one threshold: each member's merged cause, by index,
    keyed by the measure the evidence fixes -- bytes when the members share a byte bound and not a
    character bound (``'a'×500`` and ``'\u3000'×167``), characters in the opposite case, neither
    when only ASCII runs say it -- and by the tightest member's bound."""
    parent = list(range(len(causes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    idx = [i for i, (_, c) in enumerate(causes) if c.kind in ("length", "cut")]
    for a in idx:
        for b in idx:
            (ea, ca), (eb, cb) = causes[a], causes[b]
            if b > a and ea == eb and ca.kind == cb.kind and ca.key.split("/")[0] == cb.key.split("/")[0] and \
                    (_meets(ca.chars, cb.chars) or _meets(ca.bytes, cb.bytes)):
                parent[find(b)] = find(a)
    groups: dict[int, list[int]] = {}
    for i in idx:
        groups.setdefault(find(i), []).append(i)
    out: dict[int, Cause] = {}
    for members in groups.values():
        group = [causes[m][1] for m in members]
        first = group[0]
        # the measure and the bound that explain the most members (a run whose threshold is one
        # character off, like '"'×501 among 500-byte runs, does not rename the rest)
        (at_chars, by_chars), (at_bytes, by_bytes) = (_best_point([c.chars for c in group]),
                                                      _best_point([c.bytes for c in group]))
        if all(c.ascii for c in group):
            measure, hi = "", at_chars  # characters and bytes are one measure
        elif by_bytes > by_chars:
            measure, hi = "bytes", at_bytes
        else:
            measure, hi = "chars", at_chars
        head = first.key.split(f"/{first.kind}/")[0]
        key = f"{head}/{first.kind}/{measure}>={hi}"
        what = {"bytes": f"{hi} UTF-8 bytes", "chars": f"{hi} characters", "": f"{hi} characters (or bytes)"}[measure]
        name = (f"a run of at least {what} differs" if first.kind == "length" else
                f"a character at the {what} threshold") + \
            (f" ({len(members)} character classes)" if len(members) > 1 else "") + f": {first.name.split(': ', 1)[-1]}"
        for m in members:
            out[m] = replace(causes[m][1], key=key, name=name)
    return out
