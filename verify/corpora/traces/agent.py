"""The generated agent-session corpus, ``agent:SEED[:SESSIONS]``: coding-agent sessions
that read a file, edit it, run a tool, paste its output, paste long files, and stream
answers whose turn boundaries fall inside the text shapes incremental tokenizers get
wrong. Session ``INDEX`` of seed ``SEED`` is built from ``random.Random(SEED *
SEED_STRIDE + INDEX)`` alone, so ``agent:SEED:INDEX`` rebuilds it anywhere.

Every session contains every split shape at least once (``SHAPES``): a turn ends
inside a digit run, a whitespace run, between ``\\r`` and ``\\n``, between a letter and
its combining mark, inside a ZWJ emoji sequence or before a skin-tone modifier,
inside a contraction, inside a run longer than any token, and inside a special-token
literal typed as plain text (``allow_special=False``). Where the chat template's
structure is ``allow_special=True``, a turn also ends inside a structure string
(``structure``) and inside a genuine special token of the template's vocabulary
placed as a document boundary (``boundary``). Sessions ``INDEX % 16 == 11`` (two of
the default 40) run past a million characters through long pastes; the others hold
24k-50k characters (3.7M characters in all for the default 40 sessions of seed 0). A big session
has its ordinary activity first, then the long pastes, then three shapes past a million
characters, so that a replay (which re-encodes every prefix in the reference) stays short.

Turns are rendered by a chat template (``verify.corpora.traces.templates``; default
``chatml``): one message is one turn, and a streamed message is cut over several.
Bump ``GENERATOR`` whenever the output for a seed changes.
"""

from __future__ import annotations

import random
from typing import Iterable, Iterator

from verify.corpora.traces.agent_text import EMOJI, FILES, SPECIAL_LOOKALIKES, AgentText
from verify.session_trace import SessionTrace, Turn, coalesce
from verify.corpora.traces.templates import ChatTemplate, load_template
from verify.sample import Segment

GENERATOR = "agent/1"
SEED_STRIDE = 1_000_003
DEFAULT_TEMPLATE = "chatml"
BIG_EVERY, BIG_AT = 16, 11
NORMAL_CHARS = (24_000, 50_000)
BIG_CHARS = (1_010_000, 1_100_000)
PLAIN_SHAPES = ("digits", "whitespace", "crlf", "combining", "zwj", "modifier", "contraction", "long-run",
                "special-literal")
STRUCTURE_SHAPES = ("structure", "boundary")
SHAPES = PLAIN_SHAPES + STRUCTURE_SHAPES


def is_big(index: int) -> bool:
    return index % BIG_EVERY == BIG_AT


def split_at(parts: Iterable[Segment], offsets: Iterable[int]) -> list[tuple[Segment, ...]]:
    """``parts`` cut into consecutive turns at character ``offsets`` of their joined text."""
    parts = list(parts)
    total = sum(len(p.text) for p in parts)
    cuts = sorted({o for o in offsets if 0 < o < total})
    turns: list[list[Segment]] = [[]]
    pos, ci = 0, 0
    for part in parts:
        start = 0
        while ci < len(cuts) and cuts[ci] <= pos + len(part.text):
            cut = cuts[ci] - pos
            turns[-1].append(Segment(part.text[start:cut], part.allow_special))
            turns.append([])
            start, ci = cut, ci + 1
        turns[-1].append(Segment(part.text[start:], part.allow_special))
        pos += len(part.text)
    return [t for t in (coalesce(turn) for turn in turns) if t]


