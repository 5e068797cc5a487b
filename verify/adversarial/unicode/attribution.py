"""Which Unicode version explains a set of mismatching code points.

``attribute`` scores every plausible (candidate tables, reference tables) pair of
known Unicode versions by how well the category changes between them account for
the mismatch set (``_pair_score``), and names the best. ``explain`` is what the
sweep asks: whitespace-like code points are set apart first (a different
definition of whitespace, not a table version), the rest is attributed, and the
result comes back as the ``SweepResult`` fields it decides.
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


def _pair_score(m_mask: np.ndarray, m_count: int, v_cand: str, v_ref: str,
                scope: np.ndarray | None = None) -> tuple[float, int]:
    """(log-likelihood, explained count) of the mismatch set under "the engines'
    tables are v_cand and v_ref". Every (category-in-v_cand, category-in-v_ref)
    transition type gets its own visibility rate p (its maximum-likelihood
    estimate): a change type that never shows costs nothing, one that always
    shows costs nothing, a partly visible one costs its size times the binary
    entropy of p; a mismatch outside every changed set costs log(1e-6)."""
    a, b = ud.category_table(v_cand), ud.category_table(v_ref)
    diff = a != b
    if scope is not None:
        diff &= scope
    changed = np.flatnonzero(diff)
    if changed.size == 0:
        return m_count * _EPS_LOG, 0
    types = a[changed].astype(np.int64) * len(ud.CATEGORIES) + b[changed]
    hits = m_mask[changed]
    n_t = np.bincount(types, minlength=len(ud.CATEGORIES) ** 2)
    h_t = np.bincount(types, weights=hits, minlength=len(ud.CATEGORIES) ** 2)
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
              within: np.ndarray | None = None) -> dict[str, Any]:
    """Name the Unicode version whose table changes best explain a mismatch set.

    Returns {"unicode_version", "reference_unicode_version", "basis", "explained_count",
    "scores"}. With the reference's version known (declared), every other known
    version is tried for the candidate; with only the candidate's known, the
    reference's is inferred; with neither, every pair is tried and the candidate
    is assumed to have the older tables (stated in ``basis``). Only code points
    in ``[start, stop)`` (or in the boolean mask ``within``, the code points swept)
    and not in the boolean mask ``exclude`` count."""
    vs = ud.versions()
    ref_v = ud.resolve_version(reference_version)
    cand_v = ud.resolve_version(candidate_version)
    m = np.unique(np.asarray(mismatched_cps, dtype=np.int64))
    out: dict[str, Any] = {"unicode_version": cand_v, "reference_unicode_version": ref_v,
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
        pairs, basis = [(cand_v, ref_v)], "declared"
    elif ref_v:
        pairs, basis = [(v, ref_v) for v in vs if v != ref_v], "reference version declared"
    elif cand_v:
        pairs, basis = [(cand_v, v) for v in vs if v != cand_v], "candidate version declared"
    else:
        pairs = [(a, b) for i, a in enumerate(vs) for b in vs[i + 1:]]
        basis = "inferred; assumes the candidate has the older tables"
    scored = []
    for vc, vr in pairs:
        ll, expl = _pair_score(mask, int(m.size), vc, vr, scope)
        scored.append((ll, expl, vc, vr))
    # Ties (the same changes, e.g. 15.0 vs 15.1 for numbers, or 17 vs 18 where no 18 change was
    # swept) go to the candidate version nearest the reference's: the smallest change that explains
    # the mismatches. The others are listed in ``tied``.
    scored.sort(key=lambda s: (-s[0], _distance(s[2], s[3]), ud.version_key(s[3])))
    out["scores"] = [{"candidate": vc, "reference": vr, "log_likelihood": round(float(ll), 2), "explained": expl}
                     for ll, expl, vc, vr in scored[:5]]
    best_ll, best_expl, vc, vr = scored[0]
    if best_expl * 2 < m.size:  # a table change must explain most of it
        out["basis"] = f"{basis}; no version explains most of the mismatches"
        out["unicode_version"] = cand_v
        out["reference_unicode_version"] = ref_v
        return out
    out.update(unicode_version=vc, reference_unicode_version=vr, basis=basis, explained_count=best_expl)
    # Versions whose differences from the chosen one never show (e.g. 12.0 vs 12.1) tie;
    # the newest is reported, and the others listed.
    out["tied"] = sorted({c for ll, e, c, r in scored if abs(ll - best_ll) < 1e-6 and e == best_expl and r == vr},
                         key=ud.version_key)
    out["changed"] = np.flatnonzero((ud.category_table(vc) != ud.category_table(vr)) & scope)
    return out


def explain(mismatched: np.ndarray, reference_version: str | None, candidate_version: str | None,
            scope: "list[int] | np.ndarray") -> dict[str, Any]:
    """The ``SweepResult`` fields the attribution decides for the sorted mismatching
    code points of one candidate, swept over the inclusive ``scope`` range (or the
    boolean mask of the code points swept): unicode_version,
    reference_unicode_version, version_basis, explained, whitespace, unexplained,
    scores, tied_versions."""
    m = np.asarray(mismatched, dtype=np.int64)
    ws_mask = whitespace_like_mask()
    ws = m[ws_mask[m]] if m.size else m
    non_ws = m[~ws_mask[m]] if m.size else m
    if isinstance(scope, np.ndarray):
        att = attribute(non_ws, reference_version, candidate_version, exclude=ws_mask, within=scope)
    else:
        att = attribute(non_ws, reference_version, candidate_version,
                        start=scope[0], stop=scope[1] + 1, exclude=ws_mask)
    explained_cps = np.intersect1d(non_ws, att.get("changed", np.zeros(0, dtype=np.int64)))
    unexplained = np.setdiff1d(non_ws, explained_cps)
    return {
        "unicode_version": att["unicode_version"],
        "reference_unicode_version": att["reference_unicode_version"],
        "version_basis": ("only whitespace-like code points differ" if ws.size and not non_ws.size
                          else att["basis"]),
        "explained": (explained_cps.size / m.size) if m.size else 0.0,
        "whitespace": ud.to_ranges(ws),
        "unexplained": ud.to_ranges(unexplained),
        "scores": att["scores"],
        "tied_versions": att["tied"],
    }
