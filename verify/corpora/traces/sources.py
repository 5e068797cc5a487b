"""Trace sources: ``--traces PATH|agent:SEED`` with ``--format``, listed as shards.

A trace file (or every trace file under a directory or glob) is one shard of kind
``traces`` (its format in ``Shard.extra["format"]``); ``agent:SEED`` is the
generated agent-session corpus, shards of kind ``agent`` over session index ranges.
Formats that hold messages rather than segments render them with a chat template
(``Shard.extra["template"]``: the one named, else the reference's; docs/traces.md).
Readers yield ``SessionTrace`` records, or ``BadRecord`` for what cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

from verify.corpora.shards import Shard
from verify.corpora.source import Source
from verify.errors import ConfigError, CorpusError

TRACE_KINDS = ("traces", "agent")
# format name -> (module with ``read(path, shard) -> Iterator[SessionTrace | BadRecord]``, file suffixes)
_CHAT_FILES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".parquet")
TRACE_FORMATS: dict[str, tuple[str, tuple[str, ...]]] = {
    "verify": ("verify.corpora.traces.verify_format", (".jsonl", ".jsonl.gz", ".jsonl.zst")),
    "claude-code": ("verify.corpora.traces.claude_code", (".jsonl",)),
    "codex": ("verify.corpora.traces.codex", (".jsonl", ".jsonl.zst", ".jsonl.gz")),
    "sharegpt": ("verify.corpora.traces.sharegpt", _CHAT_FILES),
    "openai": ("verify.corpora.traces.openai_messages", _CHAT_FILES),
    "tracelab": ("verify.corpora.traces.tracelab", (".jsonl", ".jsonl.gz", ".jsonl.zst")),
}
TEMPLATED_FORMATS = ("claude-code", "codex", "sharegpt", "openai", "tracelab")  # rendered by a chat template
AGENT_SESSIONS_PER_SHARD = 4


def reader(fmt: str) -> Callable[[Path, Shard], Iterator]:
    import importlib

    if fmt not in TRACE_FORMATS:
        raise ConfigError(f"unknown trace format '{fmt}' (known: {', '.join(sorted(TRACE_FORMATS))})")
    return importlib.import_module(TRACE_FORMATS[fmt][0]).read


def read_trace_shard(shard: Shard) -> Iterator:
    if shard.kind == "agent":
        from verify.corpora.traces.agent import generate_sessions

        seed, sessions = shard.extra["seed"], shard.extra["sessions"]
        return generate_sessions(seed, range(shard.start, shard.stop), sessions, shard.extra.get("template"))
    return reader(shard.extra["format"])(Path(shard.path), shard)


def _files(value: str, suffixes: tuple[str, ...]) -> list[Path]:
    path = Path(value).expanduser()
    if path.is_file():
        return [path]
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes))
    else:
        import glob

        found = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
    if not found:
        raise CorpusError(f"traces not found: {value} (no {'/'.join(suffixes)} files)")
    return found


def open_traces(value: str, fmt: str | None = None, *, template: str | None = None,
                reference: str | None = None) -> Source:
    """``agent:SEED[:SESSIONS]`` or trace files in ``fmt`` (default ``verify``). Formats other
    than ``verify`` (and the agent corpus) render turns with ``template`` (a name or a .toml
    path), else the chat template of ``reference``'s vocabulary (docs/traces.md)."""
    from verify.corpora.traces.templates import choose_template

    if value == "agent" or value.startswith("agent:"):
        parts = value.split(":")[1:]
        if not all(p.isdigit() for p in parts) or len(parts) > 2:
            raise ConfigError(f"agent traces are agent:SEED[:SESSIONS], got '{value}'")
        seed = int(parts[0]) if parts else 0
        sessions = int(parts[1]) if len(parts) > 1 else 40
        from verify.corpora.traces.agent import describe

        chat = choose_template(template, reference)
        shards = [Shard(value, "agent", start=a, stop=min(a + AGENT_SESSIONS_PER_SHARD, sessions),
                        extra={"seed": seed, "sessions": sessions, "template": chat.source})
                  for a in range(0, sessions, AGENT_SESSIONS_PER_SHARD)]
        return Source(value, {"kind": "agent-traces", **describe(seed, sessions, chat.source)}, shards)
    fmt = fmt or "verify"
    reader(fmt)  # an unknown format fails before any file is listed
    files = _files(value, TRACE_FORMATS[fmt][1])
    extra: dict = {"format": fmt}
    described: dict = {"kind": "traces", "format": fmt, "files": [str(p) for p in files]}
    if fmt in TEMPLATED_FORMATS:
        chat = choose_template(template, reference)
        extra["template"] = chat.source
        described["template"] = chat.identity()
    shards = [Shard(value, "traces", path=str(p), extra=dict(extra)) for p in files]
    return Source(value, described, shards)
