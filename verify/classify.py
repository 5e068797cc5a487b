"""Classify findings by what surrounds them, and group them into clusters.

    signature(record, sample_text) -> dict     features at the first difference
    signature_key(sig) -> str                  e.g. "ids/Zs+Lo/Common+Han/space|letter/long-run"
    cluster(records) -> list[Cluster]          grouped by (engine, reference, signature key)
    Clusters(tags).add(record)                 the same, streamed: memory per cluster, not per record
    load_tags(path) / tags_for(...)            known clusters from adversarial/tags.toml

An ``ids`` signature describes the character before the first differing token
(``char_offset``) and the one at it: general category, script, class transition
(space, digit, letter, mark, punct, symbol, control, format, other; "start"/"end"
at the edges), and flags: ``special`` (a special-token look-alike within
``NEAR`` characters), ``long-run`` (a run of one class of at least ``LONG_RUN``
characters through the offset), ``long-input`` (more than ``LONG_INPUT``
characters: suspect chunking), ``nfc`` (the text around the offset changes under
NFC), ``cut-probe`` (a length sweep's character placed at a threshold, clustered apart
from the plain run). An ``error``/``crash``/``timeout`` signature is the kind, the error type
(and the signal that killed a worker), plus the ``long-input``/``special`` flags
over the whole input.
"""

from __future__ import annotations

import hashlib
import json
import re

import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from verify.errors import ConfigError
from verify.outcome import FindingKind
from verify.toml_config import read_toml
from verify.user_regex import compile_user

NEAR = 32  # characters either side of the offset searched for special-token look-alikes
NFC_WINDOW = 4  # characters either side of the offset checked for normalisation sensitivity
LONG_RUN = 1000
LONG_INPUT = 100_000
FLAG_ORDER = ("special", "long-run", "long-input", "nfc", "cut-probe", "history", "batch")

SPECIAL_LOOKALIKE = re.compile(r"<\|[^|\s]{0,64}\|>|\[/?INST\]|<</?SYS>>|</?s>|<unk>|<pad>|<mask>"
                               r"|\[(?:CLS|SEP|PAD|MASK|UNK)\]")

# Script from the first word of a character's Unicode name. Words that name a script
# but differ from its ISO 15924 name are mapped; the rest are title-cased.
_SCRIPT_ALIASES = {"CJK": "Han", "IDEOGRAPHIC": "Han", "KANGXI": "Han", "HANGUL": "Hangul", "OL": "Ol_Chiki",
                   "NKO": "Nko", "PHAGS-PA": "Phags_Pa"}
# First words of two-word script names ("OLD ITALIC" -> Old_Italic).
_TWO_WORD = {"OLD", "NEW", "TAI", "INSCRIPTIONAL", "IMPERIAL", "CAUCASIAN", "MEETEI", "MASARAM", "PAHAWH",
             "WARANG", "NYIAKENG", "HANIFI", "KAYAH", "SORA", "PAU", "ZANABAZAR", "GUNJALA", "DIVES", "CYPRO"}
_NUMBER_WORDS = {"DIGIT", "NUMBER", "NUMERAL", "FRACTION"}
# Leading words that describe a character's form, not its script: look at the next word.
_FORM_WORDS = {"CAPITAL", "SMALL", "LETTER", "MODIFIER", "MATHEMATICAL", "FULLWIDTH", "HALFWIDTH", "CIRCLED",
               "PARENTHESIZED", "SQUARED", "NEGATIVE", "DOUBLE-STRUCK", "SUPERSCRIPT", "SUBSCRIPT", "TURNED",
               "REVERSED", "LATIN-1", "VULGAR", "EXTENDED", "DIGIT", "NUMBER", "NUMERAL", "ROMAN", "SIGN", "FRACTION"}


