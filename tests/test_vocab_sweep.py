"""`verify vocab sweep`: every token of the reference's vocabulary as text, through the
reference and each candidate. A faithful second implementation reports nothing; an
engine that mis-handles one special token, or that looks one vocabulary entry up across
a pre-token split, is found and named."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from verify.engines.registry import parse_spec
from verify.adversarial.vocab.sweep import (FOLLOWERS, SweepPlan, near_misses, pair_ids, pair_samples,
                                            special_samples, token_contexts, token_samples)
from verify.adversarial.vocab.texts import token_texts, utf8_needs, vocabulary_of
from verify.engines import build_engine
from verify.findings import read_findings

# Plugin engines around the tiny tokenizer: faithful, or broken in one planted way.
# Plain-text plugin engines around the tiny tokenizer, faithful or broken in one planted way.
# They declare no special-token support, so samples with an allow_special segment are
# skipped for them (counted, never agreed); every plain sample is compared.
PLUGIN = '''
from tokenizers import Tokenizer

PATH = {path!r}
LEAKED = {leaked!r}  # (text, id): this special token's literal text becomes its id in plain text
MERGED = {merged!r}  # (entry id, {{(x, y), ...}}): consecutive ids x, y become the entry


class Faithful:
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
        self.tok.encode_special_tokens = True  # plain text: special tokens' text is ordinary text

    def encode(self, text):
        return list(self.tok.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts):
        return [self.encode(t) for t in texts]


class LeaksSpecial(Faithful):
    def encode(self, text):
        token, special_id = LEAKED
        out = []
        for n, piece in enumerate(text.split(token)):
            out += ([special_id] if n else []) + (super().encode(piece) if piece else [])
        return out


class MergesAcross(Faithful):
    def encode(self, text):
        entry, pairs = MERGED
        ids, out = super().encode(text), []
        while ids:
            if len(ids) > 1 and (ids[0], ids[1]) in pairs:
                out.append(entry)
                ids = ids[2:]
            else:
                out.append(ids.pop(0))
        return out


def faithful():
    return Faithful()


def leaks_special():
    return LeaksSpecial()


def merges_across():
    return MergesAcross()
'''


@pytest.fixture
def plugins(plugin_dir, tiny_tokenizer_json):
    def write(leaked=("<|endoftext|>", 0), merged=(0, [])) -> None:
        merged = (merged[0], {tuple(p) for p in merged[1]})
        (plugin_dir / "vocab_planted.py").write_text(PLUGIN.format(path=str(tiny_tokenizer_json), leaked=leaked,
                                                                   merged=merged))
    return write


def sweep(out, reference, candidate, *extra):
    return run_cli("vocab", "sweep", "--reference", reference, "--candidate", candidate, "--out", str(out),
                   "--no-progress", *extra)


def findings(out) -> list[dict]:
    return list(read_findings(out / "divergences.jsonl"))


# --- the pieces -----------------------------------------------------------------------------

def test_tokens_that_are_not_utf8_alone_are_joined_with_neighbours():
    tokens = {0: b"a", 1: b"\xe6\x97", 2: b"\xa5", 3: b"\xff", 4: b"\x80\x80\x80\x80", 5: b"\xf0\x9f", 6: b"x\xe0"}
    texts = token_texts(tokens)
    assert texts[0].text == "a" and not texts[0].joined
    assert texts[1].text == "日" and texts[1].joined == "before 2"  # completed by its id-order neighbour
    assert texts[2].text == "日" and texts[2].joined == "after 1"
    assert texts[3] is None and texts[4] is None  # no UTF-8 text contains these bytes
    assert "\U0001f000" <= texts[5].text[0] and texts[5].text.encode().startswith(b"\xf0\x9f")
    assert texts[6].text.encode().startswith(b"x\xe0") and texts[6].joined
    for i, tt in texts.items():
        if tt is not None:
            assert tokens[i] in tt.text.encode()
    assert utf8_needs(b"\x80\x81") == (2, 0) and utf8_needs(b"ab\xe6") == (0, 2) and utf8_needs(b"\xc0") is None


def test_near_misses_of_a_special_token():
    variants = dict(near_misses("<|endoftext|>"))
    assert variants["exact"] == "<|endoftext|>" and variants["doubled"] == "<|endoftext|>" * 2
    assert variants["truncated-end"] == "<|endoftext|" and variants["truncated-start"] == "|endoftext|>"
    assert variants["changed"] != "<|endoftext|>" and len(variants["changed"]) == len("<|endoftext|>")
    assert variants["spaced"] == " <|endoftext|> " and variants["newlines"] == "\n<|endoftext|>\n"


def test_the_plan_covers_every_token_in_every_context(tiny_spec):
    vocab = vocabulary_of(parse_spec(tiny_spec))
    assert vocab.size == 400 and set(vocab.added) == {"<|endoftext|>", "<|sep|>"} and len(vocab.tokens) == 398
    plan = SweepPlan.build(vocab, seed=3)
    n_templates = len(plan.templates())
    assert n_templates == len(token_contexts(vocab.vocab_name))  # "alone" is one of the contexts
    assert {"digit-before", "spaces-before"} <= {name for name, _ in plan.templates()}  # from its GPT-2 pattern
    assert len(plan.texts) + len(plan.unreachable) == 398 and len(plan.unreachable) == 13  # C0 C1 F5..FF
    assert sum(1 for _ in token_samples(plan)) == len(plan.texts) * n_templates
    pairs = pair_ids(plan)
    assert pairs == pair_ids(SweepPlan.build(vocab, seed=3)) != pair_ids(SweepPlan.build(vocab, seed=4))
    assert len(pairs) == len(set(pairs)) <= len(plan.texts) * (plan.pairs + max(map(len, FOLLOWERS.values())))
    first = next(pair_samples(plan))
    a, b = map(int, first.id.removeprefix("pair:").split("+"))
    assert first.text == plan.texts[a].text + plan.texts[b].text
    special = list(special_samples(plan))
    assert any(s.id == "special:0/exact/allow" and s.segments[0].allow_special for s in special)
    assert any(s.id == "special:0/exact/plain" and not s.segments[0].allow_special for s in special)
    limited = SweepPlan.build(vocab, limit=50)
    assert len(limited.texts) + len(limited.unreachable) == 50 and max(limited.texts) < 52


# --- end to end ---------------------------------------------------------------------------------

def test_a_faithful_second_implementation_has_no_findings(tmp_path, tiny_spec, plugins):
    plugins()
    out = tmp_path / "out"
    proc = sweep(out, tiny_spec, "python:vocab_planted:faithful", "--part", "tokens", "--part", "pairs")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert findings(out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    counts = manifest["counts"]
    assert counts["samples"] == counts["verified"] > 0
    vocab, tokens, pairs = manifest["sources"]
    assert vocab["size"] == 400 and vocab["token_texts"] == 385 and vocab["joined_with_neighbours"] > 0
    assert vocab["unreachable"] == 13 and vocab["added"] == 2
    assert tokens["samples"] == 385 * len(token_contexts(vocabulary_of(parse_spec(tiny_spec)).vocab_name))
    assert pairs["pairs"] > 385 and pairs["split_at_join"] > 0
    assert counts["samples"] == tokens["samples"] + pairs["samples"]
    assert manifest["complete"] and [c["spec"] for c in manifest["candidates"]] == ["python:vocab_planted:faithful"]


def test_samples_a_plain_text_engine_cannot_take_are_skipped_not_agreed(tmp_path, tiny_spec, plugins):
    plugins()
    out = tmp_path / "out"
    proc = sweep(out, tiny_spec, "python:vocab_planted:faithful", "--part", "special", "--in-process")
    assert proc.returncode == 1, proc.stderr + proc.stdout  # skipped samples were not verified
    assert findings(out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    counts, (_, special) = manifest["counts"], manifest["sources"]
    assert special["added_tokens"] == 2 and counts["samples"] == special["samples"] > 2 * 2 * 10
    assert counts["skipped"] > 0 and counts["skipped"] + counts["verified"] == counts["samples"]


def test_a_special_token_leaked_into_plain_text_is_found_and_named(tmp_path, tiny_spec, plugins):
    plugins(leaked=("<|endoftext|>", 0))
    out = tmp_path / "out"
    proc = sweep(out, tiny_spec, "python:vocab_planted:leaks_special", "--in-process")
    assert proc.returncode == 1, proc.stderr + proc.stdout
    found = findings(out)
    assert found and all(f["engine"] == "python:vocab_planted:leaks_special" for f in found)
    assert all("<|endoftext|>" in "".join(t for t, _ in f["input"]) for f in found)
    assert {f["source"] for f in found} == {"vocab-sweep/special"}
    ids = {f["sample_id"] for f in found}
    assert ids >= {"special:0/exact/plain", "special:0/spaced/plain", "special:0/doubled/plain", "special:0+1/plain"}
    assert all(i.startswith("special:0") and not i.endswith("/allow") for i in ids)  # <|sep|> is handled right
    exact = next(f for f in found if f["sample_id"] == "special:0/exact/plain")
    assert exact["actual"]["ids"] == [0] and exact["expected"]["ids"] != [0]
    assert exact["expected"]["pieces"][:2] == ["<", "|"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["triage"]["records"] == len(found) and (out / "triage.jsonl").is_file()
    assert manifest["vocab_sweep"]["special"]["findings"] == len(found)
    assert manifest["vocab_sweep"]["tokens"]["findings"] == manifest["vocab_sweep"]["pairs"]["findings"] == 0


def _is_text(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _straddling_entry(spec: str):
    """A vocabulary entry whose bytes the reference itself emits as two ids across a split,
    in one of the sweep's pair samples: (entry id, the (x, y) id pairs that join to it)."""
    vocab = vocabulary_of(parse_spec(spec))
    engine = build_engine(spec)
    by_bytes = {b: i for i, b in vocab.tokens.items()}
    plan = SweepPlan.build(vocab)
    samples = list(pair_samples(plan))
    for sample, ids in zip(samples, engine.encode_batch(samples)):
        pieces = engine.token_bytes(ids)
        for k in range(len(ids) - 1):
            entry = by_bytes.get(pieces[k] + pieces[k + 1])
            if entry is not None and _is_text(pieces[k]) and _is_text(pieces[k + 1]):  # whole characters apart
                joined = vocab.tokens[entry]
                splits = [(by_bytes[joined[:n]], by_bytes[joined[n:]]) for n in range(1, len(joined))
                          if joined[:n] in by_bytes and joined[n:] in by_bytes]
                return entry, splits
    pytest.fail("no pair sample splits a vocabulary entry")


