"""Time the Unicode-table sweep of one engine pair.

    python bench/bench_unicode_sweep.py                       # tiktoken:cl100k_base vs hf:cl100k_base, full range
    python bench/bench_unicode_sweep.py --pack 1 --compare    # also check packed == probe-by-probe
    python bench/bench_unicode_sweep.py --stop 0x20000 --pack 4 --pack 12 --pack 32
    python bench/bench_unicode_sweep.py --isolate --stop 0x20000  # engines in workers, as `verify unicode` runs them

Prints, per run: wall seconds, code points/s, probes/s, the mismatch count and
the attributed Unicode version. With several --pack values (or --compare,
which adds pack=1) it checks that every run finds the same mismatches.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verify.adversarial.unicode_contexts import MAX_CP  # noqa: E402
from verify.adversarial.unicode_sweep import sweep  # noqa: E402
from verify.executors.pool import EngineOptions, EnginePool  # noqa: E402
from verify.reports.unicode import write_unicode_report  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", default="tiktoken:cl100k_base")
    p.add_argument("--candidate", default="hf:cl100k_base")
    p.add_argument("--start", type=lambda s: int(s, 0), default=0)
    p.add_argument("--stop", type=lambda s: int(s, 0), default=MAX_CP + 1)
    p.add_argument("--pack", type=int, action="append", help="code points per packed sample (repeatable)")
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--serial", action="store_true", help="encode with one engine, then the other (no overlap)")
    p.add_argument("--isolate", action="store_true", help="engines in their own workers (verify unicode's default)")
    p.add_argument("--compare", action="store_true", help="also run pack=1 and check the results agree")
    p.add_argument("--out", type=Path, help="write unicode.json / unicode.md of the first run here")
    args = p.parse_args(argv)

    with EnginePool(EngineOptions(isolate=args.isolate)) as pool:
        t = time.perf_counter()
        ref, cand = pool.start([args.reference, args.candidate])
        print(f"engines loaded in {time.perf_counter() - t:.2f} s ({'isolated' if args.isolate else 'in-process'}): "
              f"{ref.spec} vs {cand.spec}")
        packs = args.pack or [12]
        if args.compare and 1 not in packs:
            packs.append(1)
        results = []
        for pack in packs:
            t = time.perf_counter()
            r = sweep(ref, cand, pack=pack, batch_size=args.batch_size, start=args.start, stop=args.stop,
                      parallel=not args.serial)
            dt = time.perf_counter() - t
            results.append(r)
            print(f"pack={pack:<3} {dt:7.2f} s  {r.code_points / dt:>10,.0f} code points/s  "
                  f"{r.probes / dt:>12,.0f} probes/s  mismatched={r.count} in {len(r.mismatched)} ranges  "
                  f"unicode_version={r.unicode_version} explained={r.explained:.2f} whitespace={r.whitespace} "
                  f"pack_only={len(r.pack_only)} errors={len(r.errors)}")
    if args.out:
        j, m = write_unicode_report(results[0], args.out)
        print(f"wrote {j} and {m}")
    same = all(r.mismatched == results[0].mismatched for r in results)
    if len(results) > 1:
        print("all runs agree" if same else "RUNS DISAGREE: " + str([r.mismatched[:5] for r in results]))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
