"""Claude Code session logs (``--format claude-code``): ``~/.claude/projects/<dir>/<session>.jsonl``
(and subagent files beside them), one JSON record per line.

Records used: ``type`` ``user`` / ``assistant`` (a ``message`` with ``role`` and
``content``) and ``system`` (links of the chain; ``subtype: "compact_boundary"`` marks a
compaction). Every such record has a ``uuid`` and a ``parentUuid`` (null for a root);
``isSidechain`` marks subagent records. Other types (``summary``,
``file-history-snapshot``, ``queue-operation``, unknown ones) are not part of the
conversation and are skipped.

- **Chains.** The main chain is the path from the last non-sidechain leaf (in file
  order) back to its root; branches left by a rewind are not replayed. Each sidechain
  root (a sidechain record whose parent is absent or not a sidechain record) gives its
  own session, along the path to its last leaf.
- **Compaction.** A ``compact_boundary`` record starts a new session: the boundary is a
  root, its ``logicalParentUuid`` leads back to the pre-compaction chain, which is
  replayed as the session before it. A ``user`` record with ``isCompactSummary: true``
  starts a new session too (the summary is its first message), boundary or not.
- **Messages.** Consecutive ``assistant`` records with the same ``message.id`` are one
  message (their content blocks joined in order). A ``user`` record whose content is
  only ``tool_result`` blocks is a ``tool`` message; other ``user`` records are ``user``
  messages. ``system`` records are no messages. Each message is one turn.
- **Blocks to text.** ``content`` is a string or a list of blocks, each rendered and
  joined with a newline: ``text`` -> its text; ``thinking`` -> its ``thinking`` text;
  ``redacted_thinking`` -> nothing; ``tool_use`` -> ``{"input": ..., "name": ...}``
  (JSON, sorted keys, non-ASCII kept); ``tool_result`` -> its ``content`` (a string, or
  blocks rendered the same way); ``image`` / ``document`` -> ``[image]`` / ``[document]``;
  any other block -> its JSON.

Session ids are ``FILE:LINE`` of the session's first message record. A line that is no
JSON object, a used record without a string ``uuid``, a repeated ``uuid``, or a
message whose content breaks these rules is a bad record (the rest of the file goes
on); so is a cycle in ``parentUuid``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from verify.corpora.traces.importing import Invalid, json_lines, json_text, require_text, session_or_bad
from verify.session_trace import SessionTrace
from verify.corpora.traces.templates import Message, shard_template
from verify.sample import BadRecord

CHAIN_TYPES = ("user", "assistant", "system")
COMPACT_BOUNDARY = "compact_boundary"


@dataclass
class _Record:
    line: int
    uuid: str
    parent: str | None
    kind: str  # user | assistant | system
    sidechain: bool
    role: str = ""  # for user/assistant: user, tool or assistant
    text: str = ""
    message_id: str | None = None
    boundary: bool = False
    logical_parent: str | None = None
    compact_summary: bool = False
    children: list[str] = field(default_factory=list)


def render_block(block) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise Invalid("a content block must be an object with a string 'type'")
    kind = block["type"]
    if kind == "text":
        return require_text(block.get("text"), "text block 'text'")
    if kind == "thinking":
        return require_text(block.get("thinking"), "thinking block 'thinking'")
    if kind == "redacted_thinking":
        return ""
    if kind == "tool_use":
        return json_text({"name": block.get("name"), "input": block.get("input")})
    if kind == "tool_result":
        return render_content(block.get("content"), allow_null=True)
    if kind in ("image", "document"):
        return f"[{kind}]"
    return json_text(block)


def render_content(content, allow_null: bool = False) -> str:
    if content is None and allow_null:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Invalid("'content' must be a string or a list of blocks")
    return "\n".join(text for text in (render_block(b) for b in content) if text)


def _record(lineno: int, doc: dict) -> _Record:
    uuid, parent = doc.get("uuid"), doc.get("parentUuid")
    if not isinstance(uuid, str) or not uuid:
        raise Invalid(f"a '{doc['type']}' record needs a string 'uuid'")
    if parent is not None and not isinstance(parent, str):
        raise Invalid("'parentUuid' must be a string or null")
    rec = _Record(lineno, uuid, parent or None, doc["type"], doc.get("isSidechain") is True)
    if rec.kind == "system":
        rec.boundary = doc.get("subtype") == COMPACT_BOUNDARY
        logical = doc.get("logicalParentUuid")
        rec.logical_parent = logical if isinstance(logical, str) and logical else None
        return rec
    message = doc.get("message")
    if not isinstance(message, dict):
        raise Invalid(f"a '{rec.kind}' record needs a 'message' object")
    content = message.get("content")
    rec.text = render_content(content)
    if rec.kind == "assistant":
        rec.role = "assistant"
        rec.message_id = message.get("id") if isinstance(message.get("id"), str) else None
    else:
        only_results = isinstance(content, list) and content and all(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        rec.role = "tool" if only_results else "user"
        rec.compact_summary = doc.get("isCompactSummary") is True
    return rec


def _load(path: Path, bad: list[BadRecord]) -> tuple[dict[str, _Record], list[_Record]]:
    records: dict[str, _Record] = {}
    order: list[_Record] = []
    for line in json_lines(path):
        if isinstance(line, BadRecord):
            bad.append(line)
            continue
        lineno, position, doc, raw = line
        if doc.get("type") not in CHAIN_TYPES:
            continue
        try:
            rec = _record(lineno, doc)
        except Invalid as exc:
            bad.append(BadRecord(position, str(exc), raw[:200]))
            continue
        if rec.uuid in records:
            bad.append(BadRecord(position, f"uuid {rec.uuid} repeats line {records[rec.uuid].line}",
                                 raw[:200]))
            continue
        records[rec.uuid] = rec
        order.append(rec)
    for rec in order:
        if rec.parent in records:
            records[rec.parent].children.append(rec.uuid)
    return records, order


def _chain(leaf: _Record, records: dict[str, _Record], path: Path, bad: list[BadRecord]) -> list[_Record]:
    """Root-to-leaf, crossing compaction boundaries through ``logicalParentUuid``."""
    chain, seen, node = [], set(), leaf
    while node is not None:
        if node.uuid in seen:
            bad.append(BadRecord(f"{path}:{node.line}", f"parentUuid cycle through {node.uuid}"))
            break
        seen.add(node.uuid)
        chain.append(node)
        up = node.logical_parent if node.boundary and node.parent is None else node.parent
        node = records.get(up) if up else None
        if node is not None and node.sidechain != leaf.sidechain:
            break  # a sidechain's root hangs off the main chain
    return chain[::-1]


def _sessions(chain: list[_Record]) -> list[list[_Record]]:
    """The chain cut at compactions; system records dropped."""
    sessions: list[list[_Record]] = [[]]
    for rec in chain:
        if rec.boundary or (rec.compact_summary and sessions[-1]):
            sessions.append([])
        if rec.kind != "system":
            sessions[-1].append(rec)
    return [s for s in sessions if s]


def _messages(records: list[_Record]) -> list[Message]:
    messages: list[Message] = []
    previous: _Record | None = None
    for rec in records:
        if (previous is not None and rec.role == "assistant" and previous.role == "assistant"
                and rec.message_id is not None and rec.message_id == previous.message_id):
            merged = "\n".join(t for t in (messages[-1].content, rec.text) if t)
            messages[-1] = Message("assistant", merged)
        else:
            messages.append(Message(rec.role, rec.text))
        previous = rec
    return messages


def _last_leaf(candidates: list[_Record], records: dict[str, _Record], sidechain: bool) -> _Record | None:
    leaves = [r for r in candidates if not any(records[c].sidechain == sidechain for c in r.children)]
    return leaves[-1] if leaves else None


def read(path: Path, shard=None) -> Iterator[SessionTrace | BadRecord]:
    template = shard_template(shard)
    bad: list[BadRecord] = []
    records, order = _load(path, bad)
    chains: list[list[_Record]] = []
    main = _last_leaf([r for r in order if not r.sidechain], records, False)
    if main is not None:
        chains.append(_chain(main, records, path, bad))
    roots = [r for r in order if r.sidechain and not (r.parent in records and records[r.parent].sidechain)]
    for root in roots:
        below, stack = [], [root.uuid]
        while stack:  # every sidechain record under this root
            rec = records[stack.pop()]
            below.append(rec)
            stack.extend(c for c in rec.children if records[c].sidechain)
        leaf = _last_leaf(sorted(below, key=lambda r: r.line), records, True)
        if leaf is not None:
            chains.append(_chain(leaf, records, path, bad))
    yield from bad  # the file's bad lines, then any cycle found while walking
    for chain in chains:
        for session in _sessions(chain):
            yield from session_or_bad(template, f"{path}:{session[0].line}", _messages(session),
                                      f"{path}:{session[0].line}")