def char_class(ch: str | None) -> str:
    if ch is None:
        return "none"
    cat = unicodedata.category(ch)
    if ch.isspace() or cat[0] == "Z":
        return "space"
    return {"N": "digit", "L": "letter", "M": "mark", "P": "punct", "S": "symbol"}.get(cat[0]) or \
        {"Cc": "control", "Cf": "format"}.get(cat, "other")


def script(ch: str) -> str:
    """Approximate Unicode script of ``ch`` from its name (no external tables):
    Common for punctuation, symbols, spaces, controls and ASCII digits;
    Inherited for combining marks named COMBINING; Unknown when unnamed."""
    cat = unicodedata.category(ch)
    if cat in ("Cn", "Co", "Cs"):
        return "Unknown"
    if cat[0] in "PSZC" or ch in "0123456789":
        return "Common"
    name = unicodedata.name(ch, "")
    if not name:
        return "Unknown"
    words = name.split()
    if words[0] == "COMBINING":
        return "Inherited"
    if cat[0] == "N":  # "ARABIC-INDIC DIGIT THREE" -> Arabic; "ROMAN NUMERAL FOUR" -> Common
        cut = next((i for i, w in enumerate(words) if w in _NUMBER_WORDS), 0)
        words = words[:cut]
    for i, word in enumerate(words):
        if word in _FORM_WORDS:
            continue
        if word in _SCRIPT_ALIASES:
            return _SCRIPT_ALIASES[word]
        if word in _TWO_WORD and i + 1 < len(words):
            return f"{word}_{words[i + 1]}".title()
        return word.split("-")[0].title()
    return "Common"


def _run_length(text: str, at: int, cls: str, cap: int) -> int:
    """Length (capped) of the run of characters of class ``cls`` through index ``at``."""
    if not 0 <= at < len(text) or char_class(text[at]) != cls:
        return 0
    lo = at
    while lo > 0 and at - lo < cap and char_class(text[lo - 1]) == cls:
        lo -= 1
    hi = at + 1
    while hi < len(text) and hi - lo < cap and char_class(text[hi]) == cls:
        hi += 1
    return hi - lo


def _state_flags(record: dict[str, Any]) -> list[str]:
    """``history`` or ``batch`` for a finding that did not reproduce on a fresh engine
    (``verify.fresh_check``): it clusters apart from findings that do."""
    history = record.get("history") if isinstance(record.get("history"), dict) else {}
    if record.get("fresh") == "passes" and history.get("cause") in ("history", "batch"):
        return [history["cause"]]
    return ["history"] if record.get("fresh") == "passes" else []


def signature(record: dict[str, Any], sample_text: str) -> dict[str, Any]:
    kind = record.get("kind", "ids")
    text = sample_text
    flags: list[str] = _state_flags(record)
    sig: dict[str, Any] = {"kind": kind}
    if kind == FindingKind.BAD_INPUT:  # a record that never became a sample: grouped by why
        reason = (record.get("error") or {}).get("message") or "unknown"
        sig["reason"] = re.sub(r"(?<![\w-])\d+", "N", reason.split(" (")[0])
        sig["flags"] = flags
        return sig
    if kind != FindingKind.IDS:
        error = record.get("error") or {}
        sig["error_type"] = error.get("type") or "unknown"
        killed = re.search(r"killed by (SIG[A-Z0-9]+)", error.get("message") or "")
        if killed:
            sig["signal"] = killed.group(1)
        if SPECIAL_LOOKALIKE.search(text):
            flags.append("special")
        if len(text) > LONG_INPUT:
            flags.append("long-input")
        sig["flags"] = flags
        return sig
    off = record.get("char_offset")
    if off is None:
        sig["located"] = False
        if len(text) > LONG_INPUT:
            flags.append("long-input")
        sig["flags"] = flags
        return sig
    off = max(0, min(int(off), len(text)))
    before = text[off - 1] if off > 0 else None
    at = text[off] if off < len(text) else None
    sig["located"] = True
    sig["category"] = [unicodedata.category(c) if c else "-" for c in (before, at)]
    sig["script"] = [script(c) if c else "-" for c in (before, at)]
    sig["codepoint"] = [f"U+{ord(c):04X}" if c else None for c in (before, at)]
    sig["transition"] = f"{char_class(before) if before else 'start'}|{char_class(at) if at else 'end'}"
    run = max(_run_length(text, off, char_class(at), LONG_RUN) if at else 0,
              _run_length(text, off - 1, char_class(before), LONG_RUN) if before else 0)
    sig["run_length"] = run
    if SPECIAL_LOOKALIKE.search(text, max(0, off - NEAR), off + NEAR):
        flags.append("special")
    if run >= LONG_RUN:
        flags.append("long-run")
    if len(text) > LONG_INPUT:
        flags.append("long-input")
    window = text[max(0, off - NFC_WINDOW):off + NFC_WINDOW]
    if unicodedata.normalize("NFC", window) != window:
        flags.append("nfc")
    if (record.get("length") or {}).get("phase") == "cut-probe":
        flags.append("cut-probe")  # a character placed at a length threshold: apart from the plain run there
    sig["flags"] = flags
    return sig


