"""Throughput of engines on large inputs, each checked against the reference: GPU route vs
CPU route vs reference (the device check, ``ci/device/check.sh``).

    python -m verify.device_bench --reference hf:deepseek-v3 \\
        --engine 'toktier:deepseek-v3?device=cuda' --engine toktier:deepseek-v3 \\
        --sizes 1000000,10000000 --out DIR

Each size is measured in two shapes: one document of that many characters, and
the same text cut into documents of about ``--doc-chars`` characters sent as one
batch. The text is the generated corpus (``generated:SEED``, seeds 0, 1, ...)
without documents holding a special-token look-alike, so an engine that routes
such inputs elsewhere (toktier sends them to its reference path) is timed on the
route it was asked for; what it actually ran is in its run notes. Every engine,
the reference included, encodes a 64 KiB warm-up input untimed (kernels, caches,
lazy loads), then each input ``--repeats`` times; the median is reported with
chars/s, tokens, and whether
its ids equal the reference's (``verify.outcome.agree``), so a fast wrong route
is never reported as a plain speed-up. Engines run in this process (no
isolation: the timing is the engine's own). Writes ``OUT/bench.json`` and
``OUT/bench.md``; exit 0, or 1 when an engine's ids differ from the reference's
or it failed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from verify import atomic
from verify.errors import VerifyError
from verify.outcome import agree, is_ids
from verify.reports.md_templates import render as render_md
from verify.sample import Sample

LOOKALIKES = ("<|", "<｜", "|>", "｜>", "<s>", "</s>", "[INST]", "<think>", "</think>")
DEFAULT_SIZES = (1_000_000, 10_000_000)


def corpus_text(chars: int, seed: int = 0) -> str:
    """``chars`` characters of generated documents (special-token look-alikes left out)."""
    from verify.corpora.generated.documents import generate

    parts, total = [], 0
    while total < chars:
        for sample in generate(seed):
            if not sample.is_plain or any(m in sample.text for m in LOOKALIKES):
                continue
            parts.append(sample.text)
            total += len(sample.text)
            if total >= chars:
                break
        seed += 1
    return "".join(parts)[:chars]


def cut(text: str, doc_chars: int) -> list[str]:
    """``text`` in pieces of about ``doc_chars`` characters, each ending after a space or newline."""
    pieces, start = [], 0
    while start < len(text):
        stop = min(len(text), start + doc_chars)
        while stop < len(text) and not text[stop - 1].isspace() and stop - start < 2 * doc_chars:
            stop += 1
        pieces.append(text[start:stop])
        start = stop
    return pieces


WARMUP_CHARS = 1 << 16


def measure(executor, samples: list[Sample], repeats: int) -> tuple[list[float], list]:
    times, outcomes = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        outcomes = executor.encode(samples)
        times.append(time.perf_counter() - started)
    return times, outcomes


def run_bench(reference: str, engines: list[str], sizes: list[int], repeats: int, doc_chars: int,
              seed: int, on_row=lambda result: None) -> dict:
    """Every engine on every input; ``on_row(result so far)`` after each measurement (so a
    run stopped by a time limit keeps what it measured)."""
    from verify.executors.pool import EngineOptions, EnginePool

    rows, text = [], corpus_text(max(sizes), seed)
    result = {"reference": reference, "engines": engines, "repeats": repeats, "seed": seed, "rows": rows,
              "identities": {}, "notes": {}}
    with EnginePool(EngineOptions(isolate=False)) as pool:
        executors = pool.start([reference, *engines])
        result["identities"] = pool.identities()
        for ex in executors:
            ex.encode([Sample.plain("bench:warm-up", text[:WARMUP_CHARS])])
        for size in sorted(sizes):
            docs = {"one document": [text[:size]], f"batch of ~{doc_chars}-char documents": cut(text[:size], doc_chars)}
            for shape, texts in docs.items():
                samples = [Sample.plain(f"bench:{size}:{i}", t) for i, t in enumerate(texts)]
                expected = None
                for ex in executors:
                    times, outcomes = measure(ex, samples, repeats)
                    if expected is None:
                        expected = outcomes
                    median = statistics.median(times)
                    rows.append({
                        "engine": ex.spec, "reference": ex.spec == reference, "shape": shape, "chars": size,
                        "documents": len(samples), "seconds": times, "median_s": median,
                        "chars_per_s": size / median if median else None,
                        "tokens": sum(int(o.size) for o in outcomes if is_ids(o)),
                        "failed": sum(1 for o in outcomes if not is_ids(o)),
                        "identical": all(agree(a, b) for a, b in zip(outcomes, expected)),
                    })
                    on_row(result)
        result["notes"] = pool.notes()
        return result


def render(result: dict) -> str:
    """bench.md (``verify/reports/templates/bench.md.j2``): a row per measurement, each engine's notes."""
    rows = [{**row, "mchars_per_s": row["chars_per_s"] / 1e6 if row["chars_per_s"] else None} for row in result["rows"]]
    return render_md("bench.md.j2", result=result, rows=rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m verify.device_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, metavar="SPEC")
    parser.add_argument("--engine", action="append", required=True, metavar="SPEC", help="repeatable")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        help="input sizes in characters, comma-separated (default 1000000,10000000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--doc-chars", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        parser.error(f"--sizes must be integers, got {args.sizes!r}")
    if not args.sizes or min(args.sizes) <= 0 or args.repeats < 1 or args.doc_chars < 1:
        parser.error("--sizes, --repeats and --doc-chars must be positive")
    return args


def write(out: Path, result: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / "bench.json", result, indent=1, default=str, ensure_ascii=True)
    atomic.write_text(out / "bench.md", render(result))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run_bench(args.reference, args.engine, args.sizes, args.repeats, args.doc_chars, args.seed,
                           on_row=lambda partial: write(args.out, partial))
    except VerifyError as exc:
        print(f"device_bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"device_bench: interrupted (what was measured is in {args.out})", file=sys.stderr)
        return 130
    write(args.out, result)
    print(f"device_bench: {len(result['rows'])} measurements -> {args.out / 'bench.md'}")
    wrong = [r for r in result["rows"] if not r["identical"] or r["failed"]]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