def test_a_lookup_across_a_pre_token_split_is_found_by_the_pairs(tmp_path, tiny_spec, plugins):
    entry, splits = _straddling_entry(tiny_spec)
    plugins(merged=(entry, splits))
    out = tmp_path / "out"
    proc = sweep(out, tiny_spec, "python:vocab_planted:merges_across", "--in-process", "--minimize-budget", "0")
    assert proc.returncode == 1, proc.stderr + proc.stdout
    pairs = [f for f in findings(out) if f["source"] == "vocab-sweep/pairs"]
    assert pairs, proc.stdout
    for f in pairs:
        assert f["kind"] == "ids" and f["sample_id"].startswith("pair:")
        at = f["token_index"] - f["actual"]["start"]
        assert f["actual"]["ids"][at] == entry and f["expected"]["ids"][at:at + 2] in map(list, splits)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["vocab_sweep"]["pairs"]["findings"] == len(pairs)
    assert not (out / "triage.jsonl").exists()  # --minimize-budget 0


def test_usage_errors_exit_2(tmp_path, tiny_spec):
    for extra in (["--limit", "0"], ["--pairs", "-1"], ["--minimize-budget", "-1"], ["--part", "nope"]):
        proc = sweep(tmp_path / "out", tiny_spec, "hf:nowhere.json", *extra)
        assert proc.returncode == 2, (extra, proc.stderr)
    proc = sweep(tmp_path / "out", tiny_spec, tiny_spec)
    assert proc.returncode == 2 and "is the reference" in proc.stderr


