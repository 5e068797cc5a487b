"""Time one full Unicode sweep (every code point, isolated engines) per reference vocabulary.

For each reference vocabulary, one candidate that loads it (a second faithful
implementation where one exists): engines in their own workers as `verify unicode`
runs them, all 1,112,064 code points with the vocabulary's own probes. Prints a
Markdown table: probes, packing, seconds (engine start-up excluded), mismatches.

    python bench/bench_unicode_sweep.py                     # every pair below
    python bench/bench_unicode_sweep.py --only cl100k_base  # one of them
    python bench/bench_unicode_sweep.py --in-process        # engines in this process
"""

from __future__ import annotations

import argparse
import time

from verify.adversarial.unicode.sweep import sweep
from verify.executors.pool import EngineOptions, EnginePool

PAIRS = {
    "cl100k_base": ("tiktoken:cl100k_base", "hf:cl100k_base"),
    "o200k_base": ("tiktoken:o200k_base", "hf:o200k_base"),
    "p50k_base": ("tiktoken:p50k_base", "hf:p50k_base"),
    "deepseek-v3": ("hf:deepseek-v3", "toktier:deepseek-v3"),
    "anthropic": ("hf:anthropic", "toktier:anthropic"),
    "tekken": ("tekken:tekken", "kitoken:tekken"),
    "mistral-spm-v3": ("sentencepiece:mistral-spm-v3", "kitoken:mistral-spm-v3"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="vocabularies (repeatable)")
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    print("| vocabulary | reference | candidate | engines | probes | packing | seconds | probes/s | mismatching |")
    print("|---|---|---|---|---|---|---|---|---|")
    for vocab, (ref_spec, cand_spec) in PAIRS.items():
        if args.only and vocab not in args.only:
            continue
        with EnginePool(EngineOptions(isolate=not args.in_process)) as pool:
            ref, cand = pool.start([ref_spec, cand_spec])
            t0 = time.perf_counter()
            r = sweep(ref, cand)
            seconds = time.perf_counter() - t0
        print(f"| {vocab} | `{ref_spec}` | `{cand_spec}` | {'in-process' if args.in_process else 'isolated'} | "
              f"{r.probes:,} | {r.packing} | {seconds:.1f} | {r.probes / seconds:,.0f} | {r.count:,} |", flush=True)


if __name__ == "__main__":
    main()