class _Builder:
    def __init__(self, template: ChatTemplate):
        self.template = template
        self.turns: list[tuple[Segment, ...]] = []
        self.chars = 0
        self.first = True

    def add(self, turns: list[tuple[Segment, ...]]) -> None:
        for turn in turns:
            self.turns.append(turn)
            self.chars += sum(len(s.text) for s in turn)

    def message(self, role: str, content: str, content_cuts: Iterable[int] = (), structure_cut: bool = False):
        t = self.template
        fmt = t.role_format(role)
        head = (t.begin if self.first else "") + fmt.before
        self.first = False
        parts = [t.structure(head), Segment(content, False), t.structure(fmt.after)]
        offsets = [len(head) + c for c in content_cuts]
        if structure_cut and t.structure_allow_special:
            if len(fmt.after) > 1:
                offsets.append(len(head) + len(content) + len(fmt.after) // 2)
            elif len(head) > 1:
                offsets.append(len(head) // 2)
        self.add(split_at(parts, offsets))

    def boundary(self, token: str) -> None:
        """A genuine special token as structure between two messages, cut in two turns."""
        self.add(split_at([self.template.structure(token)], [len(token) // 2]))


def _shape(text: AgentText, shape: str, template: ChatTemplate) -> tuple[str, int]:
    """A piece of text holding the shape, and the offset inside it where a turn ends."""
    r = text.rng
    if shape == "digits":
        digits = "".join(r.choice("0123456789") for _ in range(r.randint(4, 14)))
        return f"total {digits} bytes", len("total ") + r.randint(1, len(digits) - 1)
    if shape == "whitespace":
        run = r.choice((" ", "\t", "\n", " \n")) * r.randint(2, 12)
        return f"value ={run}{text.ident()}", len("value =") + r.randint(1, len(run) - 1)
    if shape == "crlf":
        head = f"line {text.number()}\r"
        return head + "\nnext line", len(head)
    if shape == "combining":
        mark = r.choice(("e\u0301", "o\u0302\u0323", "a\u0308", "n\u0303"))
        cut = r.randint(1, len(mark) - 1)
        return f"caf{mark} au lait", len("caf") + cut
    if shape == "zwj":
        seq = r.choice([e for e in EMOJI if "\u200d" in e])
        zwj = seq.index("\u200d")
        return f"done {seq} ok", len("done ") + zwj + r.choice((0, 1))
    if shape == "modifier":
        return "thumbs 👍🏽 up", len("thumbs 👍")
    if shape == "contraction":
        word = r.choice(("don't", "we're", "it's", "they'll", "I've", "you'd", "she's"))
        return f"so {word} know", len("so ") + word.index("'")
    if shape == "long-run":
        run = r.choice("=-#* ~.") * r.randint(300, 900)
        return f"\n{run}\n", 1 + r.randint(100, len(run) - 100)
    if shape == "special-literal":
        literal = r.choice(SPECIAL_LOOKALIKES + template.literals + template.special_tokens)
        return f"the marker {literal} here", len("the marker ") + r.randint(1, len(literal) - 1)
    raise ValueError(f"unknown split shape '{shape}'")


class _Session:
    def __init__(self, seed: int, index: int, template: ChatTemplate):
        self.rng = random.Random(seed * SEED_STRIDE + index)
        self.text = AgentText(self.rng)
        self.b = _Builder(template)
        self.template = template
        self.big = is_big(index)
        self.target = self.rng.randint(*BIG_CHARS) if self.big else 0
        structure_ok = template.structure_allow_special
        self.pending = list(PLAIN_SHAPES) + ([s for s in STRUCTURE_SHAPES if s != "boundary" or
                                              template.special_tokens] if structure_ok else [])
        self.rng.shuffle(self.pending)
        self.file = self.rng.choice(FILES)
        self.code = self.text.code_file(60)

    def tool_call(self, name: str, **arguments) -> None:
        lead = self.text.sentence() + "\n" if self.rng.random() < 0.6 else ""
        self.b.message("assistant", lead + self.text.tool_call(name, **arguments))

    def read(self) -> None:
        self.file = self.rng.choice(FILES)
        self.code = self.text.code_file(self.rng.randint(40, 200))
        self.tool_call("read_file", file_path=self.file)
        self.b.message("tool", self.text.numbered(self.code))

    def edit(self) -> None:
        old, new = self.text.edit(self.code)
        self.code = self.code.replace(old, new, 1)
        self.tool_call("edit_file", file_path=self.file, old_string=old, new_string=new)
        start = self.rng.randint(1, 400)
        self.b.message("tool", f"The file {self.file} has been updated. Result of running `cat -n`:\n"
                       + self.text.numbered("\n".join(new.split("\n")[:8]) + "\n", start))

    def run(self) -> None:
        self.tool_call("bash", command=self.text.command())
        self.b.message("tool", self.text.tool_output(self.rng.randint(10, 120)))

    def paste(self) -> None:
        body = self.text.log(self.rng.randint(5, 50)) if self.rng.random() < 0.5 else \
            self.text.tool_output(self.rng.randint(5, 60))
        self.b.message("user", f"{self.text.sentence()} Here is what I get:\n```\n{body}```")

    def long_paste(self) -> None:
        if self.big and self.b.chars >= NORMAL_CHARS[1]:  # past the activity: up to just over the target
            chars = min(self.rng.randint(200_000, 300_000), self.target - self.b.chars + self.rng.randint(1, 9_999))
        else:
            chars = self.rng.randint(6_000, 25_000)
        kind = self.rng.choice(("code", "code", "log", "json", "tool"))
        self.b.message("user", f"{self.text.sentence()}\n\n" + self.text.fill(kind, chars))

    def chat(self) -> None:
        self.b.message("user", self.text.prose(self.rng.randint(1, 4)))
        self.b.message("assistant", self.text.prose(self.rng.randint(2, 10)))

    def stream(self, count: int) -> None:
        """An assistant answer streamed over several turns, each cut inside a shape."""
        shapes = [self.pending.pop() for _ in range(min(count, len(self.pending)))] or \
            [self.rng.choice(PLAIN_SHAPES)]
        content, cuts, structure_cut, boundary = self.text.prose(self.rng.randint(1, 3)), [], False, False
        for shape in shapes:
            if shape == "structure":
                structure_cut = True
            elif shape == "boundary":
                boundary = True
            else:
                piece, cut = _shape(self.text, shape, self.template)
                content += " "
                cuts.append(len(content) + cut)
                content += piece + " " + self.text.prose(self.rng.randint(1, 2))
        self.b.message("assistant", content, cuts, structure_cut)
        if boundary:
            self.b.boundary(self.rng.choice(self.template.special_tokens))

    def build(self, session_id: str) -> SessionTrace:
        t = self.text
        self.b.message("system", f"You are a coding agent. {t.prose(6)}\nTools: "
                       + ", ".join(t.tool_call(n) for n in ("read_file", "edit_file", "bash")))
        self.b.message("user", f"Please look at {self.file}: {t.prose(self.rng.randint(1, 3))}")
        late = [self.pending.pop() for _ in range(3)] if self.big else []
        activity = self.rng.randint(*NORMAL_CHARS)
        while self.b.chars < activity:
            action = self.rng.choices(("read", "edit", "run", "paste", "chat", "long"), (6, 3, 6, 2, 2, 1))[0]
            getattr(self, "long_paste" if action == "long" else action)()
            if self.pending and self.rng.random() < 0.3:
                self.stream(self.rng.randint(1, 3))
        while self.pending:
            self.stream(3)
        while self.b.chars < self.target:  # a big session: long pastes, then shapes past a million
            self.long_paste()
        self.pending = late
        while self.pending:
            self.stream(3)
        return SessionTrace(session_id, tuple(Turn(i, segs) for i, segs in enumerate(self.b.turns)))


def generate_session(seed: int, index: int, template: str | None = None) -> SessionTrace:
    return _Session(seed, index, load_template(template or DEFAULT_TEMPLATE)).build(f"agent:{seed}:{index}")


def generate_sessions(seed: int, index_range: range, sessions: int, template: str | None = None
                      ) -> Iterator[SessionTrace]:
    for index in index_range:
        if 0 <= index < sessions:
            yield generate_session(seed, index, template)


def describe(seed: int, sessions: int, template: str | None = None) -> dict:
    tmpl = load_template(template or DEFAULT_TEMPLATE)
    return {"generator": GENERATOR, "seed": seed, "sessions": sessions, "template": tmpl.identity(),
            "sessions_over_1m_chars": [i for i in range(sessions) if is_big(i)],
            "shapes": list(PLAIN_SHAPES) + (list(STRUCTURE_SHAPES) if tmpl.structure_allow_special else [])}
