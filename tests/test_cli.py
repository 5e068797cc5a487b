"""The command line end to end: exit codes, reports, and one clear line for bad input."""

import gzip
import json
import subprocess
import sys

import pytest

from conftest import REPO, run_cli

PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    name = "tiny-plugin"
    def __init__(self, path, plant):
        self.tok = Tokenizer.from_file(path)
        self.tok.encode_special_tokens = True
        self.plant = plant
    def encode_batch(self, texts):
        out = [e.ids for e in self.tok.encode_batch(texts, add_special_tokens=False)]
        if self.plant:
            out = [ids[:1] + [0] + ids[2:] if "planted" in t and len(ids) > 1 else ids for t, ids in zip(texts, out)]
        return out

def good():
    return Engine(PATH, False)

def planted():
    return Engine(PATH, True)
'''


@pytest.fixture
def plugin(plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "tiny_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    return "tiny_plugin"


@pytest.fixture
def corpus(write_jsonl):
    return write_jsonl([{"id": f"doc{i}", "text": t} for i, t in enumerate(
        ["hello world", "repeated words words", "naïve café 日本語", "this line is planted here", "12345 67"])])


def test_matching_run_exits_zero_and_writes_reports(tmp_path, tiny_spec, plugin, corpus):
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", f"python:{plugin}:good",
                   "--corpus", str(corpus), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["samples"] == manifest["counts"]["verified"] == 5
    assert manifest["candidates"][0]["spec"] == f"python:{plugin}:good"
    assert manifest["reference"]["vocab_sha256"] and manifest["reference"]["fingerprint"]
    assert (out / "divergences.jsonl").read_text() == ""
    assert "PASS" in (out / "summary.md").read_text()


def test_divergent_run_exits_one_with_located_records(tmp_path, tiny_spec, plugin, corpus):
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", f"python:{plugin}:planted",
                   "--corpus", str(corpus), "--out", str(out))
    assert proc.returncode == 1, proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert [r["sample_id"] for r in records] == ["doc3"]
    r = records[0]
    assert r["token_index"] == 1 and r["kind"] == "ids"
    for key in ("schema", "engine", "reference", "byte_offset", "char_offset", "context", "expected", "actual",
                "expected_len", "actual_len", "input"):
        assert key in r
    summary = (out / "summary.md").read_text()
    assert "FAIL" in summary and "doc3" in summary


def test_the_plugin_name_and_counts_reach_the_manifest(tmp_path, tiny_spec, plugin, corpus):
    out = tmp_path / "out"
    run_cli("run", "--reference", tiny_spec, "--candidate", f"python:{plugin}:planted", "--corpus", str(corpus),
            "--out", str(out))
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert (counts["verified"], counts["diverged"], counts["samples"]) == (4, 1, 5)


def _bad_files(tmp_path):
    bad_utf8 = tmp_path / "bad.txt"
    bad_utf8.write_bytes(b"fine\nbad \xff\xfe byte\n")
    corrupt_gz = tmp_path / "corrupt.jsonl.gz"
    corrupt_gz.write_bytes(gzip.compress(b'{"text": "x"}\n')[:-8] + b"garbage!")
    bad_json = tmp_path / "badjson.jsonl"
    bad_json.write_text('{"text": "ok"}\n{"text": oops}\n')
    no_field = tmp_path / "nofield.jsonl"
    no_field.write_text('{"body": "x"}\n')
    corrupt_parquet = tmp_path / "corrupt.parquet"
    corrupt_parquet.write_bytes(b"PAR1 not really parquet")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    return {"bad_utf8": bad_utf8, "corrupt_gz": corrupt_gz, "bad_json": bad_json, "no_field": no_field,
            "corrupt_parquet": corrupt_parquet, "empty": empty}


@pytest.mark.parametrize("case, args, message", [
    ("unknown engine", ["--candidate", "nosuchengine"], "unknown engine 'nosuchengine'"),
    ("unknown adapter", ["--candidate", "nosuch:cl100k_base"], "unknown engine adapter 'nosuch'"),
    ("unknown vocab", ["--candidate", "hf:nosuchvocab"], "unknown vocabulary 'nosuchvocab'"),
    ("missing vocab file", ["--candidate", "hf:/nonexistent/tokenizer.json"], "vocabulary file not found"),
    ("missing plugin", ["--candidate", "python:no_such_module:make"], "cannot import engine module"),
    ("missing corpus", ["--corpus", "/nonexistent/corpus.jsonl"], "corpus not found"),
    ("bad utf8", ["--corpus", "{bad_utf8}", "--strict"], "bad.txt:2: invalid UTF-8"),
    ("corrupt gz", ["--corpus", "{corrupt_gz}", "--strict"], "unreadable"),
    ("bad json", ["--corpus", "{bad_json}", "--strict"], "badjson.jsonl:2: invalid JSON"),
    ("missing field", ["--corpus", "{no_field}", "--strict"], "field 'text' is missing"),
    ("out is a file", ["--out", "{bad_json}"], "is a file, not a directory"),
    ("corrupt parquet", ["--corpus", "{corrupt_parquet}"], "not a readable Parquet file"),
    ("empty corpus", ["--corpus", "{empty}"], "produced no samples"),
    ("bad limit", ["--limit", "0"], "--limit must be at least 1"),
    ("unknown flag", ["--frobnicate"], "unrecognized arguments"),
])
def test_bad_input_is_one_line_and_exit_two(tmp_path, tiny_spec, plugin, corpus, case, args, message):
    files = _bad_files(tmp_path)
    args = [a.format(**files) for a in args]
    base = ["run", "--reference", tiny_spec] + ([] if "--out" in args else ["--out", str(tmp_path / "out")])
    if "--candidate" not in args:
        base += ["--candidate", f"python:{plugin}:good"]
    if "--corpus" not in args:
        base += ["--corpus", str(corpus)]
    proc = run_cli(*base, *args)
    assert proc.returncode == 2, (case, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert message in lines[0], lines[0]


@pytest.mark.parametrize("case, position, reason", [
    ("bad_utf8", "bad.txt:2", "invalid UTF-8"),
    ("corrupt_gz", "corrupt.jsonl.gz:", "file unreadable from here on"),
    ("bad_json", "badjson.jsonl:2", "invalid JSON"),
    ("no_field", "nofield.jsonl:1", "field 'text' is missing"),
])
def test_bad_records_are_findings_and_the_run_goes_on(tmp_path, tiny_spec, plugin, corpus, case, position, reason):
    """On a terabyte corpus one bad record must not cost the night: it is counted, reported with its
    position as a bad-input finding, the other records are verified, and the exit code is 1."""
    files = _bad_files(tmp_path)
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", tiny_spec, "--candidate", f"python:{plugin}:good", "--corpus", str(corpus),
                   "--corpus", str(files[case]), "--out", str(out), "--no-progress")
    assert proc.returncode == 1, proc.stderr
    records = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    (bad,) = [r for r in records if r["kind"] == "bad-input"]
    assert position in bad["sample_id"] and reason in bad["error"]["message"]
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["bad_records"] == 1 and counts["verified"] >= 5
    assert "bad records: 1" in proc.stdout or "1 bad records" in proc.stdout


def test_a_bad_vocabulary_hash_is_refused(tmp_path):
    cache = tmp_path / "cache"
    bad = cache / "vocab" / "cl100k_base" / "cl100k_base.tiktoken"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not the real ranks\n")
    proc = run_cli("run", "--candidate", "hf:cl100k_base", "--reference", "tiktoken:cl100k_base",
                   "--corpus", "smoke", env={"VERIFY_CACHE_DIR": str(cache)})
    assert proc.returncode == 2
    assert "SHA-256" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_engines_lists_adapters_with_install_state():
    proc = run_cli("engines")
    assert proc.returncode == 0
    assert "tiktoken" in proc.stdout and "hf" in proc.stdout and "python" in proc.stdout


def test_vocab_list_shows_hashes_and_sources():
    proc = run_cli("vocab", "list")
    assert proc.returncode == 0
    assert "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7" in proc.stdout
    assert "litellm" in proc.stdout and "mistral-common" in proc.stdout


def test_a_command_imports_its_own_module_and_parses_as_the_whole_parser_does():
    """`verify run` builds its own parser in full and the others' by name: it never imports the
    fuzzer's hypothesis or the gate (a start-up every command pays), and what it accepts and
    refuses is what the whole parser accepts and refuses."""
    probe = ("import sys\nfrom verify.cli import build_parser\n"
             "args = build_parser('run').parse_args(['run', '--corpus', 'smoke', '--limit', '3'])\n"
             "print(args.command, args.limit, 'hypothesis' in sys.modules, 'verify.commands.gate' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert proc.stdout.split() == ["run", "3", "False", "False"]
    from verify.cli import build_parser
    from verify.errors import UsageError

    whole, own = build_parser(), build_parser("run")
    assert whole.parse_args(["run", "--limit", "3"]) == own.parse_args(["run", "--limit", "3"])
    for parser in (whole, own):
        with pytest.raises(UsageError, match="unrecognized arguments: --no-such"):
            parser.parse_args(["run", "--no-such"])
    help_text = subprocess.run([sys.executable, "-m", "verify.cli", "--help"], capture_output=True, text=True,
                               cwd=REPO).stdout
    assert all(name in help_text for name in ("run", "fuzz", "gate", "certify"))  # no command named: all of them
