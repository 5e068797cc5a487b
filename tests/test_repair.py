"""The built-in session engines: ``naive`` and the full-certificate ``repair`` never diverge
(over tiktoken, over HF on the same vocabulary, over a tiny HF vocabulary trained here);
``concat`` and each unsafe ``repair`` variant are found by ``verify replay`` with their
session and turn, on a trace that the full certificate passes -- so each rule the
variant drops is shown to be needed. Dropping ``min_match`` alone is not unsafe (the
other two rules imply it): docs/repair.md."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import TRAINING_TEXT, run_cli

REF = "tiktoken:cl100k_base"
ARABIC_THREE = "\u0663"  # an Arabic-Indic digit: \p{N}, two bytes, two byte-level tokens in cl100k

FILLER = "".join(f"line {i}: the quick tokenizer splits words, numbers {i * 37} and symbols!\n" for i in range(12))

# Turn boundaries on every hazard, after a prefix longer than the window, so that the
# splices are certified windows rather than whole-segment re-encodes.
HAZARDS = {
    "digits": [FILLER + "total 12", "345", " and 9", "99,000"],
    "lookahead": [FILLER + "a   ", " b", "c \t ", "\td", "  "],
    "contraction": [FILLER + "I don", "'t think we", "'ll", "'VE"],
    "crlf": [FILLER + "line\r", "\nnext\r", "\n\r\n", "end"],
    "long-run": [FILLER + "x" + "=" * 300, "=" * 7, " " * 200, "y", "b" * 400, "c"],
    "short": ["count 12", "345"],
}
# Each breaks one unsafe variant (the comment says which); the full certificate passes them.
BREAKERS = {
    "arabic-257": [ARABIC_THREE * 257 + "1", "23"],  # sync=none; widen=0&fallback=false
    "arabic-33": [ARABIC_THREE * 33 + "1", "23"],  # scheme=margin&margin=64
    "arabic-9": [ARABIC_THREE * 9 + "1", "23"],  # window=16&widen=0&fallback=false
    "added-token": ["don't quick tokenizer spl", "its"],  # cover=0 (window=8), over a vocabulary with that added token
}
TEXT_SESSIONS = {**HAZARDS, **BREAKERS}
SPECIAL_TURNS = [  # typed segments: a special literal as text, and one cut inside an allow_special segment
    [[FILLER, False], ["<|endoftext|>", True], ["say <|endof", False]],
    [["text|> ok", False]],
    [["<|endof", True]],
    [["text|>", True], ["after", False]],
    [[" and more", False]],
]
ADDED_TOKEN = "quick tokenizer splits"  # an added (not special) token: HF matches it before pre-tokenizing


def write_traces(path, sessions: dict, typed: dict | None = None):
    lines = [{"schema": "verify.trace/1", "session": sid, "turn": i, "text": text}
             for sid, turns in sessions.items() for i, text in enumerate(turns)]
    for sid, turns in (typed or {}).items():
        lines += [{"schema": "verify.trace/1", "session": sid, "turn": i, "segments": segs}
                  for i, segs in enumerate(turns)]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    return write_traces(tmp_path_factory.mktemp("traces") / "sessions.jsonl", TEXT_SESSIONS,
                        {"special": SPECIAL_TURNS})


@pytest.fixture(scope="module")
def added_vocab(tmp_path_factory) -> str:
    """A tiny byte-level BPE (GPT-2 pattern) with an added token that contains a space."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|sep|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    tok.add_tokens([AddedToken(ADDED_TOKEN, normalized=False)])
    path = tmp_path_factory.mktemp("vocab") / "added.tokenizer.json"
    tok.save(str(path))
    return f"hf:{path}"


def replay(out, reference, engines, traces):
    args = ["replay", "--reference", reference, "--traces", str(traces), "--out", str(out), "--in-process",
            "--workers", "1", "--no-progress", "--minimize-budget", "0"]
    for engine in engines:
        args += ["--engine", engine]
    return run_cli(*args)