# --- the real cl100k vocabulary ---------------------------------------------------------------

@pytest.mark.slow
def test_cl100k_vocabulary_is_read_whole():
    vocab = vocabulary_of(parse_spec("tiktoken:cl100k_base"))
    assert vocab.size == 100277 and len(vocab.tokens) == 100256
    assert vocab.added["<|endoftext|>"] == 100257 and len(vocab.special) == 5
    plan = SweepPlan.build(vocab)
    assert len(plan.unreachable) == 13 and len(plan.texts) == 100256 - 13
    assert all(vocab.tokens[i] in tt.text.encode() for i, tt in plan.texts.items())


@pytest.mark.slow
def test_tiktoken_and_hf_cl100k_agree_on_the_vocabulary(tmp_path):
    """The first 25,000 ids in every context, their pairs, and every special token with its near
    misses (the whole vocabulary: `verify vocab sweep --reference tiktoken:cl100k_base
    --candidate hf:cl100k_base`, 1.8 M samples, 0 findings, about a minute in-process)."""
    out = tmp_path / "out"
    proc = sweep(out, "tiktoken:cl100k_base", "hf:cl100k_base", "--in-process", "--limit", "25000")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert findings(out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["verified"] == manifest["counts"]["samples"] > 400_000
    assert manifest["vocab_sweep"]["pairs"]["split_at_join"] > 0


TIKTOKEN_LEAK = '''
from verify.engines import build_engine


class LeaksEndOfText:
    # cl100k for plain text, except that <|endoftext|> becomes its special id
    def __init__(self):
        self.encoding = build_engine("tiktoken:cl100k_base").encoding

    def encode_batch(self, texts):
        out = []
        for text in texts:
            ids = []
            for n, piece in enumerate(text.split("<|endoftext|>")):
                ids += ([100257] if n else []) + self.encoding.encode_ordinary(piece)
            out.append(ids)
        return out
'''


@pytest.mark.slow
def test_cl100k_special_token_leak_is_named(tmp_path, plugin_dir):
    (plugin_dir / "cl100k_leak.py").write_text(TIKTOKEN_LEAK)
    out = tmp_path / "out"
    proc = sweep(out, "tiktoken:cl100k_base", "python:cl100k_leak:LeaksEndOfText", "--part", "special",
                 "--minimize-budget", "0")
    assert proc.returncode == 1, proc.stderr + proc.stdout
    ids = {f["sample_id"] for f in findings(out)}
    assert "special:100257/exact/plain" in ids and "special:100257/newlines/plain" in ids
    assert all(i.startswith(("special:100257/", "special:100257+")) and i.endswith("plain") for i in ids)
    special = json.loads((out / "manifest.json").read_text())["sources"][-1]
    assert special["added_tokens"] == special["special_tokens"] == 5
