"""The `verify` command line. Exit codes are decided here and in the command
modules' return values, nowhere else:

  0  every sample verified
  1  a divergence, error, crash or timeout was found (or samples were skipped)
  2  usage or configuration error (unknown engine, missing file, bad vocabulary hash, ...), or no
     space left on the disk (free some, then ``--resume``: what was committed is kept)
  3  a bug in the harness itself (an unexpected exception), with one line saying so
130  interrupted (Ctrl-C; a command started with SIGINT ignored still takes it)
143  terminated by SIGTERM (what was committed stays, as after Ctrl-C)

Every message is one line (a library's multi-line message is folded), and no process the
command started outlives it (``verify.reaper``), however it ends (``verify.interrupts``).
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys

from verify import __version__, interrupts, reaper
from verify.commands import COMMANDS, EXIT_HARNESS_BUG, EXIT_USAGE, SubParser
from verify.errors import UsageError, VerifyError, one_line, storage_error


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with ``command`` (the one the arguments name), that command's in
    full and the others' names only, so a command imports its own module and not every other's
    (hypothesis, the sweeps, the gate): a start-up that every run, worker-free or not, pays."""
    parser = SubParser(prog="verify", description="Differential verification of LLM tokenizers.")
    parser.add_argument("--version", action="version", version=f"verify {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=SubParser, required=True)
    for name in COMMANDS:
        if command is None or name == command:
            _module(name).add_parser(sub)
        else:
            sub.add_parser(name)  # named, so that the choices are the same; never what parses here
    return parser


def check_finite(args: argparse.Namespace) -> None:
    """No option takes nan or inf (argparse's ``float`` accepts both): one line, exit 2.
    Ranges are each command's to check."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, float) and not math.isfinite(v):
                raise UsageError(f"--{name.replace('_', '-')} must be a finite number, got {v}")


def check_decodable(argv: list[str]) -> None:
    """An argument whose bytes are not UTF-8 (a file name in another encoding) reaches Python with
    lone surrogates, which no report or manifest can hold: one line, exit 2."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{ascii(arg)} is not UTF-8: verify takes UTF-8 paths and text") from None


def _module(name: str):
    return importlib.import_module(f"verify.commands.{name}")


def main(argv: list[str] | None = None) -> int:
    with interrupts.handled():
        try:
            with reaper.run_scope():
                return _main(argv)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (interrupts.Terminated), also during the sweep
            print(interrupts.line_for(exc), file=sys.stderr)
            return interrupts.exit_code(exc)


def _main(argv: list[str] | None) -> int:
    try:
        argv = list(sys.argv[1:] if argv is None else argv)
        check_decodable(argv)
        args = build_parser(argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
        check_finite(args)
        args.argv = argv  # recorded in manifests as the command that ran
        return _module(args.command).run(args)
    except VerifyError as exc:
        print(f"verify: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug in verify itself: still one line unless asked for more
        refused = storage_error(exc)
        if refused is not None:  # not a bug: the disk is full, read-only, or not ours to write
            print(f"verify: error: {refused}", file=sys.stderr)
            return EXIT_USAGE
        if os.environ.get("VERIFY_DEBUG"):
            raise
        print(f"verify: harness bug: {one_line(f'{type(exc).__name__}: {exc}')} (set VERIFY_DEBUG=1 for a "
              "traceback; please report it)", file=sys.stderr)
        return EXIT_HARNESS_BUG


if __name__ == "__main__":
    sys.exit(main())
