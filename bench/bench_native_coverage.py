"""Native coverage for the fuzzer: the fixture crate's magic-sequence bug, found by
``verify fuzz --atheris`` with native coverage (``maturin:...?features=magic&coverage=1``) and
without it (the same crate and bug built without instrumentation: Python coverage only).

    python bench/bench_native_coverage.py [--seeds 1,2,3] [--budget 300] [--cache DIR]

For every seed, both runs (alternating native, Python-only) with the same seed and budget:
executions and seconds to the first finding (libFuzzer's ``-print_final_stats``; seconds are the
whole command: engine start, seeding, fuzzing, and for a finding its replay and minimisation).
Goal: found with native coverage in every seed within the budget, with at least 10x fewer
executions than without (or never found without).

Also the build: cold (an empty cache: the plain crate, then the coverage build, whose
dependencies are compiled again with instrumentation) and cached (the look-up of an unchanged
crate, in this process and as a whole engine start in a fresh one; goal <= 1 s).

The crate's only dependency, PyO3 0.17, comes from Debian (``apt-get install librust-pyo3-dev``):
when ``/usr/share/cargo/registry`` has it, the builds use a CARGO_HOME of their own that points
cargo there, offline; otherwise the environment's own cargo setup is used.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "rust-bpe"
DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")


def environment(work: Path, cache: Path) -> dict[str, str]:
    sys.path.insert(0, str(FIXTURE / "reference"))
    import rust_bpe_reference

    env = {"VERIFY_MATURIN_CACHE": str(cache), "RUST_BPE_VOCAB": str(work / "vocab.hex")}
    rust_bpe_reference.write_vocabulary(work / "vocab.hex")
    if list(DEBIAN_REGISTRY.glob("pyo3-0.17*")):
        home = work / "cargo-home"
        home.mkdir()
        (home / "config.toml").write_text(f'[source.crates-io]\nreplace-with = "debian"\n[source.debian]\n'
                                          f'directory = "{DEBIAN_REGISTRY}"\n[net]\noffline = true\n')
        env["CARGO_HOME"] = str(home)
    os.environ.update(env)
    return env


def spec(vocab: Path, **options) -> str:
    return "maturin:" + str(FIXTURE) + "?" + "&".join([*(f"{k}={v}" for k, v in options.items()), f"target={vocab}"])


def build_times(vocab: Path) -> None:
    from verify.engines.maturin_build import ensure_built
    from verify.engines.maturin_engine import build_request
    from verify.engines.maturin_source import locate

    source = locate(str(FIXTURE), None)
    rows = []
    for label, options in (("plain", {}), ("magic + coverage", {"features": "magic", "coverage": 1})):
        request = build_request("bench", options)
        cold = ensure_built(source, request)
        cached = ensure_built(source, request)
        rows.append((label, cold.cached, cold.seconds, cached.cached, cached.seconds))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from verify.engines import build_engine; import sys; "
                    "build_engine(sys.argv[1]).close()", spec(vocab)], check=True, cwd=REPO)
    fresh = time.perf_counter() - started
    print("| build | cold s | cached look-up s |\n|---|---|---|")
    for label, was_cached, cold_s, now_cached, cached_s in rows:
        assert not was_cached and now_cached, "the cache was not cold, or the second look-up built again"
        print(f"| {label} | {cold_s:.1f} | {cached_s:.3f} |")
    print(f"\nengine start from the cache in a fresh process (python start and imports included): {fresh:.2f} s\n")


def fuzz(vocab: Path, env: dict, seed: int, budget: float, native: bool, work: Path) -> dict:
    from verify.adversarial.fuzz.atheris_target import atheris_stats

    options = {"features": "magic", **({"coverage": 1} if native else {})}
    out = work / f"fuzz-{seed}-{'native' if native else 'python'}"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "verify.cli", "fuzz", "--atheris", "--reference", spec(vocab),
                           "--candidate", spec(vocab, **options), "--seed", str(seed), "--budget", str(budget),
                           "--out", str(out)], cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"verify fuzz --atheris exited {proc.returncode}: {proc.stderr.strip()}")
    stats = atheris_stats(out / "atheris.log")
    return {"found": proc.returncode == 1 and stats["crashed"], "executions": stats["executions"],
            "seconds": seconds, "counters": stats["loaded_counters"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3", help="libFuzzer seeds, comma-separated (default 1,2,3)")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds of fuzzing per run (default 300)")
    parser.add_argument("--cache", type=Path, help="build cache (default: a new, empty one: builds are cold)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-native-") as tmp:
        work = Path(tmp)
        env = environment(work, args.cache or work / "cache")
        vocab = work / "vocab.hex"
        if args.cache is None:
            build_times(vocab)
        print("| seed | native: found | executions | s | Python only: found | executions | s | ratio |\n"
              "|---|---|---|---|---|---|---|---|")
        results = []
        for seed in seeds:
            native = fuzz(vocab, env, seed, args.budget, True, work)
            python = fuzz(vocab, env, seed, args.budget, False, work)
            results.append((native, python))
            ratio = (f"{python['executions'] / native['executions']:.1f}x" if native["found"] and python["found"]
                     else f">= {python['executions'] / native['executions']:.1f}x (never found without)"
                     if native["found"] else "-")
            print(f"| {seed} | {native['found']} | {native['executions']:,} | {native['seconds']:.0f} | "
                  f"{python['found']} | {python['executions']:,} | {python['seconds']:.0f} | {ratio} |", flush=True)
        found = [n for n, _ in results if n["found"]]
        print(f"\nnative coverage: found in {len(found)}/{len(results)} seeds within {args.budget:g} s; "
              f"median {statistics.median(n['executions'] for n in found) if found else 0:,.0f} executions; "
              f"native counters loaded: {results[0][0]['counters']} (without coverage: {results[0][1]['counters']})")
        print(f"Python coverage only: found in {sum(p['found'] for _, p in results)}/{len(results)} seeds; "
              f"median {statistics.median(p['executions'] for _, p in results):,.0f} executions per run")
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
