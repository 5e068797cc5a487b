"""Per-Unicode-version character data (general categories), loaded from the
compact table that ``python -m tools.build_unicode_data`` writes.

    versions()                  -> ["11.0.0", ..., "18.0.0"]
    category(cp, version=None)  -> "Lu" | ... | "Cn" (unassigned); default: newest
    category_table(version)     -> uint8 array of 0x110000 category indices (CATEGORIES)
    assigned_in(cp)             -> first known version where cp is assigned (None: never)
    changed(v1, v2)             -> code points whose category differs, sorted int array
    normal_form(form, version)  -> {cp: text} for every code point whose NFC/NFKC form is not itself
    normalization_changed(form, v1, v2) -> code points whose NFC/NFKC form differs, sorted int array
    name(cp)                    -> character name (runtime unicodedata, else shipped), or None
    to_ranges(cps)              -> [[first, last], ...] inclusive ranges

Versions are written "MAJOR.MINOR.PATCH"; ``normalize_version`` accepts "15",
"15.1" or "Unicode 15.1.0".
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import numpy as np

DATA_PATH = Path(__file__).with_name("data") / "unicode_categories.json.gz"
NORMALIZATION_PATH = DATA_PATH.with_name("unicode_normalization.json.gz")
FORMS = ("nfc", "nfkc")
NO_NORMALIZATION = "none"  # a "version" of normalization data: an engine that does not normalize
MAX_CP = 0x10FFFF
N_CP = 0x110000

# Every general category; the index is the value stored in category tables.
CATEGORIES: tuple[str, ...] = (
    "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
    "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
    "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co",
)
CATEGORY_INDEX = {c: i for i, c in enumerate(CATEGORIES)}
CN = 0


def version_key(v: str) -> tuple[int, ...]:
    """Sorts versions; ``none`` (no normalization data at all) before every version."""
    return (-1,) if v == NO_NORMALIZATION else tuple(int(x) for x in v.split("."))


@lru_cache(maxsize=1)
def _doc() -> dict:
    with gzip.open(DATA_PATH, "rt", encoding="ascii") as fh:
        return json.load(fh)


def versions() -> list[str]:
    """The Unicode versions the shipped table covers, oldest first."""
    return sorted(_doc()["versions"], key=version_key)


def newest() -> str:
    return versions()[-1]


def source() -> str:
    return _doc().get("source", "")


def normalize_version(v: str | None) -> str | None:
    """``"15"``/``"15.1"``/``"Unicode 15.1.0"`` -> ``"15.1.0"``; None if not parseable."""
    if v is None:
        return None
    m = re.search(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(v))
    if not m:
        return None
    return ".".join(x or "0" for x in m.groups())


def resolve_version(v: str | None) -> str | None:
    """The known version matching ``v`` (normalized), else None."""
    n = normalize_version(v)
    return n if n in _doc()["versions"] else None


def _check_version(version: str | None) -> str:
    if version is None:
        return newest()
    v = resolve_version(version)
    if v is None:
        raise KeyError(f"no Unicode data for version {version!r} (known: {', '.join(versions())})")
    return v


@lru_cache(maxsize=None)
def _runs(version: str) -> tuple[np.ndarray, np.ndarray]:
    entry = _doc()["versions"][version]
    starts = np.cumsum(np.asarray(entry["starts"], dtype=np.int64))
    cats_s = entry["cats"]
    cats = np.asarray([CATEGORY_INDEX[cats_s[i:i + 2]] for i in range(0, len(cats_s), 2)], dtype=np.uint8)
    return starts, cats


@lru_cache(maxsize=None)
def category_table(version: str | None = None) -> np.ndarray:
    """uint8 array indexed by code point: index into ``CATEGORIES``. Read-only."""
    v = _check_version(version)
    starts, cats = _runs(v)
    lengths = np.diff(np.append(starts, N_CP))
    table = np.repeat(cats, lengths)
    table.setflags(write=False)
    return table


def category(cp: int, version: str | None = None) -> str:
    return CATEGORIES[int(category_table(version)[cp])]


@lru_cache(maxsize=1)
def _first_assigned() -> np.ndarray:
    """int8 array: index into versions() of the first version assigning cp, -1 never."""
    vs = versions()
    out = np.full(N_CP, -1, dtype=np.int8)
    for i in range(len(vs) - 1, -1, -1):
        out[category_table(vs[i]) != CN] = i
    return out


def assigned_in(cp: int) -> str | None:
    """First known version in which ``cp`` is assigned (category other than Cn).

    Returns the oldest known version for characters assigned at or before it
    (read it as "<= that version"), and None for code points never assigned."""
    i = int(_first_assigned()[cp])
    return versions()[i] if i >= 0 else None


def changed(v1: str, v2: str) -> np.ndarray:
    """Sorted code points whose general category differs between two versions."""
    a, b = category_table(_check_version(v1)), category_table(_check_version(v2))
    return np.flatnonzero(a != b)


@lru_cache(maxsize=1)
def _normalization_doc() -> dict:
    with gzip.open(NORMALIZATION_PATH, "rt", encoding="ascii") as fh:
        return json.load(fh)


@lru_cache(maxsize=None)
def normal_form(form: str, version: str | None = None) -> dict[int, str]:
    """``{cp: text}``: the ``form`` (``nfc`` or ``nfkc``) of every code point of ``version`` whose
    form is not the code point itself (the shipped table holds each version as changes from the
    one before)."""
    if form not in FORMS:
        raise KeyError(f"unknown normal form {form!r} (known: {', '.join(FORMS)})")
    if version == NO_NORMALIZATION:
        return {}
    v = _check_version(version)
    table: dict[int, str] = {}
    for known in sorted(_normalization_doc()["versions"], key=version_key):
        for cp, text in _normalization_doc()["versions"][known][form].items():
            if text is None:
                table.pop(int(cp), None)
            else:
                table[int(cp)] = text
        if known == v:
            break
    return table


@lru_cache(maxsize=None)
def compositions(version: str | None = None) -> frozenset[tuple[int, int, int]]:
    """The primary composites of ``version``: ``(first, second, composite)`` that canonical
    composition (NFC, NFKC) forms."""
    if version == NO_NORMALIZATION:
        return frozenset()
    v = _check_version(version)
    found: set[tuple[int, int, int]] = set()
    for known in sorted(_normalization_doc()["versions"], key=version_key):
        entry = _normalization_doc()["versions"][known].get("compositions") or {}
        found |= {tuple(c) for c in entry.get("added", [])}
        found -= {tuple(c) for c in entry.get("removed", [])}
        if known == v:
            break
    return frozenset(found)


def composition_changed(v1: str, v2: str) -> np.ndarray:
    """Sorted code points of every composition one version forms and the other not."""
    differ = compositions(v1) ^ compositions(v2)
    return np.asarray(sorted({cp for triple in differ for cp in triple}), dtype=np.int64)


def normalization_changed(form: str, v1: str, v2: str) -> np.ndarray:
    """Sorted code points whose ``form`` (nfc/nfkc) differs between two versions."""
    a, b = normal_form(form, v1), normal_form(form, v2)
    return np.asarray(sorted(cp for cp in set(a) | set(b) if a.get(cp) != b.get(cp)), dtype=np.int64)


def to_ranges(cps: Iterable[int] | np.ndarray) -> list[list[int]]:
    """Inclusive ``[first, last]`` ranges of a set of code points (sorted, deduplicated)."""
    arr = np.unique(np.asarray(list(cps) if not isinstance(cps, np.ndarray) else cps, dtype=np.int64))
    if arr.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(arr) != 1)
    firsts = np.concatenate(([arr[0]], arr[breaks + 1]))
    lasts = np.concatenate((arr[breaks], [arr[-1]]))
    return [[int(a), int(b)] for a, b in zip(firsts, lasts)]


@lru_cache(maxsize=1)
def _shipped_names() -> tuple[dict[int, str], list[tuple[int, int, str]]]:
    names = _doc().get("names", {})
    explicit: dict[int, str] = {}
    cp = 0
    for delta, n in names.get("explicit", []):
        cp += delta
        explicit[cp] = n
    algorithmic = [(a, b, p) for a, b, p in names.get("algorithmic", [])]
    return explicit, algorithmic


def name(cp: int) -> str | None:
    """The character's name: the runtime ``unicodedata``'s, else the shipped table's
    (newest version), else None (unassigned, control, private use, ...)."""
    if 0xD800 <= cp <= 0xDFFF:
        return None
    n = unicodedata.name(chr(cp), None)
    if n:
        return n
    explicit, algorithmic = _shipped_names()
    if cp in explicit:
        return explicit[cp]
    for a, b, prefix in algorithmic:
        if a <= cp <= b:
            return f"{prefix}{cp:04X}"
    return None


def label(cp: int) -> str:
    """A short human label: the name, or a description for nameless code points."""
    n = name(cp)
    if n:
        return n
    cat = category(cp)
    return {
        "Cn": "<unassigned>", "Cc": "<control>", "Co": "<private use>", "Cs": "<surrogate>",
    }.get(cat, "<unnamed>")
