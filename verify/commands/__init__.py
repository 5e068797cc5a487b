"""One module per subcommand, each with ``add_parser(subparsers)`` and ``run(args) -> exit code``.

To add a command: write ``verify/commands/NAME.py`` and list it in ``COMMANDS`` below.
"""

import argparse

from verify.errors import UsageError
from verify.exit_codes import ExitCode

# The commands' names for the one table (verify/exit_codes.py).
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_HARNESS_BUG, EXIT_INTERRUPTED = (
    ExitCode.OK, ExitCode.FINDINGS, ExitCode.USAGE, ExitCode.HARNESS_BUG, ExitCode.INTERRUPTED)

COMMANDS = ["run", "replay", "triage", "ledger", "sweep", "engines", "vocab", "unicode", "length", "fuzz", "recheck", "check", "selftest", "report", "gate", "shadow", "certify"]


class SubParser(argparse.ArgumentParser):
    """argparse's parser with its errors as one line (a ``UsageError``, exit 2), not argparse's
    usage block; every command and sub-command parser is one of these."""

    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")
