"""Regular expressions a user writes -- allowlist rows (``engine``, ``cluster``), tag rules
(``engine``, ``signature``) -- run in linear time, never a hang.

Python's ``re`` backtracks: ``^(.+)+Q$`` on a long key takes exponential time, in a C loop a
signal handler cannot enter. RE2 (``google-re2``) matches in time linear in the text for every
pattern, so a user's regex costs microseconds whatever it says. RE2 has no backreferences
and no look-around; a pattern that needs them is one ``ConfigError`` line naming where it
is written (``\\Z`` is RE2's ``\\z``).

    pattern = compile_user("^ids/Sm\\\\+", "allowlist x.toml: [[allow]] row 2", "cluster")
    pattern.search(key)          # a match object or None, as re's
    pattern.pattern              # the text as written
"""

from __future__ import annotations

from typing import Any

from verify.errors import ConfigError


def _options():
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own message on stderr: the ConfigError says it once
    return options


def compile_user(pattern: Any, where: str, name: str):
    """A compiled pattern with ``search`` and ``pattern``; ``ConfigError`` for a non-string or a pattern
    RE2 cannot take (``where``: the file and row, ``name``: the key)."""
    if not isinstance(pattern, str):
        raise ConfigError(f"{where}: '{name}' must be a string regex")
    import re2

    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ConfigError(f"{where}: bad '{name}' regex {pattern!r}: {detail} (regexes run on RE2, in linear time: "
                          "no backreferences or look-around)") from None
