"""``maturin:`` engines: a crate built from its source, pinned by source digest, with native
coverage for the fuzzer (docs/maturin.md).

The fixture crate (tests/fixtures/rust-bpe) is a byte-level BPE over a vocabulary built here;
each cargo feature plants one bug, and each is found, and minimised, by the command that should
find it. The slow tests build it offline against Debian's PyO3 (``librust-pyo3-dev``, a
CARGO_HOME of their own); the builds go to one cache per test run, shared by the xdist workers,
so each feature set is built once (file locks make the second worker wait for the first).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from verify.engines.registry import parse_spec
from verify.errors import ConfigError

FIXTURE = REPO / "tests" / "fixtures" / "rust-bpe"
REFERENCE_DIR = FIXTURE / "reference"
DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")
CARGO_CONFIG = f"""[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "{DEBIAN_REGISTRY}"
[net]
offline = true
"""
REFERENCE = "python:rust_bpe_reference:reference"

sys.path.insert(0, str(REFERENCE_DIR))
import rust_bpe_reference  # noqa: E402


# --- fixtures ----------------------------------------------------------------------------------

def _missing() -> str | None:
    from verify.engines.maturin_build import find_tool

    if find_tool("cargo") is None or find_tool("rustc") is None:
        return "no Rust toolchain (cargo, rustc)"
    rustc = subprocess.run([find_tool("rustc"), "-vV"], capture_output=True, text=True)
    if rustc.returncode != 0:  # rustup without a toolchain for this HOME, say
        return f"rustc does not run here: {(rustc.stderr.strip().splitlines() or ['?'])[0]}"
    if find_tool("maturin") is None:
        return "maturin is not installed (pip install -e '.[test]')"
    if not list(DEBIAN_REGISTRY.glob("pyo3-0.17*")):
        return "Debian's PyO3 is not installed (apt-get install librust-pyo3-dev)"
    return None


@pytest.fixture(scope="session")
def rust(tmp_path_factory):
    """The environment of every build: CARGO_HOME with the offline Debian source, the build cache
    (one per test run, shared by xdist workers), the vocabulary, the reference on PYTHONPATH."""
    why = _missing()
    if why:
        if os.environ.get("CI") and ("PyO3" in why or "maturin" in why):
            pytest.fail(f"CI must build the fixture crate: {why} (.ci/run installs it)")
        pytest.skip(why)
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "maturin-shared"
    shared.mkdir(exist_ok=True)
    cargo_home = shared / "cargo-home"
    cargo_home.mkdir(exist_ok=True)
    from verify.atomic import write_text

    write_text(cargo_home / "config.toml", CARGO_CONFIG)
    vocab = shared / "vocab.hex"
    if not vocab.is_file():  # every worker writes the same text; the rename makes it whole or absent
        tmp = rust_bpe_reference.write_vocabulary(tmp_path_factory.mktemp("vocab") / "vocab.hex")
        os.replace(tmp, vocab)
    env = {"CARGO_HOME": str(cargo_home), "VERIFY_MATURIN_CACHE": str(shared / "cache"),
           "RUST_BPE_VOCAB": str(vocab),
           "PYTHONPATH": os.pathsep.join([str(REFERENCE_DIR), os.environ.get("PYTHONPATH", "")])}
    return {"env": env, "vocab": vocab, "cache": shared / "cache"}


@pytest.fixture
def rust_env(rust, monkeypatch):
    """``rust``'s environment in this process too (builds and engines built by the test itself)."""
    for key, value in rust["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(REFERENCE_DIR))
    return rust


def crate(rust, path: Path = FIXTURE, **options) -> str:
    query = "&".join([*(f"{k}={v}" for k, v in options.items()), f"target={rust['vocab']}"])
    return f"maturin:{path}?{query}"


def cli(rust, *args):
    return run_cli(*args, env=rust["env"])


def triage(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "triage.jsonl").read_text().splitlines() if line.strip()]


def minimized(out: Path) -> set[str]:
    return {"".join(s[0] for s in t["minimized"]["input"]) for t in triage(out) if t.get("minimized")}


def inputs_corpus(tmp_path: Path) -> Path:
    """Plain text only (the plugin protocol has no special tokens: a special-token sample would be
    skipped, and a run with a skipped sample is not all verified): the smoke corpus's plain
    samples and a few long runs, tabs and control whitespace."""
    from verify.corpora.sources import open_corpus

    lines = ["the quick tokenizer splits words, numbers 12345", "tabs\tand\ttabs\t\t", "a" * 3000, " " * 700,
             "naïve café 日本語 русский 😀 " * 40, "  leading and trailing  ", "", "x\x0by\x0cz\r\n"]
    records = [{"id": f"in{i}", "text": t} for i, t in enumerate(lines)]
    records += [{"id": s.id, "text": s.segments[0].text} for s in open_corpus("smoke").samples()
                if len(s.segments) == 1 and not s.segments[0].allow_special]
    path = tmp_path / "inputs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# --- without a toolchain: options, sources, digest, coverage specs, libFuzzer's log -------------

def test_options_are_checked_in_one_line():
    from verify.engines.maturin_engine import build_request

    assert build_request("s", {"features": "b, a,a", "profile": "dev"}).features == ("a", "b")
    assert build_request("s", {"coverage": 1}).coverage and not build_request("s", {}).coverage
    for bad, word in [({"feature": "a"}, "unknown option"), ({"features": "a;rm"}, "not a cargo feature"),
                      ({"profile": "../x"}, "profile"), ({"coverage": "maybe"}, "coverage=")]:
        with pytest.raises(ConfigError, match=word) as info:
            build_request("maturin:x", bad)
        assert "\n" not in str(info.value)


def test_path_at_revision_splits_at_the_last_at(tmp_path):
    from verify.engines.maturin_source import split_target

    assert split_target("crates/tok@v1.4.0") == ("crates/tok", "v1.4.0")
    assert split_target(".@origin/feature/x") == (".", "origin/feature/x")
    assert split_target("crates/tok") == ("crates/tok", None)
    odd = tmp_path / "name@with-at"
    odd.mkdir()
    assert split_target(str(odd)) == (str(odd), None)  # a folder that exists as written


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}).stdout.strip()


