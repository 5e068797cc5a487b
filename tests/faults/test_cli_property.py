"""A property of the command line: whatever value an option is given -- inf, nan, -1, 0, a huge
number, an empty string, non-ASCII or undecodable text, a regular file where a folder is
expected, a folder where a file is, a path under a file -- no command ends as a harness bug (exit
3, a traceback) or hangs. A bad value is one line and exit 2; a good one runs.

Each example calls ``verify.cli.main`` in this process on an invocation that works as given
(tiny tokenizers, in-process engines, one worker, a slice of the smoke corpus) with one or two of
its options replaced. Real work is cut short: a run executes at most ``SHARDS_RUN`` shards (then
ends as an incomplete run would), asking for shard worker processes stops the example there
(``Cut``: the values that reach it passed every check), and the ceilings of work done before the
shards are lowered (``CEILINGS``). An example that runs past ``HANG_S`` seconds fails as a hang.
The examples are the same every run (``derandomize``); ``$CLI_PROPERTY_EXAMPLES`` (default 10 per
command) searches further. ``FOUND`` keeps what such searches found, each fixed to exit 2."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO, TRAINING_TEXT
from verify.cli import main
from verify.executors.workers import InlineShards, ProcessShards

pytestmark = pytest.mark.faults

EXAMPLES = int(os.environ.get("CLI_PROPERTY_EXAMPLES", "10"))
HANG_S = 30
SHARDS_RUN = 2

# Ceilings of work that is done outside shards (so SHARDS_RUN does not bound it), lowered so that
# the largest value they let through takes seconds: a self-test's documents, a length family's size.
CEILINGS = {"verify.selftest.run.MAX_DOCUMENTS": 1000, "verify.adversarial.length.hunt.MAX_CHARS": 100_000}
NUMBERS = ["inf", "-inf", "nan", "-1", "0", "-0", "1", "0.5", "1e308", "-1e308", "1e-320", str(2**63), str(10**30),
           f"-{10**30}", "", " ", "1_000", "0x10", "\u0663", "\u00e9", "\udcff", "1e3", "4097", "99999999999"]
TEXTS = ["", " ", "\u00e9t\u00e9 \u65e5\u672c", "\udcff", "=", "a=b", "x" * 300, "../escape", "a/b", ".", "-",
         "\t", "run:U+0031", "agent:1"]
PATH_KINDS = ["file", "dir", "missing", "empty", "non-ascii", "under-a-file", "undecodable", "dev-null", "relative"]


class Cut(BaseException):
    """The example asked for shard worker processes: every check before them passed."""


class Hung(BaseException):
    """The example ran past HANG_S."""


@dataclass
class Command:
    """An invocation that works (``{NAME}`` placeholders: the fixture's paths, ``{OUT}`` a fresh
    folder per example) and its options with the kind of value each takes (``@`` is the
    positional argument, in ``argv`` as ``{@}``, ``default`` its value when left as it is)."""

    argv: list[str]
    options: dict[str, str]
    default: str = ""


FAST = ["--workers", "1", "--in-process", "--no-progress"]
POOL = {"--timeout": "float", "--memory-limit-mb": "int"}
JOB = {"--workers": "int", "--ray-actors": "int", "--ray-cpus-per-actor": "float", "--out": "out", **POOL}
COMMANDS = {
    "run": Command(["run", "--reference", "{T}", "--candidate", "{T2}", "--corpus", "smoke", "--limit", "2",
                    "--out", "{OUT}", "--minimize-budget", "0", *FAST],
                   {"--limit": "int", "--sample": "float", "--seed": "int", "--batch-size": "int",
                    "--minimize-budget": "float", "--ledger-audit": "float", "--ledger": "out", "--corpus": "in",
                    "--corpus-root": "in", "--traces": "in", "--template": "in", "--where": "text",
                    "--text-field": "text", **JOB}),
    "replay": Command(["replay", "--engine", "{T2}", "--reference", "{T}", "--traces", "agent:1:1", "--limit", "1",
                       "--out", "{OUT}", "--minimize-budget", "0", *FAST],
                      {"--edits": "int", "--seed": "int", "--limit": "int", "--traces": "in", "--format": "text",
                       "--template": "in", "--minimize-budget": "float", **JOB}),
    "triage": Command(["triage", "{@}", "--minimize-budget", "1", "--in-process"],
                      {"@": "dir", "--minimize-budget": "float", "--per-cluster": "int", **POOL}, "{RUN}"),
    "ledger stats": Command(["ledger", "stats", "{@}"], {"@": "dir"}, "{LEDGER}"),
    "ledger check": Command(["ledger", "check", "{@}", "--corpus", "smoke", "--limit", "1", "--in-process"],
                            {"@": "dir", "--limit": "int", "--audit": "float", "--seed": "int", "--corpus": "in",
                             "--text-field": "text", **POOL}, "{LEDGER}"),
    "ledger compact": Command(["ledger", "compact", "{@}"], {"@": "dir"}, "{LEDGER}"),
    "sweep": Command(["sweep", "--reference", "{T}", "--corpus", "smoke", "--limit", "1", "--out", "{OUT}",
                      "--minimize-budget", "0", *FAST],
                     {"--limit": "int", "--minimize-budget": "float", "--corpus": "in", **JOB}),
    "vocab pull": Command(["vocab", "pull", "{@}"], {"@": "text"}, "cl100k_base"),
    "vocab sweep": Command(["vocab", "sweep", "--reference", "{T}", "--candidate", "{T2}", "--limit", "2",
                            "--out", "{OUT}", "--minimize-budget", "0", *FAST],
                           {"--limit": "int", "--pairs": "int", "--seed": "int", "--batch-size": "int",
                            "--max-findings": "int", "--minimize-budget": "float", **JOB}),
    "unicode": Command(["unicode", "--reference", "{T}", "--candidate", "{T2}", "--start", "41", "--stop", "43",
                        "--out", "{OUT}", *FAST],
                       {"--start": "hex", "--stop": "hex", "--shard-code-points": "int", **JOB}),
    "length sweep": Command(["length", "sweep", "--reference", "{T}", "--candidate", "{T2}", "--max-chars", "8",
                             "--family", "run:U+0031", "--out", "{OUT}", "--minimize-budget", "0", *FAST],
                            {"--max-chars": "int", "--family": "text", "--minimize-budget": "float", **JOB}),
    "fuzz": Command(["fuzz", "--reference", "{T}", "--candidate", "{T2}", "--max-examples", "1", "--budget", "1",
                     "--no-stress", "--database", "{DB}", "--out", "{OUT}", *FAST],
                    {"--max-examples": "int", "--budget": "float", "--seed": "int", "--max-findings": "int",
                     "--allowlist": "in", "--database": "out", **JOB}),
    "recheck": Command(["recheck", "--cases", "{CASES}", "--out", "{OUT}", *FAST], {"--cases": "dir", **JOB}),
    "recheck --add": Command(["recheck", "--add", "{@}", "--engine", "{T2}", "--reference", "{T3}", "--text",
                              "the quick tokenizer", "--cases", "{OUT}", "--in-process"],
                             {"@": "text", "--text": "text", "--cases": "out", **POOL}, "new-case"),
    "check": Command(["check", "--engine", "{T}", "--corpus", "smoke", "--limit", "1", "--check", "repeat",
                      "--out", "{OUT}", *FAST],
                     {"--limit": "int", "--batch-size": "int", "--stress-budget": "float",
                      "--minimize-budget": "float", "--corpus": "in", "--text-field": "text", **JOB}),
    "selftest": Command(["selftest", "--reference", "{T}", "--kinds", "substitute", "history", "--faults", "1",
                         "--corpus", "smoke", "--after", "50", "--turns", "2", "--out", "{OUT}", "--in-process"],
                        {"--faults": "int", "--rate": "float", "--seed": "int", "--after": "int", "--turns": "int",
                         "--min-recall": "float", "--workers": "int", "--minimize-budget": "float",
                         "--corpus": "in", "--unicode-fault": "text", "--out": "out", **POOL}),
    "report": Command(["report", "{@}"], {"@": "dir"}, "{RUN}"),
    "gate": Command(["gate", "{@}", "--out", "{OUT}"], {"@": "in", "--out": "out", "--baseline": "dir"},
                    "{SUITE}"),
    "gate init": Command(["gate", "init", "--candidate", "{T2}", "--reference", "{T}", "--write", "{OUT}/gate.toml"],
                         {"--write": "out"}),
    "shadow": Command(["shadow", "{@}", "--reference", "{T}", "--out", "{OUT}", "--minimize-budget", "0", *FAST],
                      {"@": "in", "--minimize-budget": "float", "--per-cluster": "int", "--allowlist": "in",
                       "--known-clusters": "dir", **JOB}, "{SHADOW}"),
}


def tokenizer(path: Path, vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|sep|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    tok.save(str(path))
    return f"hf:{path}"


def project(root: Path) -> Path:
    """A project folder whose engines and corpora are the checkout's and whose regression cases
    and reports are its own: nothing an example writes lands in the checkout."""
    root.mkdir()
    for name in ("engines", "corpora"):
        (root / name).symlink_to(REPO / name)
    (root / "adversarial" / "regressions").mkdir(parents=True)
    (root / "adversarial" / "tags.toml").symlink_to(REPO / "adversarial" / "tags.toml")
    return root


def quiet_main(argv: list[str]) -> tuple[int, str]:
    """``main(argv)``: its exit code and stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_tokenizer_json):
    """The paths the invocations name, a run with findings, a ledger, a suite, a case, a shadow file;
    the environment every example runs in (offline, this project, caches here, cwd here)."""
    root = tmp_path_factory.mktemp("cli-property")
    names = {"T": f"hf:{tiny_tokenizer_json}", "T2": tokenizer(root / "same.json", 400),
             "T3": tokenizer(root / "other.json", 300), "DB": str(root / "hypothesis"),
             "RUN": str(root / "run"), "LEDGER": str(root / "ledger"), "SUITE": str(root / "suite.toml"),
             "CASES": str(root / "cases"), "SHADOW": str(root / "shadow.jsonl")}
    env = {"VERIFY_PROJECT": str(project(root / "project")), "VERIFY_OFFLINE": "1",
           "VERIFY_CACHE_DIR": str(root / "cache"), "HOME": str(root / "home")}
    (root / "box").mkdir()
    (root / "box" / "a-file").write_text("x\n")
    Path(names["SUITE"]).write_text(
        f'[gate]\nname = "p"\nreference = "{names["T"]}"\ncandidates = ["{names["T2"]}"]\nin_process = true\n'
        'workers = 1\nminimize_budget = 0\n\n[[check]]\nname = "slice"\nkind = "corpus"\ncorpus = "smoke"\nlimit = 1\n')
    Path(names["SHADOW"]).write_text(json.dumps(
        {"schema": "verify.shadow/1", "request_id": "r1", "timestamp": "2026-03-01T12:00:00Z",
         "tokenizer": {"name": "tiny", "version": "1", "vocab_sha256": None}, "text": "the quick", "ids": [1]}) + "\n")
    with mock.patch.dict(os.environ, env), contextlib.chdir(root / "box"):
        setup = [["run", "--reference", names["T"], "--candidate", names["T3"], "--corpus", "smoke", "--limit", "4",
                  "--out", names["RUN"], "--ledger", names["LEDGER"], "--minimize-budget", "0", *FAST],
                 ["recheck", "--add", "case-1", "--engine", names["T2"], "--reference", names["T3"], "--text",
                  "the quick tokenizer", "--cases", names["CASES"], "--in-process"]]
        for argv in setup:
            code, err = quiet_main(argv)
            assert code in (0, 1), err
    return root, names, env