def signature_key(sig: dict[str, Any]) -> str:
    """A short stable string naming the signature; equal keys mean one cluster."""
    kind = sig.get("kind", "ids")
    if kind == FindingKind.BAD_INPUT:
        parts = [kind, sig.get("reason") or "unknown"]
    elif kind != FindingKind.IDS:
        parts = [kind, sig.get("error_type") or "unknown"] + ([sig["signal"]] if sig.get("signal") else [])
    elif not sig.get("located"):
        parts = [kind, "unlocated"]
    else:
        parts = [kind, "+".join(sig["category"]), "+".join(sig["script"]), sig["transition"]]
    flags = [f for f in FLAG_ORDER if f in sig.get("flags", ())]
    return "/".join(parts + flags)


# --- clusters --------------------------------------------------------------------

MAX_SAMPLE_IDS = 20  # the first sample ids a cluster keeps (clusters.json lists them); the rest are counted


@dataclass
class Cluster:
    key: str
    engine: str
    reference: str
    signature: dict[str, Any]
    count: int = 0
    sample_ids: list[str] = field(default_factory=list)  # the first MAX_SAMPLE_IDS members' ids
    members: list[int] = field(default_factory=list)  # indices into the records, only when asked (cluster())
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    example: dict[str, Any] | None = None  # a member's ``minimized`` block, once there is one
    cause: str | None = None  # same for clusters whose minimised reproducers are identical

    @property
    def kind(self) -> str:
        return self.signature.get("kind", "ids")

    def as_dict(self, max_ids: int = MAX_SAMPLE_IDS) -> dict[str, Any]:
        return {"key": self.key, "engine": self.engine, "reference": self.reference, "kind": self.kind,
                "signature": self.signature, "tags": self.tags, "links": self.links, "count": self.count,
                "sample_ids": self.sample_ids[:max_ids], "cause": self.cause,
                "example": self.example["input"] if self.example else None,
                "example_minimized": self.example}


def record_key(record: dict[str, Any]) -> str:
    if record.get("cluster"):
        return record["cluster"]
    sig = record.get("signature")
    if sig is None:
        if "input" not in record:
            raise ValueError(f"record {record.get('sample_id')!r} has no signature and no inline input")
        sig = signature(record, "".join(t for t, _ in record["input"]))
    return signature_key(sig)


