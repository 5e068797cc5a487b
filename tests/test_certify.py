"""``verify certify``: the atoms of a pattern, a planted fault on a random atom sequence found as
the shortest counterexample, a clean certificate whose numbers add up, ``--check`` naming a
changed identity, bad input in one line."""

from __future__ import annotations

import json
import random

import pytest

from conftest import run_cli
from record_types import run_folder_conforms
from verify.engines.registry import parse_spec

REFERENCE = "tiktoken:cl100k_base"

PLANT = '''
"""A planted certify fault: the real reference (tiktoken on cl100k_base) that returns wrong ids
(one extra token) exactly when the text's atoms contain the sequence ``seq`` contiguously."""
from functools import lru_cache

from verify.adversarial.certify.atoms import alphabet_of
from verify.alphabet import atom_table
from verify.config import parse_spec


@lru_cache(maxsize=1)
def _table():
    return atom_table(alphabet_of(parse_spec("tiktoken:cl100k_base")))


@lru_cache(maxsize=1)
def _encoding():
    from verify.engines import build_engine

    return build_engine("tiktoken:cl100k_base").encoding


def _contains(atoms, seq):
    n = len(seq)
    return any(tuple(atoms[i:i + n]) == seq for i in range(len(atoms) - n + 1))


class Planted:
    name = "certify-plant"
    version = "VERSION"

    def __init__(self, seq):
        self.seq = tuple(int(x) for x in seq.split(".")) if seq else ()

    def encode_batch(self, texts):
        table, enc = _table(), _encoding()
        out = []
        for t in texts:
            ids = list(enc.encode_ordinary(t))
            if self.seq and _contains([int(table[ord(c)]) for c in t], self.seq):
                ids.append(0)
            out.append(ids)
        return out


def planted(seq=""):
    return Planted(seq)
'''


@pytest.fixture
def plant(plugin_dir):
    def write(version: str = "1") -> str:
        (plugin_dir / "certify_plant.py").write_text(PLANT.replace("VERSION", version))
        return "python:certify_plant:planted"
    return write


def certify(out, *args, candidate="hf:cl100k_base"):
    return run_cli("certify", "--reference", REFERENCE, "--candidate", candidate, "--in-process", "--workers", "1",
                   "--no-progress", "--minimize-budget", "0", "--out", str(out), *args)


def test_the_atoms_of_cl100k_separate_what_its_pattern_tells_apart():
    from verify.adversarial.certify.atoms import alphabet_of
    from verify.alphabet import EXCLUDED, MAX_CODE_POINT, _alphabet, atom_table

    alpha = alphabet_of(parse_spec(REFERENCE))
    table = atom_table(alpha)
    at = {c: int(table[ord(c)]) for c in "abzAZ05 \t\n\r'sStTdlLeErRv.!é中😀"}
    # letters, digits, whitespace, newlines, the space, the apostrophe: each its own atom
    apart = ["a", "0", "\t", "\n", " ", "'", "s", "l", "e", "r", ".", "é", "中", "😀"]
    assert len({at[c] for c in apart}) == len(apart), at
    assert at["r"] == at["v"] == at["R"]  # 're / 've: the pattern swaps them, one atom
    # the punctuation of the special-token literals (<|endoftext|>) is an atom of its own
    delimiters = {int(table[ord(c)]) for c in "<|>"}
    assert len(delimiters) == 1 and delimiters.isdisjoint({at["."], at["!"]})
    assert at["a"] == at["b"] == at["z"] == at["A"] == at["Z"]  # letters alike (no contraction letter)
    assert at["s"] == at["S"] == at["t"] == at["T"] == at["d"]  # '(?i:[sdmt]...) folds case
    assert at["l"] == at["L"] and at["e"] == at["E"] and at["0"] == at["5"] and at["\n"] == at["\r"]
    assert at["."] == at["!"]
    # every code point but the surrogates in exactly one atom
    valid = (table >= 0)
    assert valid.sum() == MAX_CODE_POINT + 1 - (EXCLUDED[1] - EXCLUDED[0] + 1)
    assert not valid[EXCLUDED[0]:EXCLUDED[1] + 1].any()
    assert sum(a.size for a in alpha.atoms) == int(valid.sum())
    for a in alpha.atoms:
        assert all(table[c] == a.index for c in a.representatives)
        assert all(len(chr(c).encode()) == a.utf8 for c in a.representatives)
    # deterministic: derived again from scratch, the same alphabet
    _alphabet.cache_clear()
    again = alphabet_of(parse_spec(REFERENCE))
    assert again.digest == alpha.digest and again.atoms == alpha.atoms


