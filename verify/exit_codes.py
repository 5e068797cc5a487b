"""The one table of exit codes every command, the gate and the pytest plugin return.

0 nothing wrong, 1 findings (a gate's verdict "fail"), 2 bad input or configuration (one line),
3 a harness bug, 130/143 interrupted by SIGINT/SIGTERM (what was committed stays resumable).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1
    USAGE = 2
    HARNESS_BUG = 3
    INTERRUPTED = 130
    TERMINATED = 143
