"""Recall of `verify unicode` on realistic planted table faults, every supported pattern.

For each (vocabulary, class, table): the real reference's ranks and pattern with one
class rewritten from another Unicode version (or another whitespace definition);
a sample of the changed code points; which of them a random battery of contexts
reveals at all; and the share of those the sweep reports. Prints a Markdown table.

    python bench/bench_unicode_recall.py [--sample 300] [--contexts 300] [--only cl100k_base] [--packing joined]
"""

from __future__ import annotations

import argparse

from verify.adversarial.unicode.table_recall import faults, found_share, measure
from verify.reports.md_templates import render


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--contexts", type=int, default=300)
    parser.add_argument("--only", action="append", help="vocabularies to measure (repeatable)")
    parser.add_argument("--misses", action="store_true", help="list missed code points")
    parser.add_argument("--packing", default="auto", choices=("auto", "joined"),
                        help="joined: the packing engines without special tokens get")
    args = parser.parse_args()
    results = []
    print(render("table_recall.md.j2", header=True, results=[]).rstrip())
    for fault in faults():
        if args.only and fault.vocab not in args.only:
            continue
        result = measure(fault, sample=args.sample, contexts=args.contexts, packing=args.packing)
        results.append(result)
        print(render("table_recall.md.j2", header=False, results=[result]).rstrip(), flush=True)
        if args.misses and result.missed:
            print("  missed:", " ".join(f"U+{c:04X}" for c in result.missed[:40]))
    share = found_share(results)
    blind = [r for r in results if r.recall is None]
    print(f"\noverall: {'n/a' if share is None else f'{share:.2%}'} of the observable changed code points found "
          f"({sum(len(r.observable) for r in results)} observable in {len(results)} planted faults; "
          f"{len(blind)} faults with nothing observable, not counted)")


if __name__ == "__main__":
    main()