def test_sources_are_what_git_would_build_and_the_digest_follows_their_content(tmp_path):
    from verify.engines.maturin_source import digest_files, locate, source_files

    root = tmp_path / "tok"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("target", "__pycache__"))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "v1")
    (root / "src" / "new.rs").write_text("// not yet added: cargo builds it all the same\n")
    (root / "target").mkdir()
    (root / "target" / "junk.o").write_text("build output")
    (root / "Cargo.lock").write_text("# generated\n")
    (root / "notes.log").write_text("ignored below")
    (root / ".gitignore").write_text("target/\n*.log\nCargo.lock\n")
    names = source_files(root)
    assert "src/new.rs" in names and "src/lib.rs" in names and "Cargo.lock" in names  # lock: always
    assert not any(n.startswith("target/") for n in names) and "notes.log" not in names
    before = digest_files(root, names)
    assert digest_files(root, names) == before
    (root / "src" / "new.rs").write_text("// changed\n")
    assert digest_files(root, names) != before
    walked = source_files(root, use_git=False)  # a tree without git: every file but target/ and .git/
    assert "notes.log" in walked and not any(n.startswith(("target/", ".git/")) for n in walked)

    source = locate(f"{root}@HEAD", None)
    assert source.commit == _git(root, "rev-parse", "HEAD") and source.rev == "HEAD" and not source.dirty
    assert locate(str(root), None).dirty  # new.rs and .gitignore are not committed
    with pytest.raises(ConfigError, match="not a revision"):
        locate(f"{root}@no-such-tag", None)
    with pytest.raises(ConfigError, match="neither Cargo.toml nor pyproject.toml"):
        locate(str(tmp_path), None)


def test_the_module_name_comes_from_pyproject_then_cargo(tmp_path):
    from verify.engines.maturin_engine import module_name

    assert module_name(FIXTURE) == "rust_bpe"
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "my-tok"\nversion = "1.0.0"\n')
    assert module_name(tmp_path) == "my_tok"


def test_which_specs_want_native_coverage():
    from verify.engines.maturin_coverage import wants_native_coverage

    assert wants_native_coverage(parse_spec("maturin:crates/tok?coverage=1&features=a"))
    assert not wants_native_coverage(parse_spec("maturin:crates/tok?features=a"))
    assert not wants_native_coverage(parse_spec("tiktoken:cl100k_base"))