def path_value(kind: str, box: Path, n: int) -> str:
    """A path of ``kind``, fresh for example ``n`` where it names something not there."""
    made = {"file": box / "a-file", "dir": box / f"dir-{n}", "missing": box / f"missing-{n}", "empty": "",
            "non-ascii": box / f"\u00fcn\u00ef-{n} \u65e5\u672c", "under-a-file": box / "a-file" / f"sub-{n}",
            "undecodable": box / f"\udcff-{n}", "dev-null": "/dev/null", "relative": f"rel-{n}"}[kind]
    if kind == "dir":
        made.mkdir(exist_ok=True)
    return str(made)


def values(kind: str, box: Path, n: int):
    """What an option of ``kind`` is given: nasty numbers, nasty text, or a path of every kind."""
    numbers = st.one_of(st.sampled_from(NUMBERS), st.integers(-2**70, 2**70).map(str), st.floats().map(repr))
    if kind in ("int", "float"):
        return numbers
    if kind == "hex":
        return st.one_of(numbers, st.integers(-1, 2**40).map(lambda v: format(v, "x")))
    if kind == "text":
        return st.one_of(st.sampled_from(TEXTS), st.text(max_size=20))
    return st.sampled_from(PATH_KINDS).map(lambda k: path_value(k, box, n))


