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
* the **budgets** are the profile's: ``pr`` fits five minutes on two cores for an engine
  at most four times slower than tiktoken (a slower one, measured here on the smoke corpus
  against tiktoken, gets smaller slices, said in the file), ``nightly`` sweeps in full (every code point, every token,
  the whole generated corpus, inputs to 500,000 characters).

The suite is checked by ``verify.gate.suite.parse_suite`` before it is written, and an
``allowlist.toml`` is put beside it when there is none (the suite names it).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verify import atomic
from verify.errors import ConfigError, UsageError
from verify.rundir.paths import folder_to_write

PROFILES = ("pr", "nightly")
ALLOWLIST_FILE = "allowlist.toml"
PR_BUDGET_S = 300  # the pr profile's promise: five minutes on two cores
YARDSTICK = "tiktoken:cl100k_base"  # what a candidate's speed is measured against (in every install)
SLOW_RATIO = 4.0  # slower than this many times tiktoken: the pr slices shrink

# The library whose format a vocabulary is written in: the natural reference when
# engines/*.toml names none (an install from a wheel, without the checkout's tables).
REFERENCE_ADAPTER_BY_KIND = {"tiktoken": "tiktoken", "hf-json": "hf", "tekken-json": "tekken",
                             "sentencepiece": "sentencepiece"}
# After engines/reference.toml: the references of `verify sweep` (tekken, SentencePiece).
MORE_REFERENCES = ("tekken-tekken", "sentencepiece-spm-v3")

ALLOWLIST_TEMPLATE = """\
# Known divergences: a cluster listed here does not fail the gate until its row expires.
# One [[allow]] row per accepted cluster (keys from gate.json, report.html or ci-summary.md):
#
# [[allow]]
# engine = '^{engine}$'                # regex on the engine spec ("" = any)
# key = "ids/Ll+Zs/Latin+Common/letter|space/special"   # the exact cluster key, or instead
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

    spec: str
    vocab: str | None
    special_tokens: bool
    sessions: bool
    decode: bool
    slowness: float = 1.0  # the candidate's time on the smoke corpus over tiktoken's (cl100k), measured here


@dataclass
class Written:
    path: Path
    reference: str
    checks: list[str]
    allowlist: Path | None  # written beside the suite (None: one was there)
    notes: list[str] = field(default_factory=list)


def inspect_candidate(spec: str) -> Facts:
    """Load the candidate in this process and time it on the smoke corpus against tiktoken
    (the best of three, interleaved, so a busy machine slows both alike)."""
    from verify.corpora.generated import generate_one
    from verify.engines.registry import build_engine

    engine = build_engine(spec)
    try:
        caps = engine.capabilities
        samples = [generate_one(1, i, 200, 0) for i in range(200)]  # the smoke corpus
        if not caps.special_tokens:
            samples = [s for s in samples if s.is_plain]
        yardstick = build_engine(YARDSTICK)
        try:
            times = {id(engine): [], id(yardstick): []}
            for each in (engine, yardstick):
                each.encode_batch(samples[:8])  # lazy set-up is not speed
            for _ in range(3):
                for each in (engine, yardstick):
                    started = time.perf_counter()
                    each.encode_batch(samples)
                    times[id(each)].append(time.perf_counter() - started)
        finally:
            yardstick.close()
        slowness = min(times[id(engine)]) / max(min(times[id(yardstick)]), 1e-6)
        return Facts(spec, engine.identity().vocab, bool(caps.special_tokens), bool(caps.sessions),
                     bool(caps.decode), round(slowness, 2))
    finally:
        engine.close()


def _same_engine(a, b) -> bool:
    return (a.adapter, a.target, a.options) == (b.adapter, b.target, b.options)


def choose_reference(facts: Facts) -> str:
    """The reference for the candidate's vocabulary: engines/reference.toml's first engine
    on it (then ``MORE_REFERENCES``), never the candidate's own adapter and options."""
    from verify.config import declared, named_engines
    from verify.engines.registry import parse_spec
    from verify.toml_config import read_toml
    from verify.vocab.known import KNOWN_VOCABS

    if not facts.vocab:
        raise ConfigError(f"cannot tell which vocabulary {facts.spec} uses: name the tokenizer it must match "
                          f"with --reference SPEC (e.g. tiktoken:cl100k_base, hf:path/tokenizer.json)")
    mine = parse_spec(facts.spec)
    named = named_engines()
    listed = list(read_toml(declared("engines", "reference.toml"), missing_ok=True).get("engine", {}))
    for name in [*listed, *MORE_REFERENCES]:
        spec = named.get(name)
        if spec is not None and spec.target == facts.vocab and not _same_engine(spec, mine) \
                and spec.adapter != mine.adapter:
            return name
    known = KNOWN_VOCABS.get(facts.vocab)
    adapter = REFERENCE_ADAPTER_BY_KIND.get(getattr(known, "kind", ""))
    if adapter and adapter != mine.adapter:
        return f"{adapter}:{facts.vocab}"
    raise ConfigError(f"no reference is known for vocabulary '{facts.vocab}' of {facts.spec}: "
                      f"name one with --reference SPEC")


