"""Coverage-guided differential fuzz target for atheris (libFuzzer for Python).

Use:

    pip install atheris
    verify fuzz --atheris --reference tiktoken:cl100k_base --candidate kitoken:cl100k_base \\
        --budget 120 --out reports/atheris-kitoken

or by hand, with libFuzzer's own flags:

    VERIFY_FUZZ_REFERENCE=tiktoken:cl100k_base VERIFY_FUZZ_CANDIDATES=kitoken:cl100k_base \\
        python -m verify.adversarial.fuzz.atheris_target -max_total_time=120 -artifact_prefix=out/ corpus/

``TestOneInput`` turns the fuzzer's bytes into text
(``FuzzedDataProvider.ConsumeUnicodeNoSurrogates``), encodes it with the reference
and every candidate (plain text, no special tokens; engines built once, in this
process, from ``$VERIFY_FUZZ_REFERENCE`` and ``$VERIFY_FUZZ_CANDIDATES``, a
comma-separated or JSON list), and raises ``AssertionError`` with the input, both
id lists and the first differing index when a candidate differs. An engine that
raises is a finding too (whichever engine it is), never a skipped input; a
segfault or abort is caught by libFuzzer itself. Each finding is a
``crash-<sha1>`` file (the raw bytes) in OUT; ``verify fuzz --atheris`` then
decodes them and replays them through the ordinary isolated pipeline (``verify run``
into ``OUT/replay/``, replaced on every call), so they end in
``OUT/replay/divergences.jsonl`` like any other finding, triaged (inputs in
``OUT/atheris-inputs.jsonl``). ``OUT/atheris.log`` is libFuzzer's log and
``OUT/atheris-corpus/`` its corpus, which a later run with the same OUT continues;
an empty corpus is first seeded with 300 texts from the hypothesis strategies.

Native coverage: libFuzzer's coverage feedback sees instrumented Python code, and the
native code of an engine built with SanitizerCoverage -- ``maturin:PATH?coverage=1``
(docs/maturin.md). For such an engine, libFuzzer's callbacks are loaded into the global
symbol scope before the engines are built (``verify.engines.maturin_coverage``), so the
extension's counters and comparison traces register with the same libFuzzer as atheris's
Python counters, and ``atheris.Setup`` is told to use that built-in libFuzzer. libFuzzer's
``INFO: Loaded N modules (M inline 8-bit counters)`` line at the start of ``OUT/atheris.log``
counts the native module(s); a native engine without instrumentation is fuzzed nearly blind,
and the hypothesis fuzzer (``verify fuzz`` without ``--atheris``), which knows where
tokenizers break, finds more in the same time on it. ``maturin:`` engines are built (or
found in the cache) before the target starts: a failed build is one line, exit 2, with the
compiler's output saved as ``OUT/maturin-build.log``.

Found (reference tiktoken 0.14.0, cl100k_base; record new findings here, one line
each, with the engine version and the input):
  kitoken 0.11.1, 30 s, first crash from the seeds: plain text ``':<|fim_suffix|>:\n...'``
    -- kitoken splits ordinary text at a special-token literal it is not allowed to
    match (``':' '<' '|'...`` against tiktoken's ``':<' '|'...``); the hypothesis
    fuzzer shrinks the same bug to ``':<|endoftext|>'``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from verify.config import parse_spec
from verify.engine_spec import EngineSpec
from verify.exit_codes import ExitCode
from verify.token_diff import first_difference
from verify.outcome import Failure, agree
from verify.sample import Sample

REFERENCE_ENV = "VERIFY_FUZZ_REFERENCE"
CANDIDATES_ENV = "VERIFY_FUZZ_CANDIDATES"
MAX_IDS_SHOWN = 2000
INSTALL_HINT = ("atheris is not installed: pip install 'verify-tokenizers[fuzz]' "
                "(Linux or macOS, CPython with a wheel or clang)")

REFERENCE = None  # executors in this process, built by configure() from the environment
CANDIDATES: list = []
POOL = None


def parse_specs(raw: str) -> list[EngineSpec]:
    """The engines this process was handed in its environment (JSON list or commas), parsed."""
    raw = raw.strip()
    texts = [str(s) for s in json.loads(raw)] if raw.startswith("[") else [s.strip() for s in raw.split(",") if s.strip()]
    return [parse_spec(text) for text in texts]


def configure(reference: str, candidates: list[str]) -> None:
    """Build the engines (in this process) that ``TestOneInput`` compares."""
    global REFERENCE, CANDIDATES, POOL
    from verify.executors.pool import EngineOptions, EnginePool

    if POOL is not None:
        POOL.close()
    POOL = EnginePool(EngineOptions(isolate=False))  # libFuzzer itself catches segfaults and hangs
    REFERENCE, *CANDIDATES = POOL.start([reference, *candidates])


def text_from_bytes(data: bytes) -> str:
    """The text ``TestOneInput`` fuzzes for these bytes (also used to decode crash artifacts)."""
    import atheris

    return atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))


def bytes_for_text(text: str) -> bytes:
    """Fuzzer bytes that ``text_from_bytes`` decodes back to ``text`` (its UTF-32 form)."""
    return b"\x00" + text.encode("utf-32-le")


def write_seeds(corpus: Path, count: int = 300) -> int:
    """Seed an empty corpus with hostile texts from the hypothesis strategies, so that
    libFuzzer mutates tokenizer-hostile inputs even where it sees no coverage."""
    import hashlib

    from hypothesis import HealthCheck, given, settings

    from verify.adversarial.fuzz.strategies import texts

    if any(corpus.iterdir()):
        return 0
    written: list[bytes] = []

    @settings(max_examples=count, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(texts(long_max=200))
    def collect(text):
        written.append(bytes_for_text(text))

    collect()
    for data in written:
        (corpus / f"seed-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
    return len(written)


def _show(out) -> str:
    if isinstance(out, Failure):
        return f"{out.kind} {out.type}: {out.message}"
    ids = [int(i) for i in out[:MAX_IDS_SHOWN]]
    return json.dumps(ids) + (f" ... ({out.size} ids)" if out.size > MAX_IDS_SHOWN else "")


def TestOneInput(data: bytes) -> None:
    if REFERENCE is None:
        raise RuntimeError(f"no engines: set ${REFERENCE_ENV} and ${CANDIDATES_ENV}, or call configure()")
    text = text_from_bytes(data)
    sample = Sample.plain("atheris", text)
    expected = REFERENCE.encode([sample])[0]
    if isinstance(expected, Failure):
        raise AssertionError(f"reference {REFERENCE.spec} failed on input {text!r}: {_show(expected)}")
    for candidate in CANDIDATES:
        actual = candidate.encode([sample])[0]
        if isinstance(actual, Failure):
            raise AssertionError(f"{candidate.spec} failed on input {text!r} (reference {REFERENCE.spec} did not): "
                                 f"{_show(actual)}")
        if not agree(expected, actual):
            index = first_difference(expected, actual)
            raise AssertionError(
                f"{candidate.spec} differs from {REFERENCE.spec} at token {index} on input {text!r}\n"
                f"  expected: {_show(expected)}\n  actual:   {_show(actual)}")


def main(argv: list[str] | None = None) -> None:
    import atheris

    from verify.errors import VerifyError

    from verify.engines.maturin_coverage import libfuzzer_preloaded, preload_libfuzzer, wants_native_coverage

    argv = list(sys.argv if argv is None else argv)
    try:
        specs = [*parse_specs(os.environ[REFERENCE_ENV]), *parse_specs(os.environ.get(CANDIDATES_ENV, ""))]
        if any(wants_native_coverage(spec) for spec in specs):
            preload_libfuzzer()  # before any extension is loaded: its counters go to this libFuzzer
        with atheris.instrument_imports(include=["verify"]):  # Python-side coverage of the adapters
            configure(specs[0], specs[1:])
    except KeyError:
        sys.exit(f"verify atheris target: set ${REFERENCE_ENV} (and ${CANDIDATES_ENV})")
    except VerifyError as exc:
        sys.exit(f"verify atheris target: {exc}")
    if libfuzzer_preloaded():  # the libFuzzer the native counters registered with, not a second one
        atheris.Setup(argv, TestOneInput, internal_libfuzzer=True)
    else:
        atheris.Setup(argv, TestOneInput)
    atheris.Fuzz()


# --- `verify fuzz --atheris` ---------------------------------------------------

def run_atheris(reference: str, candidates: list[str], out: Path, *, budget_s: float | None = None,
                runs: int | None = None, seed: int | None = None) -> int:
    """Run the target in a subprocess for ``budget_s`` seconds (default 60), then replay
    its crash artifacts through the ordinary pipeline. Returns the exit code."""
    import importlib.util

    from verify.errors import UsageError

    if importlib.util.find_spec("atheris") is None:
        raise UsageError(INSTALL_HINT)
    if not candidates:
        raise UsageError("no candidate engine: pass --candidate SPEC")
    out.mkdir(parents=True, exist_ok=True)
    prebuild(reference, candidates, out)
    corpus = out / "atheris-corpus"
    corpus.mkdir(exist_ok=True)
    write_seeds(corpus)
    before = set(_artifacts(out))
    cmd = [sys.executable, "-m", "verify.adversarial.fuzz.atheris_target",
           f"-max_total_time={max(1, round(budget_s or 60))}", f"-artifact_prefix={out}{os.sep}",
           "-print_final_stats=1"]
    if runs is not None:
        cmd.append(f"-runs={runs}")
    if seed is not None:
        cmd.append(f"-seed={seed}")
    cmd.append(str(corpus))
    env = {**os.environ, REFERENCE_ENV: reference, CANDIDATES_ENV: json.dumps(candidates)}
    log = out / "atheris.log"
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
    found = [p for p in _artifacts(out) if p not in before]
    if not found:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or [""]
        if proc.returncode != 0:
            raise UsageError(f"atheris target exited with {proc.returncode}: {tail[0]} (log: {log})")
        print(f"atheris: nothing found in {budget_s or 60:g} s -> {out}")
        return ExitCode.OK
    replay(reference, candidates, found, out)
    for path in found:
        print(f"atheris: {path.name}: {text_from_bytes(path.read_bytes())!r}")
    print(f"atheris: {len(found)} finding(s), replayed into {out / 'replay' / 'divergences.jsonl'}; log {log}")
    return ExitCode.FINDINGS


def prebuild(reference: str, candidates: list[str], out: Path) -> None:
    """Build every ``maturin:`` engine (or find it in the cache) before the target starts: a
    failed build is one line here, its compiler output copied to ``OUT/maturin-build.log``."""
    import shutil

    from verify.engines.maturin_build import BuildFailed
    from verify.engines.maturin_engine import prebuild_spec
    from verify.errors import ConfigError

    for spec in [reference, *candidates]:
        try:
            prebuild_spec(spec)
        except BuildFailed as exc:
            saved = out / "maturin-build.log"
            shutil.copyfile(exc.log, saved)
            raise ConfigError(f"{exc.summary}; compiler output: {saved}") from None


def atheris_stats(log: Path) -> dict:
    """What libFuzzer's log says: executions (``-print_final_stats``), executions per second,
    the modules and inline 8-bit counters it loaded at the start (native ones: atheris adds its
    Python counters later), the last coverage count, whether it crashed."""
    import re

    stats: dict = {"executions": None, "exec_per_sec": None, "loaded_modules": 0, "loaded_counters": 0,
                   "coverage": None, "crashed": False}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("stat::number_of_executed_units:"):
            stats["executions"] = int(line.split(":")[-1])
        elif line.startswith("stat::average_exec_per_sec:"):
            stats["exec_per_sec"] = int(line.split(":")[-1])
        elif line.startswith("INFO: Loaded") and "inline 8-bit counters" in line:
            found = re.search(r"Loaded (\d+) modules\s+\((\d+) inline 8-bit counters\)", line)
            if found:
                stats["loaded_modules"] += int(found.group(1))
                stats["loaded_counters"] += int(found.group(2))
        elif "Test unit written to" in line:
            stats["crashed"] = True
        found = re.search(r"\bcov: (\d+)", line)
        if found:
            stats["coverage"] = int(found.group(1))
    return stats


def _artifacts(out: Path) -> list[Path]:
    return sorted(p for prefix in ("crash-", "timeout-", "oom-", "leak-") for p in out.glob(prefix + "*"))


def replay(reference: str, candidates: list[str], artifacts: list[Path], out: Path) -> None:
    """Decode artifacts and run them through ``verify run``'s pipeline into ``out/replay``."""
    import shutil

    from verify import jsonl

    from verify.driver import RunOptions, run_job

    inputs = out / "atheris-inputs.jsonl"
    with open(inputs, "w", encoding="utf-8") as fh:
        for path in artifacts:
            record = {"id": f"atheris:{path.name}", "text": text_from_bytes(path.read_bytes())}
            fh.write(jsonl.line(record))
    shutil.rmtree(out / "replay", ignore_errors=True)
    run_job(RunOptions(reference=reference, candidates=list(candidates), corpora=[str(inputs)], out=out / "replay",
                       progress=False, argv=["fuzz", "--atheris"]))


if __name__ == "__main__":
    main()