def findings(out) -> dict[str, list[dict]]:
    by_engine: dict[str, list[dict]] = {}
    for line in (out / "divergences.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_engine.setdefault(record["engine"], []).append(record)
    return by_engine


def engine_notes(out) -> dict:
    return json.loads((out / "manifest.json").read_text())["engine_notes"]


def test_naive_and_full_certificate_repair_over_tiktoken_and_hf_never_diverge(tmp_path, traces):
    engines = [f"naive:{REF}", f"repair:{REF}", f"repair:{REF}?window=16", f"repair:{REF}?min_match=1",
               "naive:hf:cl100k_base", "repair:hf:cl100k_base"]
    proc = replay(tmp_path / "ok", REF, engines, traces)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (tmp_path / "ok" / "divergences.jsonl").read_text()
    notes = engine_notes(tmp_path / "ok")
    for spec in (f"repair:{REF}", "repair:hf:cl100k_base"):
        repair = notes[spec]["repair"]
        # the splices were exercised: certified windows by all three rules, not only whole-segment re-encodes
        assert repair["certified"] >= 10 and repair["rule_sync"] == repair["certified"] == repair["rule_cover"]
        assert repair["appends"] == sum(len(t) for t in [*TEXT_SESSIONS.values(), SPECIAL_TURNS])
        assert "warnings" not in notes[spec]
    tiny, default = notes[f"repair:{REF}?window=16"]["repair"], notes[f"repair:{REF}"]["repair"]
    assert tiny["widenings"] > default["widenings"] and tiny["fallbacks"] >= 1  # a tiny window only costs work


def test_naive_and_repair_over_a_tiny_vocabulary_trained_here_never_diverge(tmp_path, traces, added_vocab):
    engines = [f"naive:{added_vocab}", f"repair:{added_vocab}", f"repair:{added_vocab}?window=8"]
    proc = replay(tmp_path / "tiny", added_vocab, engines, traces)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert engine_notes(tmp_path / "tiny")[f"repair:{added_vocab}?window=8"]["repair"]["certified"] >= 10


def test_concat_and_each_unsafe_repair_variant_is_found_with_its_session_and_turn(tmp_path, traces):
    expected = {  # engine -> (session, turn) its breaker trace fails on
        f"concat:{REF}": ("digits", 1),
        f"repair:{REF}?sync=none": ("arabic-257", 1),
        f"repair:{REF}?widen=0&fallback=false": ("arabic-257", 1),
        f"repair:{REF}?window=16&widen=0&fallback=false": ("arabic-9", 1),
        f"repair:{REF}?scheme=margin&margin=64": ("arabic-33", 1),
    }
    out = tmp_path / "unsafe"
    proc = replay(out, REF, list(expected), traces)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = findings(out)
    for engine, (session, turn) in expected.items():
        records = {(r["session"]["id"], r["session"]["turn"]): r for r in found.get(engine, [])}
        assert (session, turn) in records, (engine, sorted(records))
        record = records[(session, turn)]
        assert record["kind"] == "ids" and record["session"]["append"] == [[TEXT_SESSIONS[session][turn], False]]
    # what the failing splice relied on, and what the variant dropped
    notes = {e: {(r["session"]["id"], r["session"]["turn"]): r["session"]["update"]["notes"] for r in rs}
             for e, rs in found.items()}
    sync_none = notes[f"repair:{REF}?sync=none"][("arabic-257", 1)]
    assert sync_none["rules"] == ["match", "cover"] and sync_none["dropped"] == ["sync"]
    uncertified = notes[f"repair:{REF}?widen=0&fallback=false"][("arabic-257", 1)]
    assert uncertified["uncertified"] and uncertified["failed"] == ["sync"]
    assert notes[f"repair:{REF}?scheme=margin&margin=64"][("arabic-33", 1)]["rules"] == ["margin"]
    assert engine_notes(out)[f"repair:{REF}?sync=none"]["unsafe_variant"] == ["sync"]


def test_the_coverage_rule_is_needed_when_an_added_token_spans_a_synchronising_boundary(tmp_path, traces,
                                                                                       added_vocab):
    unsafe, safe = f"repair:{added_vocab}?window=8&cover=0", f"repair:{added_vocab}?window=8"
    out = tmp_path / "cover"
    proc = replay(out, added_vocab, [unsafe, safe, f"concat:{added_vocab}"], traces)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = findings(out)
    assert safe not in found and found[f"concat:{added_vocab}"]
    (record,) = [r for r in found[unsafe] if r["session"]["id"] == "added-token"]
    assert record["session"]["turn"] == 1
    notes = record["session"]["update"]["notes"]
    assert notes["rules"] == ["match", "sync"] and notes["dropped"] == ["cover"]


def test_a_session_resumed_from_its_state_in_a_fresh_process_equals_the_uninterrupted_one():
    from verify.engines.sessions import apply_update
    from verify.executors.pool import EngineOptions, EnginePool
    from verify.sample import Segment

    turns = [[Segment(t, False)] for t in HAZARDS["digits"]] + [[Segment("<|endoftext|>", True)],
                                                                [Segment("tail 7", False)]]
    specs = [f"repair:{REF}?window=64", f"naive:{REF}"]
    states, ids, uninterrupted = {}, {}, {}
    with EnginePool(EngineOptions(isolate=True)) as first:
        for ex in first.start(specs):
            assert ex.open_session("s") is None
            ids[ex.spec] = np.zeros(0, dtype=np.uint32)
            for turn in turns[:3]:
                ids[ex.spec] = apply_update(ids[ex.spec], ex.session_append("s", turn))
            states[ex.spec] = ex.session_state("s")
            uninterrupted[ex.spec] = ids[ex.spec]
            for turn in turns[3:]:
                uninterrupted[ex.spec] = apply_update(uninterrupted[ex.spec], ex.session_append("s", turn))
    with EnginePool(EngineOptions(isolate=True)) as fresh:  # other worker processes
        for ex in fresh.start(specs):
            assert isinstance(states[ex.spec], bytes) and ex.open_session("s", states[ex.spec]) is None
            for turn in turns[3:]:
                ids[ex.spec] = apply_update(ids[ex.spec], ex.session_append("s", turn))
            assert np.array_equal(ids[ex.spec], uninterrupted[ex.spec]), ex.spec


def test_stateless_encode_is_the_inner_engines():
    from verify.engines import build_engine
    from verify.sample import Sample

    inner, repair = build_engine(REF), build_engine(f"repair:{REF}")
    samples = [Sample.plain("a", FILLER), Sample.from_segments("b", [("<|endoftext|>", True), ("x 12", False)])]
    assert all(np.array_equal(a, b) for a, b in zip(inner.encode_batch(samples), repair.encode_batch(samples)))
    assert repair.capabilities.sessions and repair.identity().fingerprint == inner.identity().fingerprint
    assert repair.identity().options["inner"]["spec"] == REF


def test_an_inner_engine_without_token_bytes_is_refused_in_one_line_exit_2(tmp_path, plugin_dir, traces):
    (plugin_dir / "bytes_blind.py").write_text(
        "class E:\n    def encode_batch(self, texts):\n        return [list(t.encode()) for t in texts]\n"
        "def make():\n    return E()\n")
    proc = run_cli("replay", "--engine", "repair:python:bytes_blind:make", "--reference", REF, "--traces",
                   str(traces), "--out", str(tmp_path / "x"), "--in-process", "--workers", "1", "--no-progress")
    assert proc.returncode == 2, proc.stderr
    assert "cannot report token bytes" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("options, says", [("windw=5", "unknown option 'windw'"), ("sync=maybe", "sync must be"),
                                           ("window=0", "window must be"), ("cover=-1", "cover must be")])
def test_bad_options_are_refused_with_what_to_write(options, says):
    from verify.engines import build_engine
    from verify.errors import ConfigError

    with pytest.raises(ConfigError, match=says):
        build_engine(f"repair:{REF}?{options}")
