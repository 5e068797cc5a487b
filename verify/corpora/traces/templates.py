"""Chat templates as data: how a message list becomes typed segments, turn by turn.

    template = load_template("deepseek-v3")          # corpora/templates/NAME.toml, or a .toml path
    template = template_for("hf:deepseek-v3")         # the template of a reference spec's vocabulary
    turns = template.render([Message("user", "hi"), Message("assistant", "hello")])
    trace = template.session("file.jsonl:3", messages)    # a SessionTrace, one turn per message

Each message appended is one turn: ``before`` (structure), the content (always
``allow_special=False``), ``after`` (structure); the session's first turn starts with
``begin``. Structure segments are ``allow_special=True`` unless the template says
``structure_allow_special = false``. The file format is in docs/traces.md ("Chat templates").
"""

from __future__ import annotations

import hashlib

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, NamedTuple

from verify.session_trace import SessionTrace, Turn, coalesce
from verify.engine_spec import EngineSpec
from verify.errors import ConfigError
from verify.toml_config import parse_toml
from verify.sample import Segment

TEMPLATE_DIR = "corpora/templates"
FALLBACK = "plain"
ROLE_KEYS = {"before", "after"}
TEMPLATE_KEYS = {"name", "description", "vocabularies", "structure_allow_special", "begin", "special_tokens",
                 "literals", "aliases", "roles"}


class Message(NamedTuple):
    role: str  # system, user, assistant, tool, or the source's own role name
    content: str


@dataclass(frozen=True)
class RoleFormat:
    before: str
    after: str


@dataclass(frozen=True)
class ChatTemplate:
    name: str
    description: str
    vocabularies: tuple[str, ...]
    structure_allow_special: bool
    begin: str
    special_tokens: tuple[str, ...]  # structure tokens that are special tokens of the vocabularies
    literals: tuple[str, ...]  # structure strings that look like special tokens but are plain text there
    aliases: tuple[tuple[str, str], ...]
    roles: tuple[tuple[str, RoleFormat], ...]
    source: str  # the name (built-in) or the path it was loaded from
    sha256: str

    def role_format(self, role: str) -> RoleFormat:
        role = dict(self.aliases).get(role, role)
        roles = dict(self.roles)
        fmt = roles.get(role) or roles["default"]
        return RoleFormat(fmt.before.replace("{role}", role), fmt.after.replace("{role}", role))

    def structure(self, text: str) -> Segment:
        return Segment(text, self.structure_allow_special)

    def message_segments(self, message: Message, first: bool = False) -> tuple[Segment, ...]:
        """One message as segments: [begin +] before, content, after (empty ones dropped)."""
        fmt = self.role_format(message.role)
        return coalesce((self.structure((self.begin if first else "") + fmt.before),
                         Segment(message.content, False), self.structure(fmt.after)))

    def render(self, messages: Iterable[Message]) -> list[tuple[Segment, ...]]:
        """Each message's segments, in order; a message that renders to nothing is left out."""
        turns = []
        for message in messages:
            segments = self.message_segments(message, first=not turns)
            if segments:
                turns.append(segments)
        return turns

    def session(self, session_id: str, messages: Iterable[Message]) -> SessionTrace | None:
        """The session of these messages, one turn per message; None when nothing renders."""
        turns = self.render(messages)
        if not turns:
            return None
        return SessionTrace(session_id, tuple(Turn(i, segments) for i, segments in enumerate(turns)))

    def identity(self) -> dict:
        return {"name": self.name, "sha256": self.sha256}


