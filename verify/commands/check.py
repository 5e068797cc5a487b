"""`verify check`: metamorphic checks of one engine, no reference needed.

Properties (see ``verify.adversarial.metamorphic``): repeat, history (fresh vs
warmed engine), batch vs single, 1 vs 4 threads, decode roundtrip (byte-level
engines that can decode). Writes ``OUT/divergences.jsonl`` (one finding per
violation, with a ``check`` field) and ``OUT/check.json``.

Exit codes as for ``verify run``: 0 no violation, 1 a violation or an engine
error, 2 usage or configuration error.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path

from verify.commands import EXIT_FINDINGS, EXIT_OK
from verify.commands.options import add_corpus_options, default_out
from verify.errors import CorpusError, UsageError

DEFAULT_CORPUS = "smoke"


def add_parser(sub) -> None:
    from verify.adversarial.metamorphic import CHECKS

    p = sub.add_parser("check", help="metamorphic checks of one engine (no reference needed)")
    p.add_argument("--engine", required=True, metavar="SPEC", help="the engine to check (ADAPTER:VOCAB or a name)")
    add_corpus_options(p, DEFAULT_CORPUS)
    p.add_argument("--limit", type=int, metavar="N", help="stop after N samples per corpus")
    p.add_argument("--batch-size", type=int, default=32, metavar="N")
    p.add_argument("--check", action="append", choices=CHECKS, help="only these checks (repeatable; default all)")
    p.add_argument("--no-roundtrip", action="store_true", help="skip the decode roundtrip check")
    p.add_argument("--out", type=Path, help="report directory (default reports/check-TIMESTAMP)")


def run(args) -> int:
    from verify.adversarial.metamorphic import CHECKS, check_samples
    from verify.corpora import open_corpus
    from verify.engines import build_engine
    from verify.findings import FindingWriter

    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    sources = [open_corpus(c, args.text_field, args.id_field) for c in args.corpus or [DEFAULT_CORPUS]]
    fresh = build_engine(args.engine)
    warm = build_engine(args.engine)  # a second instance: its history differs from the fresh one's
    out = args.out or default_out("check")
    out.mkdir(parents=True, exist_ok=True)
    writer = FindingWriter(out)
    checks = tuple(args.check or CHECKS)
    started = time.time()
    totals = None
    try:
        for source in sources:
            samples = source.samples()
            if args.limit is not None:
                samples = itertools.islice(samples, args.limit)
            checker = check_samples(fresh, warm, samples, writer, source.name, batch_size=args.batch_size,
                                    checks=checks, roundtrip=False if args.no_roundtrip else None)
            if totals is None:
                totals = checker.counts
                roundtrip = checker.roundtrip
            else:
                c = checker.counts
                totals.samples += c.samples
                totals.chars += c.chars
                totals.errors += c.errors
                for k in CHECKS:
                    totals.checked[k] += c.checked[k]
                    totals.violations[k] += c.violations[k]
    finally:
        writer.close()
        identity = None
        try:
            identity = fresh.identity().as_dict()
        except Exception as exc:
            identity = {"spec": args.engine, "identity_error": f"{type(exc).__name__}: {exc}"}
        for engine in (fresh, warm):
            engine.close()
    if totals is None or totals.samples == 0:
        raise CorpusError(f"the corpus produced no samples ({', '.join(args.corpus or [DEFAULT_CORPUS])})")
    report = {
        "schema": "verify.check/1",
        "argv": sys.argv[1:],
        "engine": identity,
        "checks": list(checks),
        "roundtrip_checked": bool(roundtrip) and "roundtrip" in checks,
        "sources": [s.describe() for s in sources],
        "started": started,
        "finished": time.time(),
        "counts": totals.as_dict(),
    }
    (out / "check.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    viol = ", ".join(f"{k} {totals.violations[k]}/{totals.checked[k]}" for k in checks
                     if totals.checked[k] or totals.violations[k])
    print(f"{args.engine}: {totals.samples} samples, {totals.chars} chars: "
          f"{totals.total_violations} violations ({viol or 'nothing checked'}), {totals.errors} errors -> {out}")
    return EXIT_OK if totals.clean else EXIT_FINDINGS