@pytest.mark.parametrize("reference", ["tiktoken:cl100k_base", "tiktoken:o200k_base", "tiktoken:p50k_base"])
def test_merged_alternatives_split_every_text_as_the_pattern_does(reference):
    """The letters merged into one class (``'re``/``'ve`` as ``'[rv]e``) must change no split:
    the rewritten pattern and the reference's split random texts over the letters of the
    contractions, apostrophes and spaces into the same pieces."""
    import regex

    from verify.adversarial.certify.atoms import patterns_of
    from verify.alphabet import merge_alternatives

    (pattern,) = patterns_of(parse_spec(reference))
    merged = merge_alternatives(pattern)
    assert merged != pattern and "[rv]" in merged
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    alphabet = "'sdmtlverSDMTLVERxX \n"
    original, rewritten = regex.compile(pattern), regex.compile(merged)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 9)))
        assert original.findall(text) == rewritten.findall(text), (seed, text)


def test_explain_prints_the_atoms():
    proc = run_cli("certify", "--reference", REFERENCE, "--explain")
    assert proc.returncode == 0, proc.stderr
    assert "24 atoms" in proc.stdout.splitlines()[0] and "U+0027" in proc.stdout


@pytest.mark.parametrize("length", [3, 4])
def test_a_planted_wrong_split_on_a_random_atom_sequence_is_the_shortest_counterexample(tmp_path, length):
    """The real reference with one wrong split rule (``verify.adversarial.certify.planted``: a text
    whose atoms contain the drawn sequence is cut inside it), the sequence drawn at random until the
    cut shows on its own strings (a cut where the reference cuts anyway is not observable)."""
    from verify.adversarial.certify.atoms import alphabet_of
    from verify.adversarial.certify.planted import observable

    seed = random.Random().randrange(2**32)
    rng = random.Random(seed)
    atoms = len(alphabet_of(parse_spec(REFERENCE)))
    for _ in range(500):
        seq = [rng.randrange(atoms) for _ in range(length)]
        if observable(REFERENCE, tuple(seq), 1):
            break
    else:
        pytest.fail(f"seed {seed}: no observable sequence of {length} atoms in 500 draws")
    why = f"seed {seed}, planted atom sequence {seq}"
    spec = "python:verify.adversarial.certify.planted:planted?seq=" + ".".join(map(str, seq))
    proc = certify(tmp_path / "out", "--k", str(length), "--reps", "1", candidate=spec)
    assert proc.returncode == 1, (why, proc.stderr)
    doc = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert doc["verdict"] == "differ", why
    assert doc["counterexamples"], why
    first = doc["counterexamples"][0]
    assert first["atoms"] == seq and first["length"] == length, (why, first)
    assert len(doc["counterexamples"]) == 1, (why, doc["counterexamples"][:3])  # longer ones are subsumed
    assert doc["differing_strings"][spec] >= 1
    assert "NOT equal" in doc["statement"] and repr(first["text"]) in doc["statement"]
    run_folder_conforms(tmp_path / "out")


def test_a_clean_certificate_adds_up(tmp_path):
    out = tmp_path / "clean"
    proc = certify(out, "--k", "2")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "certificate.json").read_text())
    assert doc["schema"] == "verify.certificate/1" and doc["verdict"] == "equal" and not doc["counterexamples"]
    run_folder_conforms(out)
    atoms, per = doc["alphabet"]["atoms"], doc["strings"]["per_length"]
    assert atoms == len(doc["alphabet"]["list"]) == 24
    assert [per[str(n)]["atom_strings"] for n in (1, 2)] == [atoms, atoms ** 2]
    assert doc["strings"]["total"] == sum(v["strings"] for v in per.values()) == doc["strings"]["compared"]
    assert all(v["strings"] == v["compared"] for v in per.values())
    assert doc["counts"]["verified"] == doc["strings"]["total"]
    assert doc["reference"]["spec"] == REFERENCE and doc["reference"]["vocab_sha256"]
    assert doc["candidates"][0]["package"] == "tokenizers"
    assert all(p["status"] == "not run" for p in doc["premises"].values())
    assert f"{doc['strings']['total']:,} strings" in doc["statement"] and "identical ids" in doc["statement"]
    assert doc["statement"] in (out / "summary.md").read_text().replace("\\", "")