def invocation(command: Command, names: dict[str, str], chosen: dict[str, str], out: str) -> list[str]:
    fill = {**names, "OUT": out, "@": chosen.get("@", command.default.format(**names))}
    argv = [part.format(**fill) for part in command.argv]
    for flag, value in chosen.items():
        if flag != "@":
            argv += [flag, value]
    return argv


@contextlib.contextmanager
def bounded():
    """Shard workers are not started (``Cut``), a run executes at most SHARDS_RUN shards, the
    ceilings of work done outside shards are lowered (``CEILINGS``), and the example fails as
    ``Hung`` past HANG_S."""
    def cut(self):
        raise Cut

    real_run = InlineShards.run

    def few(self, tasks, on_result, on_start):
        return real_run(self, list(tasks)[:SHARDS_RUN], on_result, on_start)

    def hung(signum, frame):
        raise Hung

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        with contextlib.ExitStack() as patches:
            patches.enter_context(mock.patch.object(ProcessShards, "start", cut))
            patches.enter_context(mock.patch.object(InlineShards, "run", few))
            for target, value in CEILINGS.items():
                patches.enter_context(mock.patch(target, value))
            yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_option_value_is_a_harness_bug_or_a_hang(world, name):
    root, names, env = world
    command, serial = COMMANDS[name], itertools.count()
    box = root / "box"

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def example(data):
        n = next(serial)
        flags = data.draw(st.lists(st.sampled_from(sorted(command.options)), min_size=1, max_size=2, unique=True))
        chosen = {flag: data.draw(values(command.options[flag], box, n), label=flag) for flag in flags}
        argv = invocation(command, names, chosen, str(root / "outs" / f"{name.replace(' ', '-')}-{n}"))
        try:
            with bounded():
                code, err = quiet_main(argv)
        except Cut:
            return
        except Hung:
            pytest.fail(f"hung past {HANG_S}s: verify {' '.join(map(repr, argv))}")
        if code not in (0, 1, 2) or "harness bug" in err or "Traceback" in err:
            pytest.fail(f"exit {code}: verify {' '.join(map(ascii, argv))}\n{err}", pytrace=False)

    with mock.patch.dict(os.environ, env), contextlib.chdir(box):
        example()


