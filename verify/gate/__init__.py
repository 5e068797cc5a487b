"""The nightly gate (``verify gate SUITE.toml``): a suite of checks over candidate engines,
judged against an allowlist and the previous night's results.

    suite.py    the suite file: [gate] and [[check]] rows, checked before anything runs
    checks.py   one check through the existing command code into OUT/checks/NAME/
    collect.py  the clusters a finished check found, from its committed files
    verdict.py  allowlist and baseline rules -> gate.json
    runner.py   the whole gate: OUT, --resume, gate.json, junit.xml and the reports
"""
