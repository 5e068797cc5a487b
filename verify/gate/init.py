"""``verify gate init --candidate SPEC [--reference SPEC] [--profile pr|nightly]``: write a
gate suite for one candidate, so a team starts from a suite that runs rather than from a
copy of someone else's.

    init_suite(candidate, reference=None, profile="pr", path=None) -> Written

What goes in follows from the candidate itself, loaded once here:

* the **reference** is the one engines/reference.toml (then the sweep's references) names
  for the candidate's vocabulary, on another adapter; a plugin whose vocabulary cannot be
  told needs ``--reference``;
* the **checks** are the kinds of ``verify.gate.kinds.KINDS`` the candidate can take part in:
  ``replay`` only for an engine with stateful sessions, or one that honours special tokens
  (then whole transcripts, chat-template specials beside user text, are still worth
  encoding); ``recheck`` only when adversarial/regressions/ has cases for it; an engine
  without special-token support gets ``allow_skipped`` wherever the inputs carry special
  segments, and no special-token length family;
* the **budgets** are measured, not assumed: the candidate and the reference encode the smoke
  corpus here (``verify.gate.budget.measure_pair``), and each check is sized so that the suite
  fits the profile on this machine -- ``pr`` five minutes, ``nightly`` thirty -- with the
  predicted seconds of each check printed and written beside it; ``[gate] deadline`` holds the
  promise (a check cut by it fails and says so).

The suite is checked by ``verify.gate.suite.parse_suite`` before it is written, and an
``allowlist.toml`` is put beside it when there is none (the suite names it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify import atomic
from verify.engine_spec import EngineSpec
from verify.engines.catalogue import engine_values
from verify.errors import UsageError
from verify.rundir.paths import folder_to_write

PROFILES = ("pr", "nightly")
ALLOWLIST_FILE = "allowlist.toml"
WORKERS = 2  # the suite's shard workers
MINIMIZE_BUDGET_S = {"pr": 10, "nightly": 30}  # per check, to minimise one finding per cluster

# The library whose format a vocabulary is written in: the natural reference when
# engines/*.toml names none (an install from a wheel, without the checkout's tables).

ALLOWLIST_TEMPLATE = """\
# Known divergences: a cluster listed here does not fail the gate until its row expires.
# One [[allow]] row per accepted cluster (keys from gate.json, report.html or ci-summary.md):
#
# [[allow]]
# engine = '^{engine}$'                # regex on the engine spec ("" = any)
# key = "ids/special/plain:split"      # the exact cluster key, or instead
# # cluster = "/special(/|$)"          # a regex on cluster keys
# reason = "why it is accepted"        # required
# link = "https://github.com/ORG/REPO/issues/1"
# expires = 2027-03-31                 # the last day it applies
#
# Rules: ci/README.md ("The allowlist").
"""


@dataclass
class Facts:
    """What init learned from loading the candidate."""

    spec: EngineSpec
    vocab: str | None
    special_tokens: bool
    sessions: bool
    decode: bool
    pair_seconds: float = 0.25  # the candidate and the reference on the smoke corpus, measured here
    # representatives per atom of the reference's pattern (verify certify's alphabet); None: it has none
    alphabet: tuple[tuple[str, ...], ...] | None = None


@dataclass
class Written:
    path: Path
    reference: str
    checks: list[str]
    allowlist: Path | None  # written beside the suite (None: one was there)
    notes: list[str] = field(default_factory=list)
    plan: list[tuple[str, float]] = field(default_factory=list)  # (check, predicted seconds here)
    pair_seconds: float = 0.0
    budget_s: float = 0.0


def candidate_facts(spec: str, engine) -> Facts:
    caps = engine.capabilities
    return Facts(spec, engine.identity().vocab, bool(caps.special_tokens), bool(caps.sessions), bool(caps.decode))


def inspect_candidate(spec: EngineSpec, reference: EngineSpec | None = None) -> tuple[Facts, EngineSpec]:
    """Load the candidate in this process, choose its reference (unless given), and time the two
    on the smoke corpus (``verify.gate.budget.measure_pair``). Returns the facts and the reference."""
    from verify.engines.registry import build_engine
    from verify.gate.budget import measure_pair

    engine = build_engine(spec)
    try:
        facts = candidate_facts(spec, engine)
        reference = reference or choose_reference(facts)
        other = build_engine(reference)
        try:
            facts.pair_seconds = round(measure_pair(engine, other, plain_only=not facts.special_tokens), 4)
        finally:
            other.close()
        facts.alphabet = certify_alphabet(reference)
        return facts, reference
    finally:
        engine.close()


def certify_alphabet(reference: str) -> tuple[tuple[str, ...], ...] | None:
    """The representatives per atom of ``reference``'s pattern (``verify certify``), or None when
    verify cannot read a pattern of it (a plugin, a vocabulary without a pre-tokenizer)."""
    from verify.adversarial.certify.atoms import alphabet_of
    from verify.adversarial.certify.hunt import DEFAULT_REPS

    try:
        return tuple(map(tuple, alphabet_of(reference).representatives(DEFAULT_REPS)))
    except UsageError:
        return None


def choose_reference(facts: Facts) -> str:
    """The reference for the candidate's vocabulary (``verify.engines.references``)."""
    from verify.engines.references import reference_for

    return reference_for(facts.spec, facts.vocab)


