"""Which Unicode version explains a set of mismatching code points.

``attribute`` scores every plausible (candidate tables, reference tables) pair of
known Unicode versions by how well the changes between them account for the mismatch
set (``_pair_score``), and names the best. Two kinds of tables are tried:

  categories     general categories (the classes of a pre-tokenizer's regex)
  nfkc / nfc     normalization data: the code points whose NFKC (NFC) form differs
                 between the versions, with the characters of every canonical
                 composition one version has and the other not

``explain`` is what the sweep asks: whitespace-like code points are set apart first (a
different definition of whitespace, not a table version); the rest is attributed with
the kind of tables that explains more of it ("NFKC data of Unicode 11.0.0" for an
engine whose normalizer is older than the reference's, "Unicode 17.0.0" for character
tables), what that leaves with the other kind, and the result comes back as the
``SweepResult`` fields it decides.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from verify.unicode_tables import tables as ud
from verify.adversarial.unicode.contexts import MAX_CP, whitespace_like_mask
from verify.executors.base import Executor

_EPS_LOG = math.log(1e-6)  # log-likelihood cost of a mismatch no table change explains


def declared_version(executor: Executor) -> str | None:
    """The Unicode version an engine declares for its character tables, if any."""
    return executor.capabilities.unicode_version


TABLES = ("categories", "nfkc", "nfc")
FORM_NAMES = {"nfkc": "NFKC", "nfc": "NFC"}


def changes(tables: str, v_cand: str, v_ref: str) -> tuple[np.ndarray, np.ndarray]:
    """``(changed code points, their change type)`` between two versions of one kind of
    tables: for categories the type is the (category in v_cand, category in v_ref)
    transition, for normalization data one type for form changes and one for compositions."""
    if tables == "categories":
        a, b = ud.category_table(v_cand), ud.category_table(v_ref)
        changed = np.flatnonzero(a != b)
        return changed, a[changed].astype(np.int64) * len(ud.CATEGORIES) + b[changed]
    formed = ud.normalization_changed(tables, v_cand, v_ref)
    composed = np.setdiff1d(ud.composition_changed(v_cand, v_ref), formed)
    changed = np.concatenate([formed, composed])
    types = np.concatenate([np.zeros(formed.size, dtype=np.int64), np.ones(composed.size, dtype=np.int64)])
    order = np.argsort(changed, kind="stable")
    return changed[order], types[order]


def _pair_score(m_mask: np.ndarray, m_count: int, v_cand: str, v_ref: str,
                scope: np.ndarray | None = None, tables: str = "categories") -> tuple[float, int]:
    """(log-likelihood, explained count) of the mismatch set under "the engines'
    tables are v_cand and v_ref". Every change type (a category transition, or a
    normalization form or composition change) gets its own visibility rate p (its
    maximum-likelihood estimate): a change type that never shows costs nothing, one that
    always shows costs nothing, a partly visible one costs its size times the binary
    entropy of p; a mismatch outside every changed set costs log(1e-6)."""
    changed, types = changes(tables, v_cand, v_ref)
    if scope is not None:
        inside = scope[changed]
        changed, types = changed[inside], types[inside]
    if changed.size == 0:
        return m_count * _EPS_LOG, 0
    hits = m_mask[changed]
    n_t = np.bincount(types)
    h_t = np.bincount(types, weights=hits, minlength=n_t.size)
    ll = 0.0
    for n, h in zip(n_t[n_t > 0], h_t[n_t > 0]):
        p = h / n
        if 0 < p < 1:
            ll += h * math.log(p) + (n - h) * math.log(1 - p)
    explained = int(hits.sum())
    ll += (m_count - explained) * _EPS_LOG
    return ll, explained


def _distance(candidate: str, reference: str) -> int:
    """How many known versions lie between two versions (0 for the same)."""
    order = ud.versions()
    return abs(order.index(candidate) - order.index(reference)) if candidate in order and reference in order else 99


def attribute(mismatched_cps: np.ndarray, reference_version: str | None = None,
              candidate_version: str | None = None, *, start: int = 0,
              stop: int = MAX_CP + 1, exclude: np.ndarray | None = None,
              within: np.ndarray | None = None, tables: str = "categories",
              require_most: bool = True) -> dict[str, Any]:
    """Name the Unicode version whose table changes (``tables``: categories, nfkc or nfc)
    best explain a mismatch set.

    Returns {"unicode_version", "reference_unicode_version", "basis", "explained_count",
    "scores"}. With the reference's version known (declared), every other known
    version is tried for the candidate; with only the candidate's known, the
    reference's is inferred; with neither, every pair is tried and the candidate
    is assumed to have the older tables (stated in ``basis``). Only code points
    in ``[start, stop)`` (or in the boolean mask ``within``, the code points swept)
    and not in the boolean mask ``exclude`` count."""
    vs = ud.versions()

    def known(v: str | None) -> str | None:
        return v if v == ud.NO_NORMALIZATION and tables != "categories" else ud.resolve_version(v)

    ref_v, cand_v = known(reference_version), known(candidate_version)
    m = np.unique(np.asarray(mismatched_cps, dtype=np.int64))
    out: dict[str, Any] = {"unicode_version": cand_v, "reference_unicode_version": ref_v, "tables": tables,
                           "basis": "none", "explained_count": 0, "scores": [], "tied": []}
    if m.size == 0:
        out["basis"] = "no mismatches"
        return out
    mask = np.zeros(MAX_CP + 1, dtype=bool)
    mask[m] = True
    if within is not None:
        scope = within.copy()
    else:
        scope = np.zeros(MAX_CP + 1, dtype=bool)
        scope[max(0, start):min(stop, MAX_CP + 1)] = True
    if exclude is not None:
        scope &= ~exclude
    if ref_v and cand_v:
        pairs, basis = [(cand_v, ref_v)], "declared" if tables == "categories" else "measured on each engine"
    elif ref_v:
        pairs, basis = [(v, ref_v) for v in vs if v != ref_v], "reference version declared"
    elif cand_v:
        pairs, basis = [(cand_v, v) for v in vs if v != cand_v], "candidate version declared"
    else:
        pairs = [(a, b) for i, a in enumerate(vs) for b in vs[i + 1:]]
        basis = "inferred; assumes the candidate has the older tables"
    scored = []
    for vc, vr in pairs:
        ll, expl = _pair_score(mask, int(m.size), vc, vr, scope, tables)
        scored.append((ll, expl, vc, vr))
    # Ties (the same changes, e.g. 15.0 vs 15.1 for numbers, or 17 vs 18 where no 18 change was
    # swept) go to the candidate version nearest the reference's: the smallest change that explains
    # the mismatches. The others are listed in ``tied``.
    scored.sort(key=lambda s: (-s[0], _distance(s[2], s[3]), ud.version_key(s[3])))
    out["scores"] = [{"candidate": vc, "reference": vr, "log_likelihood": round(float(ll), 2), "explained": expl}
                     for ll, expl, vc, vr in scored[:5]]
    best_ll, best_expl, vc, vr = scored[0]
    if not best_expl or (require_most and best_expl * 2 < m.size):  # a table change must explain most of it
        out["basis"] = f"{basis}; no version explains most of the mismatches"
        out["unicode_version"] = cand_v
        out["reference_unicode_version"] = ref_v
        return out
    out.update(unicode_version=vc, reference_unicode_version=vr, basis=basis, explained_count=best_expl)
    # Versions whose differences from the chosen one never show (e.g. 12.0 vs 12.1) tie;
    # the newest is reported, and the others listed.
    out["tied"] = sorted({c for ll, e, c, r in scored if abs(ll - best_ll) < 1e-6 and e == best_expl and r == vr},
                         key=ud.version_key)
    changed, _ = changes(tables, vc, vr)
    out["changed"] = changed[scope[changed]]
    return out


def explain(mismatched: np.ndarray, reference_version: str | None, candidate_version: str | None,
            scope: "list[int] | np.ndarray", normalization: tuple[str | None, str | None] = (None, None)
            ) -> dict[str, Any]:
    """The ``SweepResult`` fields the attribution decides for the sorted mismatching
    code points of one candidate, swept over the inclusive ``scope`` range (or the
    boolean mask of the code points swept): unicode_version, reference_unicode_version,
    version_basis, explained, whitespace, unexplained, scores, tied_versions and
    normalization (the normalization data's attribution, when that explains any).
    ``normalization``: the NFKC data versions measured on the reference and the candidate
    (``normalization_probe``; ``"none"`` for an engine that applies none), else inferred."""
    m = np.asarray(mismatched, dtype=np.int64)
    ws_mask = whitespace_like_mask()
    ws = m[ws_mask[m]] if m.size else m
    non_ws = m[~ws_mask[m]] if m.size else m
    where = {"exclude": ws_mask, "within": scope} if isinstance(scope, np.ndarray) else \
        {"exclude": ws_mask, "start": scope[0], "stop": scope[1] + 1}
    # an engine declares the version of its character tables; its normalizer's data may be another
    # (a separate library): those versions are measured on the engines, or inferred
    measured = normalization if all(normalization) and normalization[0] != normalization[1] else (None, None)
    declared = {"categories": (reference_version, candidate_version), "nfkc": measured}
    same = normalization[0] is not None and normalization[0] == normalization[1]  # measured alike: not the cause
    kinds = ("categories",) if same else TABLES
    # measured normalization versions that differ are implicated for certain: any share they explain counts
    by_kind = {kind: attribute(non_ws, *declared.get(kind, (None, None)), tables=kind,
                               require_most=not (kind == "nfkc" and all(measured)), **where) for kind in kinds}
    # the kind of tables that explains the most leads; the other kind may explain what it leaves
    # on a tie, what was measured on the engines (their normalization data differ) beats what is inferred
    preferred = "nfkc" if all(measured) else "categories"
    lead = max(kinds, key=lambda k: (by_kind[k]["explained_count"], k == preferred))
    att = by_kind[lead]
    explained_cps = np.intersect1d(non_ws, att.get("changed", np.zeros(0, dtype=np.int64)))
    rest = np.setdiff1d(non_ws, explained_cps)
    normalization = None
    if lead == "categories":
        form = max(("nfkc", "nfc"), key=lambda k: by_kind[k]["explained_count"]) if not same else None
        if form and rest.size and by_kind[form]["explained_count"]:
            second = attribute(rest, *declared.get(form, (None, None)), tables=form,
                               require_most=not (form == "nfkc" and all(measured)), **where)
            if second["explained_count"]:
                normalization = _normalization(second, rest)
                explained_cps = np.union1d(explained_cps, np.intersect1d(rest, second["changed"]))
    else:
        normalization = _normalization(att, non_ws)
        tables_rest = None
        if rest.size:
            second = attribute(rest, reference_version, candidate_version, tables="categories", **where)
            if second["explained_count"]:  # (a table change explaining most of the rest: attribute's rule)
                explained_cps = np.union1d(explained_cps, np.intersect1d(rest, second["changed"]))
                tables_rest = second
    unexplained = np.setdiff1d(non_ws, explained_cps)
    basis = att["basis"]
    if lead != "categories" and att["unicode_version"]:
        basis = f"{_name(att)}: normalization data, not character tables ({basis})"
        if tables_rest is not None:
            basis += (f"; the rest: character tables of Unicode {tables_rest['unicode_version']} vs "
                      f"{tables_rest['reference_unicode_version']} ({tables_rest['explained_count']:,} code points)")
    elif normalization:
        basis = f"{basis}; the rest: {normalization['name']}"
    return {
        "unicode_version": att["unicode_version"],
        "reference_unicode_version": att["reference_unicode_version"],
        "version_basis": ("only whitespace-like code points differ" if ws.size and not non_ws.size else basis),
        "explained": (explained_cps.size / m.size) if m.size else 0.0,
        "whitespace": ud.to_ranges(ws),
        "unexplained": ud.to_ranges(unexplained),
        "scores": att["scores"],
        "tied_versions": att["tied"],
        "normalization": normalization,
    }


def _name(att: dict[str, Any]) -> str:
    """``NFKC data of Unicode 11.0.0`` (``or older`` for the oldest version the tables know);
    ``no NFKC normalization`` for an engine that applies none."""
    version, form = att["unicode_version"], FORM_NAMES[att["tables"]]
    if version == ud.NO_NORMALIZATION:
        return f"no {form} normalization (the reference applies {form} data of Unicode " \
               f"{att['reference_unicode_version']})"
    older = " or older" if version == ud.versions()[0] else ""
    return f"{form} data of Unicode {version}{older}"


def _normalization(att: dict[str, Any], cps: np.ndarray) -> dict[str, Any] | None:
    if not att.get("unicode_version") or not att["explained_count"]:
        return None
    return {"form": FORM_NAMES[att["tables"]], "unicode_version": att["unicode_version"],
            "reference_unicode_version": att["reference_unicode_version"], "name": _name(att),
            "explained": int(att["explained_count"]), "of": int(cps.size), "tied_versions": att["tied"],
            "basis": att["basis"]}