class Clusters:
    """Clustering as the records stream past, in order: ``add`` each record once. What it
    holds grows with the number of clusters, never with the number of records (a count
    and the first ``MAX_SAMPLE_IDS`` sample ids per cluster), unless ``members`` asks for
    every member's index (small in-memory callers such as shadow's triage)."""

    def __init__(self, tags: list["TagRule"] | None = None, members: bool = False):
        self.tags = tags
        self.keep_members = members
        self.by_ident: dict[tuple[str, str, str], Cluster] = {}
        self.records = 0

    def add(self, record: dict[str, Any]) -> Cluster:
        """The record's cluster (made on its first member), with the record counted in."""
        key = record_key(record)
        ident = (record["engine"], record["reference"], key)
        c = self.by_ident.get(ident)
        if c is None:
            sig = record.get("signature") or {"kind": record.get("kind", "ids")}
            c = self.by_ident[ident] = Cluster(key, record["engine"], record["reference"], sig)
            if self.tags:
                c.tags, c.links = tags_for(c.engine, c.key, self.tags)
        c.count += 1
        if len(c.sample_ids) < MAX_SAMPLE_IDS:
            c.sample_ids.append(record.get("sample_id"))
        if self.keep_members:
            c.members.append(self.records)
        self.records += 1
        return c

    def __len__(self) -> int:
        return len(self.by_ident)

    def ordered(self) -> list[Cluster]:
        """The clusters in order of first appearance."""
        return list(self.by_ident.values())


def cluster(records: Iterable[dict[str, Any]], tags: list["TagRule"] | None = None) -> list[Cluster]:
    """Group records by (engine, reference, signature key), in order of first appearance,
    each cluster with its ``members`` (indices into ``records``).

    A record's key is its ``cluster`` field, else computed from its ``signature``
    (else from its inline input). Streaming callers use ``Clusters`` without members."""
    clusters = Clusters(tags, members=True)
    for record in records:
        clusters.add(record)
    return clusters.ordered()


# --- known clusters: adversarial/tags.toml -------------------------------------------

@dataclass(frozen=True)
class TagRule:
    engine: re.Pattern
    signature: re.Pattern
    tag: str
    link: str | None = None
    known: bool = False  # an understood bug: the fuzzer masks it and looks for others


def default_tags_path() -> Path:
    from verify.config import declared

    return declared("adversarial", "tags.toml")


def load_tags(path: Path | None = None) -> list[TagRule]:
    """Rows of ``[[tag]]`` with ``engine`` and ``signature`` regexes (searched, not
    anchored), ``tag`` and an optional ``link``. A missing file means no rules."""
    path = default_tags_path() if path is None else path
    if not path.is_file():
        return []
    doc = read_toml(path)
    rules = []
    for i, row in enumerate(doc.get("tag", [])):
        if not isinstance(row, dict) or not isinstance(row.get("tag"), str):
            raise ConfigError(f"{path}: [[tag]] row {i + 1} needs a string 'tag'")
        try:
            if not isinstance(row.get("known", False), bool):
                raise ConfigError(f"{path}: [[tag]] row {i + 1} ('{row['tag']}'): 'known' must be true or false")
            at = f"{path}: [[tag]] row {i + 1} ('{row['tag']}')"
            rules.append(TagRule(compile_user(row.get("engine", ""), at, "engine"),
                                 compile_user(row.get("signature", ""), at, "signature"),
                                 row["tag"], row.get("link"), row.get("known", False)))
        except re.error as exc:
            raise ConfigError(f"{path}: [[tag]] row {i + 1} ('{row['tag']}'): bad regex: {exc}") from exc
    return rules


def tags_for(engine: str, key: str, rules: list[TagRule]) -> tuple[list[str], list[str]]:
    tags: list[str] = []
    links: list[str] = []
    for rule in rules:
        if rule.engine.search(engine or "") and rule.signature.search(key):
            if rule.tag not in tags:
                tags.append(rule.tag)
            if rule.link and rule.link not in links:
                links.append(rule.link)
    return tags, links


def cause_key(engine: str, kind: str, minimized_input: list) -> str:
    """Clusters come from where the first difference falls in the ORIGINAL input, so one
    bug met in several surroundings makes several clusters. Their minimised reproducers
    coincide: that reproducer (with engine and kind) names the likely root cause."""
    canonical = json.dumps([engine, kind, minimized_input], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