def _strings(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings")
    return tuple(value)


def parse_template(text: str, source: str) -> ChatTemplate:
    doc = parse_toml(text, f"chat template {source}")
    unknown = set(doc) - TEMPLATE_KEYS
    if unknown:
        raise ConfigError(f"chat template {source}: unknown keys {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(sorted(TEMPLATE_KEYS))})")
    for key, kind in (("name", str), ("description", str), ("begin", str), ("structure_allow_special", bool)):
        if not isinstance(doc.get(key, "" if kind is str else None), kind):
            raise ConfigError(f"chat template {source}: '{key}' must be a {kind.__name__}")
    roles_doc = doc.get("roles")
    if not isinstance(roles_doc, dict) or "default" not in roles_doc:
        raise ConfigError(f"chat template {source}: needs a [roles.default] table (and [roles.ROLE] per role)")
    roles = []
    for role, body in roles_doc.items():
        if not isinstance(body, dict) or set(body) - ROLE_KEYS or \
                not all(isinstance(body.get(k, ""), str) for k in ROLE_KEYS):
            raise ConfigError(f"chat template {source}: [roles.{role}] takes only 'before' and 'after' strings")
        roles.append((role, RoleFormat(body.get("before", ""), body.get("after", ""))))
    aliases = doc.get("aliases", {})
    if not isinstance(aliases, dict) or not all(isinstance(v, str) for v in aliases.values()):
        raise ConfigError(f"chat template {source}: [aliases] maps role names to role names")
    return ChatTemplate(
        name=doc.get("name") or Path(source).stem, description=doc.get("description", ""),
        vocabularies=_strings(doc.get("vocabularies", []), f"chat template {source}: 'vocabularies'"),
        structure_allow_special=doc["structure_allow_special"], begin=doc.get("begin", ""),
        special_tokens=_strings(doc.get("special_tokens", []), f"chat template {source}: 'special_tokens'"),
        literals=_strings(doc.get("literals", []), f"chat template {source}: 'literals'"),
        aliases=tuple(sorted(aliases.items())), roles=tuple(roles), source=source,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


def template_dir() -> Path:
    from verify.config import declared

    return declared(*Path(TEMPLATE_DIR).parts)


def builtin_names() -> list[str]:
    folder = template_dir()
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


@lru_cache(maxsize=32)
def load_template(name_or_path: str) -> ChatTemplate:
    """A template by name (``corpora/templates/NAME.toml``) or by the path of a ``.toml`` file."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        path = Path(name_or_path).expanduser().resolve()
        source = str(path)
    else:
        path, source = template_dir() / f"{name_or_path}.toml", name_or_path
    if not path.is_file():
        raise ConfigError(f"unknown chat template '{name_or_path}' (known: {', '.join(builtin_names()) or 'none'};"
                          " or give the path of a .toml file)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read chat template {path}: {exc}") from exc
    return parse_template(text, source)


def template_name_for(reference_spec: EngineSpec | str) -> str:
    """The built-in template whose ``vocabularies`` name the spec's vocabulary, else ``plain``.

    The vocabulary is the spec's target (named engines resolved; ``repair:tiktoken:cl100k_base``
    and other wrappers looked through; a file path matched by the file name of a known vocabulary)."""
    from verify.config import named_engines, parse_spec
    from verify.vocab.known import KNOWN_VOCABS

    by_vocab = {v: name for name in builtin_names() for v in load_template(name).vocabularies}
    target = reference_spec
    for _ in range(4):  # wrappers nest a few levels at most
        try:
            target = parse_spec(target).target
        except ConfigError:
            return FALLBACK
        if target in by_vocab:
            return by_vocab[target]
        file_name = Path(target).name
        for known in KNOWN_VOCABS.values():
            if known.filename == file_name and known.name in by_vocab:
                return by_vocab[known.name]
        if ":" not in target and target not in named_engines():
            break
    return FALLBACK


def template_for(reference_spec: str) -> ChatTemplate:
    return load_template(template_name_for(reference_spec))


def choose_template(template: str | None = None, reference: str | None = None) -> ChatTemplate:
    """The template named (a name or a .toml path), else the reference's, else the default
    reference's (``engines/defaults.toml``)."""
    if template:
        return load_template(template)
    if reference is None:
        from verify.config import run_defaults

        reference = run_defaults().get("reference") or ""
    return template_for(reference)


def shard_template(shard) -> ChatTemplate:
    """The template a trace shard was listed with (``SessionShard.template``; none: the default)."""
    name = shard.template if shard is not None else None
    return choose_template(name)