def regression_cases(candidate: EngineSpec) -> int:
    """How many cases of adversarial/regressions/ are recorded for exactly this engine."""
    from verify.adversarial.regressions.cases import load_cases
    from verify.config import declared

    folder = declared("adversarial", "regressions")
    if not folder.is_dir():
        return 0
    return sum(1 for case in load_cases(folder) if candidate.builds_same_engine(case.engine))


def plan_checks(facts: Facts, profile: str, cases: int, workers: int = WORKERS
                ) -> list[tuple[str, dict[str, Any], float]]:
    """``(comment, row, predicted seconds)`` per ``[[check]]``, in the order they run, each sized
    (``verify.gate.budget.fit_sizes``) so that the suite fits the profile here."""
    from verify.gate.budget import CERTIFY_MIN_K, LENGTH_CHARS, SIZINGS, Costs, fit_sizes, predict

    pr = profile == "pr"
    plain_only = not facts.special_tokens
    skip = {"allow_skipped": True} if plain_only else {}
    costs = Costs(facts.pair_seconds, workers, MINIMIZE_BUDGET_S[profile])
    rows: list[tuple[str, dict[str, Any]]] = []

    rows.append(("Our generated corpus: 12+ scripts, code, JSON, control characters, special-token literals, "
                 "long documents" + ("; a deterministic slice." if pr else "; as much as fits.")
                 + (" Samples with special-token segments are skipped for an engine without special tokens: "
                    "reported, not failing." if plain_only else ""),
                 {"name": "corpus", "kind": "corpus", "corpus": ["default"], **({"seed": 1} if pr else {}), **skip}))
    if facts.sessions or facts.special_tokens:
        replay: dict[str, Any] = {"name": "agent-replay", "kind": "replay", "traces": ["agent:1:8"]}
        if facts.sessions and facts.special_tokens:
            why = "Agent sessions replayed turn by turn through the engine's stateful sessions."
        elif facts.sessions and "template" in replay_keys():
            why = ("Agent sessions replayed turn by turn through the engine's stateful sessions, rendered with "
                   "the plain template (the engine takes no special tokens).")
            replay["template"] = "plain"
        elif facts.sessions:
            why = ("Agent sessions replayed turn by turn. The engine takes no special tokens, so the turns whose "
                   "chat template has them are skipped (reported with the reason).")
            replay["allow_skipped"] = True
        else:
            why = ("Agent sessions: no stateful sessions, so each turn's whole transcript is encoded from scratch "
                   "(chat-template special tokens beside user text); reported as skipped, failing only on a finding.")
            replay["allow_skipped"] = True
        rows.append((why, replay))
    if facts.alphabet:
        rows.append(("Bounded-exhaustive parity: every string of at most k atoms of the reference's pattern, each "
                     "adjacent pair of atoms with every pair of their representatives (k fits the budget here; "
                     "at least 3, the length of the scanner bugs we know). Its verdict depends on k alone, never "
                     "on the machine's load" + (", so it stands in for a time-bounded fuzz." if pr else "."),
                     {"name": "certificate", "kind": "certificate", "k": CERTIFY_MIN_K, "_strings": 0}))
    if not (pr and facts.alphabet):
        rows.append(("Hypothesis strategies for tokenizer-hostile text and segments, then the stress phase "
                     "(10^4-10^5 samples in one call, inputs across the chunking thresholds)"
                     + ("; a fixed seed, so a pull request sees the same inputs twice." if pr else
                        "; a new seed every night."),
                     {"name": "fuzz", "kind": "fuzz", **({"seed": 1} if pr else {}), **skip}))
    rows.append(("Every code point in contexts derived from the reference's pre-tokenizer pattern (from U+0000 "
                 "up, as far as fits).", {"name": "unicode", "kind": "unicode", "full": True}))
    rows.append(("Vocabulary tokens as text, alone and in context, pairs across pre-token boundaries, and every "
                 "special token with allow_special false and true plus near-misses (from the first token id, as "
                 "many as fit).", {"name": "vocab", "kind": "vocab", **skip}))
    if cases:
        rows.append((f"The {cases} regression case(s) of adversarial/regressions/ recorded for this engine: "
                     "each must still behave as recorded.", {"name": "recheck", "kind": "recheck"}))
    rows.append(("The engine against itself: repeat, fresh vs warm, batch vs single, threads, decode, stress "
                 "(stress_seconds fits the big batch here).",
                 {"name": "metamorphic", "kind": "metamorphic", "corpus": ["smoke" if pr else "default"],
                  "stress_seconds": costs.stress_seconds()}))
    kinds = ["run", "block", "separator"] + ([] if plain_only else ["special"]) + ([] if pr else ["token"])
    rows.append(("Every character class, block and separator grown until the engine first differs, bisected"
                 + (" (past the 25,000-character chunk threshold)." if pr else
                    " (past 400,000: every chunking threshold we know)."),
                 {"name": "length", "kind": "length", "max_chars": LENGTH_CHARS[profile], "kinds": kinds, **skip}))

    by_kind = {row["kind"]: row for _, row in rows}
    for kind, size in fit_sizes(profile, costs, by_kind).items():
        SIZINGS[kind].resize(by_kind[kind], size, profile, facts.alphabet)
    ordered = ("name", "kind", "corpus", "traces", "template", "sample", "seed", "examples", "seconds", "full",
               "range", "limit", "stress_seconds", "max_chars", "kinds", "k", "allow_skipped")
    # keys with a leading underscore are the planner's own (a certificate's string count), not the suite's
    return [(comment, {k: row[k] for k in sorted(row, key=lambda k: ordered.index(k) if k in ordered else 99)
                       if not k.startswith("_")},
             round(predict(row["kind"], row, costs), 1)) for comment, row in rows]