def regression_cases(candidate: str) -> int:
    """How many cases of adversarial/regressions/ are recorded for exactly this engine."""
    from verify.adversarial.regressions.cases import load_cases
    from verify.config import declared
    from verify.engines.registry import parse_spec

    folder = declared("adversarial", "regressions")
    if not folder.is_dir():
        return 0
    mine = parse_spec(candidate)
    return sum(1 for case in load_cases(folder) if _same_engine(parse_spec(case.engine), mine))


def speed_scale(facts: Facts, profile: str) -> float:
    """1 for an engine at most ``SLOW_RATIO`` times slower than tiktoken; 1/2, 1/4, 1/8 for
    slower ones (pr only: a nightly has the night)."""
    if profile != "pr" or facts.slowness <= SLOW_RATIO:
        return 1.0
    return 0.5 if facts.slowness <= 2 * SLOW_RATIO else 0.25 if facts.slowness <= 4 * SLOW_RATIO else 0.125


def plan_checks(facts: Facts, profile: str, cases: int, scale: float = 1.0) -> list[tuple[str, dict[str, Any]]]:
    """``(comment, row)`` per ``[[check]]``, in the order they run."""
    pr = profile == "pr"
    plain_only = not facts.special_tokens
    skip = {"allow_skipped": True} if plain_only else {}
    rows: list[tuple[str, dict[str, Any]]] = []

    sample = round(0.2 * scale, 3) if pr else None
    rows.append(("Our generated corpus: 12+ scripts, code, JSON, control characters, special-token literals, "
                 + ("long documents; a deterministic slice." if pr else "the three long documents; all of it.")
                 + (" Samples with special-token segments are skipped for an engine without special tokens: "
                    "reported, not failing." if plain_only else ""),
                 {"name": "corpus", "kind": "corpus", "corpus": ["default"],
                  **({"sample": sample, "seed": 1} if sample else {}), **skip}))
    if facts.sessions or facts.special_tokens:
        sessions = max(2, int(8 * scale)) if pr else 64
        replay: dict[str, Any] = {"name": "agent-replay", "kind": "replay", "traces": [f"agent:1:{sessions}"]}
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
    fuzz = {"examples": max(100, int(400 * scale)), "seconds": 30, "seed": 1} if pr else \
        {"examples": 5000, "seconds": 900}
    rows.append(("Hypothesis strategies for tokenizer-hostile text and segments, then the stress phase "
                 "(10^4-10^5 samples in one call, inputs across the chunking thresholds)"
                 + ("; a fixed seed, so a pull request sees the same inputs twice." if pr else
                    "; a new seed every night."),
                 {"name": "fuzz", "kind": "fuzz", **fuzz, **skip}))
    full_unicode = not pr or scale >= 0.5
    rows.append(("Every code point in contexts derived from the reference's pre-tokenizer pattern"
                 + ("." if full_unicode else ": the first 0x3000 (Latin to CJK punctuation) for a slow engine."),
                 {"name": "unicode", "kind": "unicode",
                  **({"full": True} if full_unicode else {"range": ["0000", "3000"]})}))
    vocab = {"limit": max(250, int(2000 * scale))} if pr else {}
    rows.append(("Vocabulary tokens as text, alone and in context, pairs across pre-token boundaries, and every "
                 "special token with allow_special false and true plus near-misses"
                 + (" (the first token ids)." if pr else " (every token)."),
                 {"name": "vocab", "kind": "vocab", **vocab, **skip}))
    if cases:
        rows.append((f"The {cases} regression case(s) of adversarial/regressions/ recorded for this engine: "
                     "each must still behave as recorded.", {"name": "recheck", "kind": "recheck"}))
    meta = {"corpus": ["smoke"], "limit": max(25, int(100 * scale)), "stress_seconds": 10} if pr else \
        {"corpus": ["default"], "limit": 1000, "stress_seconds": 60}
    rows.append(("The engine against itself: repeat, fresh vs warm, batch vs single, threads, decode, stress.",
                 {"name": "metamorphic", "kind": "metamorphic", **meta}))
    kinds = ["run", "block", "separator"] + ([] if plain_only else ["special"]) + ([] if pr else ["token"])
    rows.append(("Every character class, block and separator grown until the engine first differs, bisected"
                 + (" (past the 25,000-character chunk threshold)." if pr else
                    " (past 400,000: every chunking threshold we know)."),
                 {"name": "length", "kind": "length", "max_chars": 30000 if pr else 500000, "kinds": kinds, **skip}))
    return rows


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