def test_check_names_the_identity_that_changed(tmp_path, plant):
    spec = plant("1")
    out = tmp_path / "cert"
    assert certify(out, "--k", "1", candidate=spec).returncode == 0
    cert = out / "certificate.json"
    same = run_cli("certify", "--check", str(cert), "--in-process", "--out", str(tmp_path / "again"))
    assert same.returncode == 0, same.stderr
    assert "same engines" in same.stdout and "equal" in same.stdout
    plant("2")  # another version of the candidate
    changed = run_cli("certify", "--check", str(cert), "--in-process")
    assert changed.returncode == 1, changed.stderr
    assert "identity field 'version' was '1', is '2'" in changed.stderr and spec in changed.stderr


@pytest.mark.parametrize("args", [
    ["--reference", "tiktoken:no_such_vocab", "--candidate", "hf:cl100k_base", "--k", "1"],
    ["--reference", REFERENCE, "--candidate", "hf:cl100k_base", "--k", "0"],
    ["--reference", REFERENCE, "--candidate", "hf:cl100k_base", "--k", "99"],
    ["--reference", REFERENCE, "--candidate", "hf:cl100k_base", "--reps", "7"],
    ["--reference", REFERENCE, "--candidate", "hf:cl100k_base", "--k", "2", "--budget", "10"],
    ["--check", "/no/such/certificate.json"],
    ["--check", "LIST"],  # a JSON array where a certificate should be
    ["--reference", REFERENCE, "--candidate", "hf:cl100k_base", "--k", "1", "--premise", "LISTDIR"],
])
def test_bad_input_is_one_line_exit_2(tmp_path, args):
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / "manifest.json").write_text("[1, 2]")
    args = [str(tmp_path / "list" / "manifest.json") if a == "LIST" else str(tmp_path / "list") if a == "LISTDIR"
            else a for a in args]
    proc = run_cli("certify", *args, "--out", str(tmp_path / "bad"))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_a_gate_certificate_check_fails_on_the_planted_sequence_and_passes_a_clean_candidate(tmp_path, plant):
    """The gate's ``certificate`` kind: its verdict comes from k alone; a counterexample fails it."""
    from verify.cli import main

    spec = plant()
    rng = random.Random()
    seq = tuple(rng.randrange(24) for _ in range(2))
    suite = tmp_path / "suite.toml"
    for name, candidate, want in (("clean", "hf:cl100k_base", 0), ("planted", f"{spec}?seq={'.'.join(map(str, seq))}", 1)):
        suite.write_text(f'''[gate]
name = "{name}"
reference = "{REFERENCE}"
candidates = ["{candidate}"]
in_process = true
workers = 1
minimize_budget = 0

[[check]]
name = "exhaustive"
kind = "certificate"
k = 2
reps = 1
''')
        code = main(["gate", str(suite), "--out", str(tmp_path / name)])
        doc = json.loads((tmp_path / name / "gate.json").read_text())
        (check,) = doc["checks"]
        assert code == want and check["status"] == ("pass" if want == 0 else "fail"), (seq, doc["reasons"])
        cert = json.loads((tmp_path / name / "checks" / "exhaustive" / "certificate.json").read_text())
        assert cert["verdict"] == ("equal" if want == 0 else "differ") and cert["k"] == 2


