"""The length sweep finds length faults without being told the numbers.

Planted engines (``verify.engines.planted.length_faults``) are the real reference (tiktoken on
cl100k_base) with ONE length fault at a threshold drawn at random here: chunking at N characters, a tie rule for pieces longer
than N bytes, a rule for whitespace at an N-character cut, a token dropped where two
chunks meet. ``verify length sweep`` must name exactly N + 1 as a first divergent length
(N characters agree), and the minimised reproducer of its finding is a text of exactly
that length."""

from __future__ import annotations

import json
import random

import pytest

from conftest import run_cli
from verify.config import parse_spec


FAMILIES = ["run:U+0061", "run:U+0020", "run:U+0031", "sep:a|U+0020|a"]  # letters, spaces, digits, a separator


PLANTED = "python:verify.engines.planted.length_faults"


@pytest.fixture
def engines():
    return PLANTED


def sweep(tmp_path, fault: str, n: int, families=FAMILIES, max_chars: int = 4_000):
    """The sweep up to ``max_chars`` (above every threshold drawn: a run of one piece costs the
    reference time quadratic in its length)."""
    out = tmp_path / fault
    proc = run_cli("length", "sweep", "--reference", "tiktoken:cl100k_base", "--candidate",
                   f"{PLANTED}:{fault}", *[a for f in families for a in ("--family", f)],
                   "--max-chars", str(max_chars), "--in-process", "--workers", "1", "--no-progress",
                   "--minimize-budget", "30", "--out", str(out), env={"LENGTH_FAULT_N": str(n)})
    assert proc.returncode == 1, proc.stderr
    report = json.loads((out / "length.json").read_text())
    (doc,) = report["candidates"].values()
    return out, doc


def minimized_runs(out, threshold: int) -> list:
    """The run-length form of the minimised reproducers of the first-divergent findings."""
    from verify.run_length import to_runs

    findings = {json.loads(line)["finding_key"]: json.loads(line) for line in
                (out / "divergences.jsonl").read_text().splitlines()}
    forms = []
    for line in (out / "triage.jsonl").read_text().splitlines():
        t = json.loads(line)
        record = findings[t["finding_key"]]
        if record.get("length", {}).get("phase") == "first-divergent" and t.get("minimized"):
            text = "".join(s for s, _ in t["minimized"]["input"])
            forms.append(to_runs(text))
    return forms


def observable(fault: str, n: int, max_chars: int = 4_000) -> list[str]:
    """The families of the test whose text of n + 1 characters the fault changes, and whose text
    at the sweep's first growth point above it too (brute force, in this process): a chunk size
    every family's token period divides is invisible to them, and so is a fault that shows at
    n + 1 but at no growth point after it (a tie rule's halves aligned at 1,031 spaces though not
    at 385): the sweep grows, then bisects below the first growth point that differs. Recall is
    undefined there -- such an n is drawn again."""
    from verify.adversarial.length.families import families_for
    from verify.adversarial.length.search import lengths
    from verify.engines.planted.length_faults import FAULTS, encode

    planted = FAULTS[fault](n)
    grown = min((g for g in lengths(max_chars) if g > n + 1), default=n + 1)

    def differs(f, length):
        return planted.encode_batch([f.text(length)])[0] != encode(f.text(length))

    return [f.name for f in families_for(parse_spec("tiktoken:cl100k_base")) if f.name in FAMILIES
            and differs(f, n + 1) and differs(f, grown)]


@pytest.mark.parametrize("fault", ["chunked", "tie_rule", "whitespace_cut", "dropped_token"])
def test_a_planted_length_fault_is_found_at_its_random_threshold(tmp_path, engines, fault):
    rng = random.Random()
    while True:  # drawn here, the sweep is told nothing; redrawn while no family of the test can show it
        n = rng.randrange(300, 3000)
        showing = observable(fault, n)
        if showing:
            break
    out, doc = sweep(tmp_path, fault, n)
    firsts = {t["length"] for t in doc["thresholds"]}
    assert n + 1 in firsts, (n, showing, doc["thresholds"])
    assert min(firsts) == n + 1  # nothing below the planted threshold
    runs = minimized_runs(out, n + 1)
    assert runs, "the first-divergent finding was minimised"
    # minimised to exactly the threshold: a run of n + 1 characters, or (where only the separator
    # family shows the fault, e.g. a chunk size the letter run's token period divides) its text of
    # n + 1 characters, such as 'a' * 576 + ' ' + 'a' * 576 for n = 1,152
    assert any(sum(count * len(piece) for piece, count in r) == n + 1 for r in runs), (n, runs[:5])


def test_an_engine_without_length_faults_agrees_at_every_length(tmp_path, engines, plugin_dir):
    (plugin_dir / "length_clean.py").write_text(
        "from verify.engines import build_engine\n"
        "from verify.sample import Sample\n"
        "REF = build_engine('tiktoken:cl100k_base')\n"
        "class Clean:\n"
        "    def encode_batch(self, texts):\n"
        "        return REF.encode_batch([Sample.plain('t', t) for t in texts])\n"
        "def make(): return Clean()\n")
    out = tmp_path / "clean"
    proc = run_cli("length", "sweep", "--reference", "tiktoken:cl100k_base", "--candidate", "python:length_clean:make",
                   "--family", "run:U+0061", "--family", "sep:1|U+001C|1", "--max-chars", "50000", "--in-process",
                   "--workers", "1", "--no-progress", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (doc,) = json.loads((out / "length.json").read_text())["candidates"].values()
    from verify.adversarial.length.search import lengths

    longest = lengths(50000)[-1]  # the largest prime up to --max-chars
    assert doc["thresholds"] == [] and all(f["agrees_up_to"] == longest for f in doc["families"].values())