def render_suite(facts: Facts, reference: str, profile: str, rows, scale: float, allowlist: str) -> str:
    name = f"{profile}-{_slug(facts.spec)}"
    pr = profile == "pr"
    head = [f"# The {profile} gate for {facts.spec} against {reference}"
            + (f" on {facts.vocab}." if facts.vocab else "."),
            f"# Written by: verify gate init --candidate {facts.spec} --reference {reference} --profile {profile}",
            "# Run it:     verify gate THIS_FILE --out gate-out [--baseline PREVIOUS_GATE_OUT]",
            "# Budgets: " + ("about five minutes on two cores; " if pr else "full sweeps, for a night; ")
            + "the format and every key: ci/README.md.",
            f"# The candidate: special tokens {'yes' if facts.special_tokens else 'no'}, stateful sessions "
            f"{'yes' if facts.sessions else 'no'}, decode {'yes' if facts.decode else 'no'}; "
            + ("about as fast as tiktoken." if facts.slowness <= SLOW_RATIO else
               f"{facts.slowness:g} times slower than tiktoken, so the slices below are {scale:g} of the usual "
               "pr budgets.")]
    lines = head + ["", "[gate]", f"name = {_toml_value(name)}",
                    f"description = {_toml_value(f'{facts.spec} (the candidate) against {reference} (the reference)')}",
                    f"reference = {_toml_value(reference)}", f"candidates = {_toml_value([facts.spec])}",
                    f"allowlist = {_toml_value(allowlist)}   # beside this file",
                    "workers = 2", f"minimize_budget = {10 if pr else 30}   # seconds per check to minimise "
                    "one finding per cluster"]
    for comment, row in rows:
        lines += ["", *(f"# {part}" for part in _wrap(comment)), "[[check]]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in row.items()]
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 96) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def default_path(profile: str) -> Path:
    return Path(f"gate-{profile}.toml")


def init_suite(candidate: str, reference: str | None = None, profile: str = "pr", path: Path | None = None,
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
    if reference is not None and reference == candidate:
        raise UsageError(f"{candidate} cannot be its own reference")
    facts = inspect_candidate(candidate)
    reference = reference or choose_reference(facts)
    scale = speed_scale(facts, profile)
    rows = plan_checks(facts, profile, regression_cases(candidate), scale)
    text = render_suite(facts, reference, profile, rows, scale, ALLOWLIST_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    allowlist = path.parent / ALLOWLIST_FILE
    made_allowlist = not allowlist.exists()
    if made_allowlist:
        atomic.write_text(allowlist, ALLOWLIST_TEMPLATE.format(engine=re.escape(candidate)))
    parse_suite(parse_toml(text, f"the {profile} suite for {candidate}"), path)  # what we write must load
    atomic.write_text(path, text)
    notes = []
    if scale < 1:
        notes.append(f"{candidate} encodes {facts.slowness:g} times slower than tiktoken here: pr slices scaled "
                     f"to {scale:g}")
    if not facts.special_tokens:
        notes.append(f"{candidate} has no special-token support: checks whose inputs carry special segments "
                     "allow skipped samples (each skip is reported with its reason)")
    return Written(path, reference, [row["name"] for _, row in rows], allowlist if made_allowlist else None, notes)
