"""Trace sources: ``--traces PATH|agent:SEED`` with ``--format``, listed as shards.

A trace file (or every trace file under a directory or glob) is one ``TraceShard`` (kind
``traces``, its ``format``); ``agent:SEED`` is the generated agent-session corpus, cut
into ``AgentShard``s (kind ``agent``) over session index ranges. Both are ``SessionShard``s:
their records are sessions, replayed turn by turn. Formats that hold messages rather than
segments render them with a chat template (the shard's ``template``: the one named, else
the reference's; docs/traces.md). Readers yield ``SessionTrace`` records, or ``BadRecord``
for what cannot be read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from verify.corpora.shards import Shard
from verify.corpora.source import Source
from verify.corpora.traces.agent import describe, generate_sessions
from verify.corpora.traces.templates import choose_template
from verify.errors import ConfigError, CorpusError

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


@dataclass(frozen=True, kw_only=True)
class SessionShard(Shard):
    """A shard whose records are sessions (``SessionTrace``), replayed turn by turn;
    ``template``: the chat template that renders their messages (its name or .toml path)."""

    template: str | None = None


@dataclass(frozen=True, kw_only=True)
class TraceShard(SessionShard):
    """One trace file in ``format``. (The document leaves ``template`` out for a format
    that needs none.)"""

    kind = "traces"
    path: str
    format: str

    @property
    def base_id(self) -> str:
        return self.path

    def read(self) -> Iterator:
        return reader(self.format)(Path(self.path), self)

    def _extra(self) -> dict:
        return {"format": self.format, **({"template": self.template} if self.template is not None else {})}


@dataclass(frozen=True, kw_only=True)
class AgentShard(SessionShard):
    """Sessions ``start`` to ``stop - 1`` of the ``sessions`` of agent corpus ``seed``."""

    kind = "agent"
    start: int
    stop: int
    seed: int = 0
    sessions: int

    @property
    def base_id(self) -> str:
        return f"agent:{self.seed}[{self.start}:{self.stop}]"

    def read(self) -> Iterator:
        return generate_sessions(self.seed, range(self.start, self.stop), self.sessions, self.template)


TRACE_KINDS = (TraceShard.kind, AgentShard.kind)


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
    if value == "agent" or value.startswith("agent:"):
        parts = value.split(":")[1:]
        if not all(p.isdigit() for p in parts) or len(parts) > 2:
            raise ConfigError(f"agent traces are agent:SEED[:SESSIONS], got '{value}'")
        seed = int(parts[0]) if parts else 0
        sessions = int(parts[1]) if len(parts) > 1 else 40
        chat = choose_template(template, reference)
        shards = [AgentShard(value, start=a, stop=min(a + AGENT_SESSIONS_PER_SHARD, sessions), seed=seed,
                             sessions=sessions, template=chat.source)
                  for a in range(0, sessions, AGENT_SESSIONS_PER_SHARD)]
        return Source(value, {"kind": "agent-traces", **describe(seed, sessions, chat.source)}, shards)
    fmt = fmt or "verify"
    reader(fmt)  # an unknown format fails before any file is listed
    files = _files(value, TRACE_FORMATS[fmt][1])
    chosen: str | None = None
    described: dict = {"kind": "traces", "format": fmt, "files": [str(p) for p in files]}
    if fmt in TEMPLATED_FORMATS:
        chat = choose_template(template, reference)
        chosen = chat.source
        described["template"] = chat.identity()
    shards = [TraceShard(value, path=str(p), format=fmt, template=chosen) for p in files]
    return Source(value, described, shards)
