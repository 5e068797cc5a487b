"""One module per subcommand, each with ``add_parser(subparsers)`` and ``run(args) -> exit code``.

To add a command: write ``verify/commands/NAME.py`` and list it in ``COMMANDS`` below.
"""

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_HARNESS_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

COMMANDS = ["run", "replay", "triage", "ledger", "sweep", "engines", "vocab", "unicode", "length", "fuzz", "recheck", "check", "selftest", "report", "gate", "shadow", "certify"]