def replay_keys() -> set[str]:
    from verify.gate.kinds import KINDS

    return set(KINDS["replay"].options)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's string escapes are TOML's basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:40] or "engine"


def render_suite(facts: Facts, reference: str, profile: str, rows, allowlist: str) -> str:
    from verify.gate.budget import profile_budget

    name = f"{profile}-{_slug(facts.spec)}"
    budget = profile_budget(profile)
    total = sum(seconds for _, _, seconds in rows)
    head = [f"# The {profile} gate for {facts.spec} against {reference}"
            + (f" on {facts.vocab}." if facts.vocab else "."),
            f"# Written by: verify gate init --candidate {facts.spec} --reference {reference} --profile {profile}",
            "# Run it:     verify gate THIS_FILE --out gate-out [--baseline PREVIOUS_GATE_OUT]",
            f"# Budget: the whole gate in {budget:g} s (deadline below). Sized on the machine that wrote it: the "
            f"candidate and the reference encode the smoke corpus in {facts.pair_seconds:g} s together, so about "
            f"{total:.0f} s here with {WORKERS} workers; each check's estimate is beside it. The format and every "
            "key: ci/README.md.",
            f"# The candidate: special tokens {'yes' if facts.special_tokens else 'no'}, stateful sessions "
            f"{'yes' if facts.sessions else 'no'}, decode {'yes' if facts.decode else 'no'}."]
    lines = head + ["", "[gate]", f"name = {_toml_value(name)}",
                    f"description = {_toml_value(f'{facts.spec} (the candidate) against {reference} (the reference)')}",
                    f"reference = {_toml_value(reference)}", f"candidates = {_toml_value([facts.spec])}",
                    f"allowlist = {_toml_value(allowlist)}   # beside this file",
                    f"workers = {WORKERS}", f"minimize_budget = {MINIMIZE_BUDGET_S[profile]}   # seconds per check to "
                    "minimise one finding per cluster",
                    f"deadline = {budget:g}   # seconds for the whole gate: a check it cuts fails and says so"]
    for comment, row, seconds in rows:
        lines += ["", *(f"# {part}" for part in _wrap(f"{comment} About {seconds:.0f} s here.")), "[[check]]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in row.items()]
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 96) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def default_path(profile: str) -> Path:
    return Path(f"gate-{profile}.toml")


