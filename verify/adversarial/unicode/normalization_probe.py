"""Which Unicode version an engine's NFKC normalization data is, asked of the engine itself.

A mismatch set tells *that* two engines' normalization data differ, never which one is
older: the code points whose NFKC form changed between two versions differ whichever
side has which. So each engine is asked directly. For every known version, a few
*marker* characters whose NFKC form that version changed (``U+00BD`` -> ``1/2`` for the
oldest known version, new compatibility characters for later ones) are encoded alone and
as their NFKC form: an engine normalizes a marker when both give the same ids. Its data
is the newest version whose markers it all normalizes, provided it normalizes every
older version's markers too; an engine that normalizes none has no NFKC normalizer
(``None``). Markers are assigned characters only, so an engine's *character* tables
cannot make a marker look normalized.
"""

from __future__ import annotations

from typing import Any

from verify.outcome import agree, is_ids
from verify.sample import Sample
from verify.unicode_tables import tables as ud

MARKERS_PER_VERSION = 3


def markers() -> list[tuple[str, list[int]]]:
    """``(version, marker code points)`` oldest first: code points whose NFKC form that
    version changed (for the oldest, any with an NFKC form other than themselves)."""
    versions = ud.versions()
    out = []
    for i, version in enumerate(versions):
        changed = ud.normalization_changed("nfkc", versions[i - 1], version) if i else \
            sorted(ud.normal_form("nfkc", version))
        form = ud.normal_form("nfkc", version)
        # the form must itself be plain (no code point whose own form changes), so only this
        # version's data decides whether the engine maps the marker to it
        picked = [int(cp) for cp in changed if int(cp) in form and ud.category(int(cp), version) != "Cn"
                  and all(ord(c) < 0x80 or ud.category(ord(c), versions[0]) != "Cn" for c in form[int(cp)])]
        if picked:
            out.append((version, picked[:MARKERS_PER_VERSION]))
    return out


def nfkc_version(executor) -> str | None:
    """The newest Unicode version whose NFKC data the engine applies (None: it applies none)."""
    plan = markers()
    samples = []
    for version, cps in plan:
        form = ud.normal_form("nfkc", version)
        for cp in cps:
            samples.append(Sample.plain(f"nfkc:{version}:U+{cp:04X}", chr(cp)))
            samples.append(Sample.plain(f"nfkc:{version}:U+{cp:04X}/form", form[cp]))
    outcomes = executor.encode(samples)
    found = None
    for n, (version, cps) in enumerate(plan):
        start = 2 * sum(len(c) for _, c in plan[:n])
        pairs = [(outcomes[start + 2 * i], outcomes[start + 2 * i + 1]) for i in range(len(cps))]
        if not all(is_ids(a) and is_ids(b) and agree(a, b) for a, b in pairs):
            break
        found = version
    return found


def probe(executors) -> dict[str, dict[str, Any]]:
    """``{spec: {"nfkc": version | None}}`` for every executor."""
    return {ex.spec: {"nfkc": nfkc_version(ex)} for ex in executors}
