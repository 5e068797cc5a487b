"""``OUT/selftest.json`` and ``OUT/selftest.md``: per fault kind what was injected, what the
harness found, and what that means for a shadow sample (``verify.selftest.shadow_model``)."""

from __future__ import annotations

from pathlib import Path

from verify.selftest.shadow_model import PAPER
from verify import atomic
from verify.reports.md import md_cell

KIND_NOTES = {
    "substitute": "one token replaced by another",
    "delete": "one token dropped",
    "insert": "one token inserted",
    "boundary": "two adjacent tokens re-split at another byte boundary (same bytes, same count)",
    "unicode": "the reference's pattern with one class from another Unicode table",
    "history": "a session goes wrong once its transcript passes N characters",
}


def write_reports(out: Path, result: dict) -> None:
    atomic.write_json(out / "selftest.json", result)
    atomic.write_text(out / "selftest.md", markdown(result))


def _requests(shadow: dict) -> str:
    return "never" if shadow["requests"] is None else str(shadow["requests"])


def _simulated(shadow: dict) -> str:
    sim = shadow["simulated"]
    if sim is None:
        return "—"
    low, high = sim["range_5_95"]
    return f"{sim['median']:g} ({low}–{high})"


def _pooled_row(pooled: dict | None) -> list[str]:
    if not pooled:
        return []
    s = pooled["shadow"]
    return [f"| pooled: {', '.join(pooled['kinds'])} | — | {pooled['injected']} | {pooled['found']} | "
            f"{pooled['share_found']:.1%} | — | — | — | {s['per_request']:.4f} | {_requests(s)} | "
            f"{_simulated(s)} | |"]


def markdown(result: dict) -> str:
    rows = []
    for r in result["kinds"]:
        s = r["shadow"]
        rows.append(f"| {r['kind']} | {r['inputs']} | {r['injected']} | {r['found']} | {r['share_found']:.1%} | "
                    f"{r['located']} | {r['bytes_preserved']} | {r['false_positives']} | {s['per_request']:.4f} | "
                    f"{_requests(s)} | {_simulated(s)} | {'pass' if r['passed'] else '**FAIL**'} |")
    first = result["kinds"][0]["shadow"] if result["kinds"] else {"sample_rate": 0.05, "target": 0.9}
    lines = [
        f"# verify selftest: {'passed' if result['passed'] else 'FAILED'}",
        "",
        f"Reference {md_cell(result['reference'])}, seed {result['seed']}, rate {result['rate']}, "
        f"{result['faults_per_kind']} faults aimed at per kind ({result['documents']} documents of "
        f"{md_cell(result['corpus'])}; unicode fault {md_cell(result['unicode_fault'])}; history after {result['after']} "
        f"characters, {result['turns']} turns per session). A kind passes when it found at least "
        f"{result['min_recall']:.0%} of its injected faults and reported nothing on inputs without one.",
        "",
        f"| kind | inputs | injected | found | share found | located | bytes preserved | false positives | "
        f"per-request detection at {first['sample_rate']:.0%} | requests for {first['target']:.0%} (exact) | "
        f"simulated: median (5–95%) | |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *rows,
        *_pooled_row(result.get("pooled")),
        f"| TokTier paper ({', '.join(PAPER['kinds'])}) | — | {PAPER['faults']} | — | — | — | — | — | "
        f"{PAPER['sample_rate']:.0%} sample | {PAPER['requests']} (measured) | — | |",
        "",
        "*located*: the finding's first differing token (and, for sessions, the turn) is where the fault is. "
        "*bytes preserved*: the faulty ids decode to the same bytes, so a harness comparing decoded text "
        "would miss them. Requests for the target share: a fault shows in every request that reaches it, "
        "each request is shadow-sampled independently, and a sampled request exposes it with the measured "
        "share found; the simulated figure is what an experiment with this many faults measures.",
        "",
    ]
    for r in result["kinds"]:
        if not r["injected"]:
            lines.append(f"- {r['kind']}: no fault could be injected in {r['inputs']} inputs, so nothing was measured "
                         "(a class flip that moves no boundary a merge crosses does not show on this vocabulary)"
                         if r["kind"] == "unicode" else
                         f"- {r['kind']}: no fault could be injected in {r['inputs']} inputs, so nothing was measured")
        if r["missed"]:
            lines.append(f"- {r['kind']}: missed {', '.join(f'{md_cell(m)}' for m in r['missed'])}")
    lines.append("")
    lines += [f"- {md_cell(r['kind'])} ({KIND_NOTES[r['kind']]}): {md_cell(r['spec'])}, run in {md_cell(r['run'])}" for r in result["kinds"]]
    return "\n".join(lines) + "\n"
