"""OUT/shadow.json (schema ``verify.shadow-report/1``) and OUT/shadow.md: what the engineer
on call reads first.

Confirmed against mismatched counts, production's tokenizers (each version, whether its
vocabulary is the reference's), then the clusters by size -- status (new, known,
allowlisted), first and last seen, affected versions, a reproducer (minimised when a
replay engine reproduced production, else the smallest member's input, or under
``--redact`` its hashes and window), the first difference, suspected-cause tags and the
request ids -- and the bad records. Text is shown through ``ascii()``: control,
bidirectional and invisible characters appear as escapes, never raw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify.classify import Cluster
from verify.outcome import FindingKind
from verify.rundir.layout import RunFolder
from verify.shadow.schema import parse_timestamp
from verify import atomic
from verify.reports.md_templates import render

REPORT_SCHEMA = "verify.shadow-report/1"
MAX_SHOWN_IDS = 16
MAX_MD_CLUSTERS = 30

FLAG_HINTS = {"special": "special-token look-alike near the difference (allow_special handling)",
              "long-run": "a long run of one character class (chunking of long runs)",
              "long-input": "input over 100k characters (the engine's chunking)",
              "nfc": "normalisation-sensitive text (does production normalise?)"}


def suspects(c: Cluster, facts, replayed: bool = False) -> list[str]:
    """Suspected-cause tags: tags.toml rows, the signature's flags and boundary, what the records say
    (``facts``: ``verify.shadow.triage.Facts`` of the cluster's members); ``replayed``: a replay
    engine was given for this cluster's tokenizer (its reproducer then says why it did not stand in)."""
    sig = c.signature
    out = list(c.tags)
    if c.kind == FindingKind.BAD_INPUT:
        return out + ["the producer wrote records that break verify.shadow/1"]
    if c.kind != FindingKind.IDS:
        return out + [f"the reference failed ({sig.get('error_type')})"]
    if sig.get("located"):
        out.append(f"boundary {sig['transition']} ({'+'.join(sig['category'])}, {'+'.join(sig['script'])})")
    else:
        out.append("unlocated: production recorded only a digest, and the replay engine did not reproduce it (the "
                   "reproducer says why)" if replayed else
                   "unlocated: production recorded only a digest (replay it with --engine NAME=SPEC to locate)")
    out += [FLAG_HINTS[f] for f in sig.get("flags", []) if f in FLAG_HINTS]
    if facts.vocab_differs:
        out.append("production's vocabulary is not the reference's (vocab_sha256 differs): check the deployment")
    if facts.later_turns:
        out.append("session turns after the first (history-dependent: incremental tokenization across turns?)")
    return out


def _replayed(c: Cluster, replay_engines: dict[str, str]) -> bool:
    """Whether ``--engine`` gave a replay engine for the tokenizer of this cluster's engine."""
    from verify.shadow.schema import PRODUCTION_PREFIX

    return str(c.engine or "").removeprefix(PRODUCTION_PREFIX) in replay_engines


def _trim(window: Any) -> Any:
    if isinstance(window, dict) and len(window.get("ids", [])) > MAX_SHOWN_IDS:
        return {**window, "ids": window["ids"][:MAX_SHOWN_IDS], "ids_shown": MAX_SHOWN_IDS,
                **({"pieces": window["pieces"][:MAX_SHOWN_IDS]} if "pieces" in window else {})}
    return window


def _reproducer(c: Cluster, state) -> dict[str, Any]:
    if c.example is not None:
        block = c.example
        doc = {"minimized": True, "input": block["input"], "chars": block.get("chars"),
               "initial_chars": block.get("initial_chars"), "replay_engine": block.get("replay_engine"),
               "stopped_on_budget": block.get("stopped_on_budget"),
               "first_difference": {k: _trim(block.get(k)) for k in ("token_index", "byte_offset", "char_offset",
                                                                      "expected", "actual")}}
        if block.get("input_redacted"):
            doc["redacted"] = block["input_redacted"]
        return doc
    doc = dict(state.reproducer or {"minimized": False, "why": "no input (bad records)"})
    if "first_difference" in doc:
        doc["first_difference"] = {k: _trim(v) for k, v in doc["first_difference"].items()}
    return doc


def build_report(*, reference: dict[str, Any] | None, counts, tokenizers: dict, outcome, known, allowlist,
                 redacted: bool, files: list[str], replay_engines: dict[str, str]) -> dict[str, Any]:
    """``outcome``: ``verify.shadow.triage.TriageOutcome``; ``tokenizers``: (name, version, vocab_sha256)
    -> records, confirmed, mismatched, unchecked."""
    rows = []
    kinds = {"ids": 0, "bad-input": 2}  # production's mismatches first, then reference failures, bad records
    order = sorted(outcome.clusters, key=lambda c: ({"new": 0, "known": 1, "allowlisted": 2}[
        outcome.cluster_status(c)["status"]], kinds.get(c.kind, 1), -c.count, c.key))
    for rank, c in enumerate(order, 1):
        state = outcome.state(c)
        facts = state.facts
        first, last = (facts.first[1] if facts.first else None), (facts.last[1] if facts.last else None)
        status = state.status
        if status.get("first_seen") and (first is None or parse_timestamp(status["first_seen"]) < parse_timestamp(first)):
            first = status["first_seen"]
        rows.append({"rank": rank, "key": c.key, "engine": c.engine, "kind": c.kind, **status,
                     "count": c.count, "first_seen": first, "last_seen": last,
                     "versions": sorted(facts.versions), "request_ids": list(facts.request_ids),
                     "digest_only": facts.digest_only, "session_turns": facts.session_turns,
                     "tags": c.tags, "suspects": suspects(c, facts, replayed=_replayed(c, replay_engines)),
                     "cause": c.cause, "signature": c.signature,
                     "reproducer": _reproducer(c, state)})
    for r in rows:  # clusters whose minimised reproducers coincide: likely one bug
        r["same_cause_as"] = [o["rank"] for o in rows if o is not r and r["cause"] and o["cause"] == r["cause"]]
    failing, bad = outcome.mismatched, outcome.bad
    states = counts.states
    c_new = sum(1 for r in rows if r["status"] == "new")
    unaccepted = sum(r["count"] for r in rows if r["status"] != "allowlisted")
    ok = counts.samples > 0 and unaccepted == 0 and states["skipped"] == 0
    previous = [c for c in known.clusters if (c.get("engine"), c.get("key")) not in
                {(r["engine"], r["key"]) for r in rows}]
    return {
        "schema": REPORT_SCHEMA, "verdict": "pass" if ok else "fail", "redacted": redacted,
        "reference": reference, "files": files, "replay_engines": replay_engines,
        "counts": {"records": counts.samples, "confirmed": states["verified"], "mismatched": states["diverged"],
                   "reference_failed": states["error"] + states["crash"] + states["timeout"],
                   "skipped": states["skipped"], "bad_records": counts.bad_records,
                   "clusters": len(rows), "new_clusters": c_new,
                   "causes": len({r["cause"] or r["key"] for r in rows}), "accepted_findings": sum(
                       r["count"] for r in rows if r["status"] == "allowlisted")},
        "tokenizers": [{"name": n, "version": v, "vocab_sha256": sha,
                        "vocab_matches_reference": None if sha is None or not reference
                        or reference.get("vocab_sha256") is None else sha == reference["vocab_sha256"],
                        **{k: t.get(k, 0) for k in ("records", "confirmed", "mismatched", "unchecked")}}
                       for (n, v, sha), t in sorted(tokenizers.items(), key=lambda kv: tuple(str(x) for x in kv[0]))],
        "clusters": rows,
        "mismatched_requests": failing,  # the triage stage lists the first 10,000
        "mismatched_requests_total": outcome.mismatched_total,
        "bad_records": bad,
        "known_clusters": {"from": str(known.out) if known.out else None,
                           "not_seen": [{"engine": c.get("engine"), "key": c.get("key")} for c in previous]},
        "allowlist": allowlist.as_dict() if allowlist is not None else None,
        "triage": outcome.summary.as_info(),
    }


# --- Markdown (templates/shadow.md.j2) ----------------------------------------------------

def _ascii_input(segments: list | None) -> str | None:
    """An input as ``ascii()`` shows it (every non-ASCII character escaped); None for none."""
    if not segments:
        return None
    if len(segments) == 1 and not segments[0][1]:
        return ascii(segments[0][0])
    return ascii([tuple(s) for s in segments])


def _reproducer_view(rep: dict[str, Any]) -> dict[str, Any]:
    window = ((rep.get("redacted") or {}).get("window") or {}).get("segments")
    return {**rep, "shown": _ascii_input(rep.get("input")), "window": _ascii_input(window) if window else None}


def _difference_view(diff: dict[str, Any] | None) -> dict[str, Any] | None:
    if not diff:
        return None
    shown = {side: (diff.get(side) or {}).get("pieces") or (diff.get(side) or {}).get("ids") or []
             for side in ("expected", "actual")}
    return {"token_index": diff.get("token_index"), "char_offset": diff.get("char_offset"),
            "expected_len": diff.get("expected_len"), "actual_len": diff.get("actual_len"), **shown}


def render_markdown(report: dict[str, Any]) -> str:
    clusters = [{**r, "reproducer": _reproducer_view(r["reproducer"]),
                 "first_difference": _difference_view(r["reproducer"].get("first_difference"))}
                for r in report["clusters"][:MAX_MD_CLUSTERS]]
    return render("shadow.md.j2", report=report, clusters=clusters, listed=MAX_MD_CLUSTERS)


def write_report(out: Path, report: dict[str, Any]) -> None:
    folder = RunFolder(out)
    atomic.write_json(folder.shadow, report)
    atomic.write_text(folder.shadow_summary, render_markdown(report))