def test_a_normalizer_and_special_literals_refine_the_atoms():
    """What changes ids besides the pattern: a character NFKC changes (the ligature ``ﬁ``) is not
    in the atom of a letter it does not change of the same UTF-8 length (``中``), and the
    delimiters of a special-token literal leave the atom of the other punctuation."""
    from verify.alphabet import alphabet, atom_table, refinements

    plain = atom_table(alphabet([r"\p{L}+|[^\s\p{L}]+|\s+"]))
    refined = atom_table(alphabet([r"\p{L}+|[^\s\p{L}]+|\s+"], None, refinements(("<|x|>",), "NFKC")))
    assert plain[ord("ﬁ")] == plain[ord("中")] and plain[ord("<")] == plain[ord(".")]
    assert refined[ord("ﬁ")] != refined[ord("中")] and refined[ord("<")] == refined[ord("|")] != refined[ord(".")]


@pytest.mark.parametrize("reference, candidate, known", [
    # kitoken 0.11.1: a newline before a contraction ("\n's"; 't is the same atoms)
    ("tiktoken:p50k_base", "kitoken:p50k_base", ["\n's"]),
    # tokie 0.1.4's scanner: a tab before punctuation and a letter, before a contraction, spaces before \x0c
    ("tiktoken:cl100k_base", "tokie:cl100k_base", ["\t(a", "\t's", "  \x0c"]),
])
def test_real_scanner_bugs_are_counterexamples_at_the_pr_profiles_k(tmp_path, reference, candidate, known):
    """The PR profile's certificate (k = 3, ``verify.gate.budget.CERTIFY_MIN_K``) meets the real
    engines' known scanner bugs: each known input's atom string is a minimal counterexample (with
    these or other representatives), and the findings are triaged into clusters by cause."""
    from verify.adversarial.certify.atoms import alphabet_of
    from verify.alphabet import atom_table
    from verify.gate.budget import CERTIFY_MIN_K

    pytest.importorskip(candidate.split(":")[0])
    out = tmp_path / "out"
    proc = run_cli("certify", "--reference", reference, "--candidate", candidate, "--k", str(CERTIFY_MIN_K),
                   "--workers", "1", "--no-progress", "--minimize-budget", "20", "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((out / "certificate.json").read_text())
    table = atom_table(alphabet_of(parse_spec(reference)))
    found = {tuple(c["atoms"]) for c in doc["counterexamples"]}
    for text in known:
        assert tuple(int(table[ord(c)]) for c in text) in found, (text, sorted(found))
    clusters = json.loads((out / "clusters.json").read_text())["clusters"]
    assert clusters and len(clusters) < len(doc["counterexamples"]) or len(doc["counterexamples"]) == 1


def test_premises_run_by_certify_are_recorded_with_their_verdicts(tmp_path):
    """``--sweeps``: the Unicode, vocabulary and length sweeps of the same engines run into
    OUT/premises/ and the certificate records each with its verdict and counts (cut short here)."""
    from verify.executors.pool import EngineOptions
    from verify.jobs.certify import certify_job, run_premises
    from verify.pipeline.hunt import JobOptions

    out = tmp_path / "out"
    job = JobOptions(out=out, engine=EngineOptions(isolate=False), workers=1, progress=False, minimize_budget_s=0.0)
    premises = run_premises(REFERENCE, ["hf:cl100k_base"], job, max_chars=2000, unicode_stop=0x300, vocab_limit=300)
    assert set(premises) == {"unicode", "vocab-sweep", "length"}
    for name, premise in premises.items():
        assert premise["status"] == "run" and premise["out"] == f"premises/{name}", premise
        assert premise["verdict"] == "equal" and premise["samples"] > 0 and premise["verified"] == premise["samples"]
        assert (out / "premises" / name / "manifest.json").is_file()
    doc = certify_job(REFERENCE, ["hf:cl100k_base"], job, k=1, premises=premises).certificate
    assert doc["verdict"] == "equal" and doc["premises"] == premises
    assert ("premises the code points U+0000..U+02FF in their contexts (Unicode sweep): equal, the first 300 "
            "vocabulary tokens and their pairs (vocab sweep): equal, every length family to 2,000 characters "
            "(length sweep): equal") in doc["statement"]
    proc = run_cli("certify", "--reference", REFERENCE, "--candidate", "hf:cl100k_base", "--max-chars", "100",
                   "--out", str(tmp_path / "x"))
    assert proc.returncode == 2 and "--sweeps" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
