"""Typed errors. Everything below the CLI raises these; the CLI maps them to
one stderr line and an exit code (see ``verify.cli``)."""


class VerifyError(Exception):
    """Base class: a problem the user can fix. Its message is the one line shown."""


class UsageError(VerifyError):
    """Bad command-line usage or conflicting options."""


class ConfigError(VerifyError):
    """A bad engine spec, TOML file, or option value."""


class UnknownEngineError(ConfigError):
    """An engine spec names an adapter or engine that does not exist."""


class EngineUnavailableError(ConfigError):
    """The adapter exists but its package is not installed (message carries the install hint)."""


class VocabError(VerifyError):
    """A vocabulary cannot be found, fetched, or fails its pinned SHA-256."""


class CorpusError(VerifyError):
    """A corpus is missing, unreadable, corrupt, or not valid UTF-8."""