def test_libfuzzer_log_gives_executions_and_native_counters(tmp_path):
    from verify.adversarial.fuzz.atheris_target import atheris_stats

    log = tmp_path / "atheris.log"
    log.write_text("INFO: Loaded 1 modules   (4488 inline 8-bit counters): 4488 [0x1, 0x2),\n"
                   "#296\tINITED cov: 244 ft: 702 corp: 63/5331b exec/s: 0 rss: 64Mb\n"
                   "#900\tNEW    cov: 250 ft: 710 corp: 64/5400b\n"
                   "artifact_prefix='x/'; Test unit written to x/crash-1\n"
                   "stat::number_of_executed_units: 418825\nstat::average_exec_per_sec:     5301\n")
    assert atheris_stats(log) == {"executions": 418825, "exec_per_sec": 5301, "loaded_modules": 1,
                                  "loaded_counters": 4488, "coverage": 250, "crashed": True}


# --- built: the crate without features, cached, pinned -------------------------------------------

@pytest.mark.slow
def test_the_crate_without_features_agrees_with_its_reference_and_is_pinned(rust_env, tmp_path):
    rust = rust_env
    corpus = inputs_corpus(tmp_path)
    out = tmp_path / "run"
    proc = cli(rust, "run", "--reference", REFERENCE, "--candidate", crate(rust), "--corpus", str(corpus),
               "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["diverged"] == 0 and manifest["counts"]["verified"] == manifest["counts"]["samples"]
    assert manifest["counts"]["samples"] >= 190
    build = manifest["candidates"][0]["build"]
    assert len(build["source_digest"]) == 64 and build["features"] == [] and not build["coverage"]
    assert build["git"]["root"] == str(REPO) and len(build["git"]["revision"]) == 40
    assert isinstance(build["git"]["dirty"], bool)
    assert build["toolchain"]["rustc"].startswith("rustc ") and build["toolchain"]["maturin"]
    assert manifest["candidates"][0]["package"] == "rust-bpe"

    # A second run with unchanged sources builds nothing: the cache's build.json is the same file.
    from verify.engines.maturin_build import cache_root

    record = cache_root() / "builds" / build["key"][:32] / "build.json"
    stamp = record.stat().st_mtime_ns
    again = tmp_path / "again"
    proc = cli(rust, "run", "--reference", REFERENCE, "--candidate", crate(rust), "--corpus", str(corpus),
               "--out", str(again), "--no-progress")
    assert proc.returncode == 0, proc.stderr
    notes = json.loads((again / "manifest.json").read_text())["engine_notes"][crate(rust)]["maturin"]
    assert notes["builds"] == 0 and notes["cache_hits"] >= 1
    assert record.stat().st_mtime_ns == stamp
    assert not (FIXTURE / "target").exists() and not (FIXTURE / "Cargo.lock").exists()  # never built in place


@pytest.mark.slow
def test_a_build_is_found_again_and_loads_into_a_private_folder(rust_env):
    from verify.engines import build_engine
    from verify.engines.maturin_engine import MaturinEngine
    from verify.sample import Sample

    engine = build_engine(crate(rust_env))
    again = build_engine(crate(rust_env))
    assert isinstance(engine, MaturinEngine) and again.build.cached and again.build.key == engine.build.key
    assert str(engine.build.site) in sys.path and str(rust_env["cache"]) in engine.build.site.as_posix()
    assert engine.capabilities.decode and engine.capabilities.entry_points == ("single", "batch")
    ids = engine.encode_batch([Sample.plain("s", "the quick aaaa")])[0]
    assert b"".join(engine.token_bytes(ids)) == b"the quick aaaa"
    assert list(ids) == rust_bpe_reference.reference().encode("the quick aaaa")


# --- each planted bug, found by the command that should find it ---------------------------------

@pytest.mark.slow
def test_the_chunk_cut_is_found_by_the_length_sweep_at_1022_and_minimised(rust, tmp_path):
    out = tmp_path / "length"
    proc = cli(rust, "length", "sweep", "--reference", crate(rust), "--candidate",
               crate(rust, features="chunk_cut"), "--family", "run:U+0061", "--max-chars", "3000",
               "--out", str(out), "--no-progress")
    assert proc.returncode == 1, proc.stderr
    report = json.loads((out / "length.json").read_text())
    (doc,) = report["candidates"].values()
    assert [t["length"] for t in doc["thresholds"]] == [1022]
    found = minimized(out)
    assert "a" * 1022 in found  # the family's threshold, a run of N+1
    assert {len(text) for text in found} == {1022}  # and the cut probes (a tab, a control at the cut): N+1 too


@pytest.mark.slow
def test_the_batch_bug_is_found_by_the_batch_entry_point_and_minimised(rust, tmp_path):
    out = tmp_path / "check"
    spec = crate(rust, features="batch_bug")
    proc = cli(rust, "check", "--engine", spec, "--check", "api", "--no-stress", "--corpus", "smoke", "--out",
               str(out), "--no-progress", "--minimize-budget", "30")
    assert proc.returncode == 1, proc.stderr
    found = triage(out)
    assert found and all("entry=batch" in t["engine"] for t in json.loads(
        (out / "clusters.json").read_text())["clusters"])
    # the batch call drops a trailing whitespace piece: each finding shrinks to its own whitespace
    # character, and all are one cluster, named by what the engine does to them
    shrunk = minimized(out)
    assert shrunk and all(len(t) == 1 and t.isspace() for t in shrunk), shrunk
    (cluster,) = json.loads((out / "clusters.json").read_text())["clusters"]
    assert cluster["key"] == "ids/reproducer/space/drops"
    # ... and the single entry point, the default, is right: the corpus run finds nothing.
    run = tmp_path / "run"
    proc = cli(rust, "run", "--reference", REFERENCE, "--candidate", spec, "--corpus", str(inputs_corpus(tmp_path)),
               "--out", str(run), "--no-progress")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_a_coverage_build_loads_native_counters_and_its_crash_is_replayed_and_minimised(rust, tmp_path):
    pytest.importorskip("atheris")
    from verify.adversarial.fuzz.atheris_target import atheris_stats

    out = tmp_path / "atheris"
    # The plumbing, not the search: a campaign continued from a corpus (as OUT's corpus is on a
    # later night) that holds the sequence inside a longer text, so the crash comes at once; the
    # build with native counters, the replay and the minimiser are what is checked here. Finding
    # it from nothing takes 200,000-760,000 executions and never happens without native coverage
    # (bench/bench_native_coverage.py): minutes, too long and too variable for CI.
    (out / "atheris-corpus").mkdir(parents=True)
    (out / "atheris-corpus" / "known").write_bytes(b"\x01say Zq#9 twice")  # text_from_bytes: ASCII
    proc = cli(rust, "fuzz", "--atheris", "--reference", crate(rust), "--candidate",
               crate(rust, features="magic", coverage=1), "--seed", "3", "--budget", "600", "--out", str(out))
    assert proc.returncode == 1, proc.stderr + proc.stdout
    stats = atheris_stats(out / "atheris.log")
    assert stats["crashed"] and stats["loaded_modules"] >= 1 and stats["loaded_counters"] > 1000
    assert minimized(out / "replay") == {"Zq#9"}


@pytest.mark.slow
def test_without_coverage_libfuzzer_sees_no_native_counter_and_the_plain_crate_no_finding(rust, tmp_path):
    pytest.importorskip("atheris")
    from verify.adversarial.fuzz.atheris_target import atheris_stats

    out = tmp_path / "atheris"
    proc = cli(rust, "fuzz", "--atheris", "--reference", REFERENCE, "--candidate", crate(rust), "--seed", "1",
               "--max-examples", "3000", "--budget", "300", "--out", str(out))
    assert proc.returncode == 0, proc.stderr + proc.stdout
    stats = atheris_stats(out / "atheris.log")
    assert stats["executions"] == 3000 and not stats["crashed"] and stats["loaded_modules"] == 0


@pytest.mark.slow
def test_a_gate_suite_names_a_maturin_candidate(rust, tmp_path):
    inputs_corpus(tmp_path)
    suite = tmp_path / "pr.toml"
    suite.write_text(f"""[gate]
name = "pr-rust-bpe"
reference = "{crate(rust)}"
candidates = ["{crate(rust, features='chunk_cut')}"]
minimize_budget = 10

[[check]]
kind = "corpus"
corpus = "inputs.jsonl"
""")
    out = tmp_path / "gate"
    proc = cli(rust, "gate", str(suite), "--out", str(out))
    assert proc.returncode == 1, proc.stderr  # the chunk cut: 'a' x 3000 in the corpus
    doc = json.loads((out / "gate.json").read_text())
    assert doc["verdict"] == "fail" and doc["clusters"]
    manifest = json.loads((out / "checks" / "corpus" / "manifest.json").read_text())
    assert manifest["candidates"][0]["build"]["features"] == ["chunk_cut"]  # the built crate, pinned
    assert (out / "ci-summary.md").read_text().startswith("### verify gate `pr-rust-bpe`: **FAIL**")


# --- two revisions side by side; a broken crate ---------------------------------------------------

@pytest.mark.slow
def test_a_revision_and_the_work_tree_are_two_engines(rust, tmp_path):
    clone = tmp_path / "clone"
    shutil.copytree(FIXTURE, clone, ignore=shutil.ignore_patterns("target", "__pycache__", "Cargo.lock"))
    _git(clone, "init", "-q")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-qm", "v1")
    _git(clone, "tag", "v1")
    v1 = _git(clone, "rev-parse", "HEAD")
    lib = clone / "src" / "lib.rs"
    old = "if bytes[i] == b' ' && i + 1 < bytes.len() && !is_space(bytes[i + 1]) {"
    assert old in lib.read_text()
    lib.write_text(lib.read_text().replace(old, "if false {"))  # v2: a space no longer leads the word after it
    _git(clone, "commit", "-qam", "v2: a space is a piece of its own")
    corpus = inputs_corpus(tmp_path)
    reference, candidate = crate(rust, Path(f"{clone}@v1")), crate(rust, clone)
    out = tmp_path / "run"
    proc = cli(rust, "run", "--reference", reference, "--candidate", candidate, "--corpus", str(corpus),
               "--out", str(out), "--no-progress", "--workers", "2")
    assert proc.returncode == 1, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    ref_build, cand_build = manifest["reference"]["build"], manifest["candidates"][0]["build"]
    assert ref_build["git"] == {"root": str(clone), "revision": v1, "rev": "v1", "dirty": False}
    assert cand_build["git"]["revision"] == _git(clone, "rev-parse", "HEAD") and not cand_build["git"]["dirty"]
    assert ref_build["source_digest"] != cand_build["source_digest"]
    diverged = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    assert diverged and all(re.search(r" \S", "".join(s[0] for s in d["input"])) for d in diverged)
    notes = manifest["engine_notes"]
    # v2 is new content: built once, however many workers started it; v1 has the fixture's own
    # content, which another test (another xdist worker) may have built already: at most once.
    assert notes[candidate]["maturin"]["builds"] == 1 and notes[reference]["maturin"]["builds"] <= 1

    # In one process (reference and candidate are one module name, two builds): the same findings.
    inproc = tmp_path / "inproc"
    proc = cli(rust, "run", "--reference", reference, "--candidate", candidate, "--corpus", str(corpus),
               "--out", str(inproc), "--no-progress", "--in-process")
    assert proc.returncode == 1, proc.stderr
    again = [json.loads(line) for line in (inproc / "divergences.jsonl").read_text().splitlines()]
    assert sorted(d["finding_key"] for d in again) == sorted(d["finding_key"] for d in diverged)


@pytest.mark.slow
def test_a_broken_crate_is_one_line_exit_2_with_the_compiler_output_saved(rust, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURE, broken, ignore=shutil.ignore_patterns("target", "__pycache__", "Cargo.lock"))
    lib = broken / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("let mut ids = Vec::new();", "let mut ids = Vec::new(); no_such_name;"))
    out = tmp_path / "fuzz"
    proc = cli(rust, "fuzz", "--atheris", "--reference", REFERENCE, "--candidate", crate(rust, broken),
               "--out", str(out), "--budget", "30")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and "the build failed" in line and "no_such_name" in line
    saved = out / "maturin-build.log"
    assert str(saved) in line and "error[E0425]" in saved.read_text()

    run = cli(rust, "run", "--reference", REFERENCE, "--candidate", crate(rust, broken), "--corpus", "smoke",
              "--out", str(tmp_path / "run"), "--no-progress")
    assert run.returncode == 2, run.stderr
    line = run.stderr.strip()
    assert "\n" not in line and "the build failed" in line
    log = Path(line.rsplit("compiler output: ", 1)[1].split()[0])
    assert "error[E0425]" in log.read_text()