def init_suite(candidate: EngineSpec | str, reference: EngineSpec | str | None = None, profile: str = "pr", path: Path | None = None,
               force: bool = False) -> Written:
    from verify.gate.suite import parse_suite
    from verify.toml_config import parse_toml

    if profile not in PROFILES:
        raise UsageError(f"--profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    path = Path(path or default_path(profile))
    if path.exists() and not force:
        raise UsageError(f"{path} exists: choose another --write PATH, or --force to replace it")
    if path.exists() and path.is_dir():
        raise UsageError(f"--write {path} is a directory")
    folder_to_write(path.parent, "the folder of --write")
    candidate, given = engine_values(candidate, [reference] if reference else [])
    reference = given[0] if given else None
    if reference is not None and reference == candidate:
        raise UsageError(f"{candidate} cannot be its own reference")
    from verify.gate.budget import profile_budget

    facts, reference = inspect_candidate(candidate, reference)
    rows = plan_checks(facts, profile, regression_cases(candidate))
    text = render_suite(facts, reference, profile, rows, ALLOWLIST_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    allowlist = path.parent / ALLOWLIST_FILE
    made_allowlist = not allowlist.exists()
    if made_allowlist:
        atomic.write_text(allowlist, ALLOWLIST_TEMPLATE.format(engine=re.escape(candidate)))
    parse_suite(parse_toml(text, f"the {profile} suite for {candidate}"), path)  # what we write must load
    atomic.write_text(path, text)
    notes = []
    budget = profile_budget(profile)
    total = sum(seconds for _, _, seconds in rows)
    if total > budget:
        notes.append(f"even at their smallest sizes the checks take about {total:.0f} s here, over the {profile} "
                     f"profile's {budget:g} s: the deadline will cut the last ones (a slower engine: drop checks, or "
                     "use --profile nightly)")
    if not facts.special_tokens:
        notes.append(f"{candidate} has no special-token support: checks whose inputs carry special segments "
                     "allow skipped samples (each skip is reported with its reason)")
    return Written(path, reference, [row["name"] for _, row, _ in rows], allowlist if made_allowlist else None,
                   notes, [(row["name"], seconds) for _, row, seconds in rows], facts.pair_seconds, budget)