# Values the property found as harness bugs or hangs (before the fixes): each is one line and exit 2 now.
FOUND = [
    ("run", {"--out": "path:undecodable"}), ("run", {"--out": "path:under-a-file"}), ("run", {"--ledger": "path:file"}),
    ("run", {"--timeout": "1e300"}), ("run", {"--workers": "5000"}), ("run", {"--memory-limit-mb": str(10**20)}),
    ("replay", {"--format": "\udcff"}), ("gate", {"--out": "path:under-a-file"}),
    ("gate init", {"--write": "path:under-a-file"}), ("sweep", {"--out": "path:file"}),
    ("recheck --add", {"@": "../escape"}), ("recheck --add", {"--cases": "path:under-a-file"}),
    ("selftest", {"--turns": "1821218"}), ("selftest", {"--seed": "-1"}), ("selftest", {"--faults": str(10**9)}),
    ("vocab sweep", {"--seed": "-36"}), ("vocab sweep", {"--pairs": str(10**9)}),
    ("unicode", {"--start": "0", "--stop": "110000", "--shard-code-points": "1"}),
    ("fuzz", {"--max-examples": str(10**9)}), ("length sweep", {"--max-chars": str(2**70)}),
    ("check", {"--stress-budget": "1e300"}),
]


def _found_id(name: str, chosen: dict[str, str]) -> str:
    return f"{name} {' '.join(f'{flag}={value!a}' for flag, value in chosen.items())}"


@pytest.mark.parametrize("name, chosen", FOUND, ids=[_found_id(n, c) for n, c in FOUND])
def test_the_values_found_are_one_line_and_exit_2(world, name, chosen):
    root, names, env = world
    box = root / "box"
    chosen = {flag: path_value(value[5:], box, 0) if value.startswith("path:") else value
              for flag, value in chosen.items()}
    argv = invocation(COMMANDS[name], names, chosen, str(root / "outs" / f"found-{name.replace(' ', '-')}"))
    with mock.patch.dict(os.environ, env), contextlib.chdir(box), bounded():
        code, err = quiet_main(argv)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("verify: error: "), (argv, err)
