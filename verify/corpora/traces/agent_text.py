"""Agent-like text, invented here: code files, edits, tool calls, tool output, logs,
prose, from word lists in this module and a ``random.Random`` the caller seeds.

    text = AgentText(random.Random(7))
    text.code_file(40)          # a Python- or JS-like file of about 40 lines
    text.fill("tool", 1_400)    # exactly 1,400 characters of tool-output-like text

Nothing is copied from third-party text. The same RNG state gives the same text in
every process (only ``random.Random`` calls, literal tables, no ``hash()``).
"""

from __future__ import annotations

import json
import random

PROSE_WORDS = (
    "the a an this that it we you they is are was be can should will would not and or but if then "
    "so because when while after before into from with without about over under between file function "
    "test value result error change line module config build run output input path branch commit "
    "review patch issue fix update check case token session cache index buffer limit request response "
    "worker thread process memory offset window boundary prefix suffix append encode decode parse "
    "format schema field record table column query server client option default flag version release "
    "looks like probably seems still already again instead first next last every each some most "
    "naïve café déjà résumé façade Grüße Straße über señor niño straße 東京 日本語 русский текст "
    "ελληνικά עברית العربية हिन्दी 한국어 ภาษาไทย"
).split()
IDENT_PARTS = (
    "get set load save read write parse build make find check update compute apply merge split join "
    "token tokens text span spans offset window prefix suffix cache state session engine index count "
    "size total limit start stop begin end first last next prev node item entry record batch chunk "
    "user path name value key data result error config options args kwargs self buf out"
).split()
TYPES = ("int", "str", "bytes", "list[int]", "dict[str, int]", "float", "bool", "None")
FILES = ("src/tokenizer.py", "src/session.py", "lib/cache.ts", "tests/test_encode.py", "README.md",
         "src/window.rs", "scripts/bench.py", "config/settings.json", "docs/notes.md", "web/app.js")
COMMANDS = ("pytest -q tests/", "python -m pytest -x -k window", "cargo test --release", "npm test",
            "git diff --stat", "ls -la src", "grep -rn \"offset\" src", "python scripts/bench.py --n 100000",
            "make build", "git log --oneline -5")
EMOJI = ("👩\u200d💻", "👨\u200d👩\u200d👧\u200d👦", "🏳\ufe0f\u200d🌈", "🧑🏽\u200d🚀", "❤\ufe0f\u200d🔥",
         "👍🏿", "🇺🇳", "😀", "✅", "🚀")
COMBINING = ("e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "u\u031b\u0300", "i\u0307\u0301")
SPECIAL_LOOKALIKES = ("<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>",
                      "<|im_start|>", "<|im_end|>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                      "[INST]", "[/INST]", "<s>", "</s>", "<think>", "</think>")
KINDS = ("prose", "code", "tool", "log", "json", "diff")


class AgentText:
    def __init__(self, rng: random.Random):
        self.rng = rng

    # --- small pieces -------------------------------------------------------------
    def ident(self) -> str:
        r = self.rng
        parts = [r.choice(IDENT_PARTS) for _ in range(r.randint(1, 3))]
        return "_".join(parts) if r.random() < 0.7 else parts[0] + "".join(p.title() for p in parts[1:])

    def number(self) -> str:
        r = self.rng
        shape = r.random()
        if shape < 0.4:
            return str(r.randint(0, 999))
        if shape < 0.7:
            return str(r.randint(1000, 10 ** r.randint(4, 12)))
        if shape < 0.85:
            return f"{r.random() * 10 ** r.randint(0, 5):.{r.randint(1, 6)}f}"
        return f"0x{r.getrandbits(32):08x}"

    def sentence(self) -> str:
        r = self.rng
        words = [r.choice(PROSE_WORDS) for _ in range(r.randint(5, 18))]
        if r.random() < 0.3:
            words.insert(r.randrange(len(words)), f"`{self.ident()}()`")
        if r.random() < 0.2:
            words.insert(r.randrange(len(words)), self.number())
        if r.random() < 0.05:
            words.insert(r.randrange(len(words)), r.choice(EMOJI))
        if r.random() < 0.05:
            words.insert(r.randrange(len(words)), "caf" + r.choice(COMBINING))
        if r.random() < 0.04:
            words.insert(r.randrange(len(words)), r.choice(SPECIAL_LOOKALIKES))
        text = " ".join(words)
        return text[0].upper() + text[1:] + r.choice((".", ".", ".", "?", "!", ":", "..."))

    def prose(self, sentences: int) -> str:
        r = self.rng
        out = []
        for i in range(sentences):
            out.append(self.sentence())
            out.append("\n\n" if r.random() < 0.15 else "\n- " if r.random() < 0.05 else " ")
        return "".join(out).rstrip(" ")

    # --- code -----------------------------------------------------------------------
    def _python_function(self) -> list[str]:
        r = self.rng
        name, args = self.ident(), [self.ident() for _ in range(r.randint(0, 3))]
        sig = ", ".join(f"{a}: {r.choice(TYPES)}" for a in args)
        lines = [f"def {name}({sig}) -> {r.choice(TYPES)}:", f'    """{self.sentence()}"""']
        for _ in range(r.randint(2, 9)):
            target, other = self.ident(), self.ident()
            lines.append(r.choice((
                f"    {target} = {other}({self.number()}, {r.choice(args or ['None'])})",
                f"    if {target} > {self.number()}:\n        return {other}",
                f"    for i in range({self.number()}):\n        {target}[i] += {other}[i] * {self.number()}",
                f"    {target}.append({other!r})  # {r.choice(PROSE_WORDS)} {r.choice(PROSE_WORDS)}",
                f"    raise ValueError(f\"bad {target}: {{{other}}}\")",
                f"    {target} = \"{r.choice(SPECIAL_LOOKALIKES) if r.random() < 0.1 else self.ident()}\"",
            )))
        lines.append(f"    return {self.ident()}")
        return lines

    def _js_function(self) -> list[str]:
        r = self.rng
        name, args = self.ident(), [self.ident() for _ in range(r.randint(0, 3))]
        lines = [f"export function {name}({', '.join(args)}) {{"]
        for _ in range(r.randint(2, 8)):
            lines.append(r.choice((
                f"  const {self.ident()} = {self.ident()}.map((x) => x * {self.number()});",
                f"  if ({self.ident()} === {self.number()}) {{\n    return null;\n  }}",
                f"  console.log(`{self.sentence()} ${{{self.ident()}}}`);",
                f"  for (let i = 0; i < {self.number()}; i++) {{ total += i; }}",
            )))
        lines.append("}")
        return lines

    def code_file(self, lines: int) -> str:
        r = self.rng
        python = r.random() < 0.65
        out = [f"import {self.ident()}", f"from {self.ident()} import {self.ident()}", ""] if python else \
              [f"import {{ {self.ident()} }} from './{self.ident()}';", ""]
        while len(out) < lines:
            out.extend(self._python_function() if python else self._js_function())
            out.extend([""] * r.choice((1, 1, 2)))
            if r.random() < 0.1:
                out.append(" " * r.randint(1, 12))  # trailing-whitespace line
        text = "\n".join(out) + "\n"
        return text.replace("    ", "\t") if python and r.random() < 0.1 else text

    def numbered(self, text: str, start: int = 1) -> str:
        """A file as a read tool shows it: right-aligned line numbers, an arrow, the line."""
        return "".join(f"{n:>6}→{line}\n" for n, line in enumerate(text.split("\n")[:-1], start))

    def edit(self, text: str) -> tuple[str, str]:
        """A (old, new) pair: one line of ``text`` and a changed version of it."""
        r = self.rng
        lines = [ln for ln in text.split("\n") if ln.strip()]
        old = r.choice(lines) if lines else self.ident()
        new = old.replace(" = ", f" = {self.ident()} + ", 1) if " = " in old else old + f"  # {self.sentence()}"
        return old, new

    def diff(self) -> str:
        r = self.rng
        path = r.choice(FILES)
        out = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}",
               f"@@ -{r.randint(1, 900)},{r.randint(3, 9)} +{r.randint(1, 900)},{r.randint(3, 9)} @@"]
        for _ in range(r.randint(3, 12)):
            out.append(r.choice(" +-") + r.choice(self._python_function()[1:3]))
        return "\n".join(out) + "\n"

    # --- tools ----------------------------------------------------------------------
    def tool_call(self, name: str, **arguments) -> str:
        return json.dumps({"name": name, "input": arguments}, ensure_ascii=False, sort_keys=True)

    def command(self) -> str:
        return self.rng.choice(COMMANDS)

    def tool_output(self, lines: int) -> str:
        """Test-runner / build output: paths, counts, timings, progress dots, sometimes CRLF."""
        r = self.rng
        out = []
        for _ in range(lines):
            out.append(r.choice((
                f"{r.choice(FILES)}::{self.ident()} PASSED{' ' * r.randint(1, 30)}[{r.randint(0, 100):>3}%]",
                f"{r.choice(FILES)}:{r.randint(1, 2000)}:{r.randint(1, 120)}: {self.sentence()}",
                f"{'.' * r.randint(5, 70)}{'F' if r.random() < 0.1 else ''}",
                f"===== {r.randint(1, 5000)} passed, {r.randint(0, 9)} failed in {self.number()}s =====",
                f"    Compiling {self.ident()} v{r.randint(0, 3)}.{r.randint(0, 40)}.{r.randint(0, 9)}",
                f"E       AssertionError: assert {self.number()} == {self.number()}",
                f"{r.randint(10 ** 5, 10 ** 9)} bytes in {r.randint(1, 99999)} ms ({self.number()} MB/s)",
            )))
        text = "\n".join(out) + "\n"
        return text.replace("\n", "\r\n") if r.random() < 0.2 else text

    def log(self, lines: int) -> str:
        r = self.rng
        levels = ("INFO", "DEBUG", "WARN", "ERROR")
        return "".join(
            f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}T{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:"
            f"{r.randint(0, 59):02d}.{r.randint(0, 999999):06d}Z {r.choice(levels):<5} [{self.ident()}] "
            f"{self.sentence()} id={r.getrandbits(64):016x} n={self.number()}\n" for _ in range(lines))

    def json_blob(self, items: int) -> str:
        r = self.rng
        doc = {self.ident(): (self.number() if r.random() < 0.5 else self.sentence()) for _ in range(items)}
        return json.dumps(doc, ensure_ascii=r.random() < 0.5, indent=r.choice((None, 2, 4)))

    # --- exact lengths ----------------------------------------------------------------
    def piece(self, kind: str) -> str:
        if kind == "prose":
            return self.prose(6)
        if kind == "code":
            return self.code_file(30)
        if kind == "tool":
            return self.tool_output(12)
        if kind == "log":
            return self.log(10)
        if kind == "json":
            return self.json_blob(12)
        if kind == "diff":
            return self.diff()
        raise ValueError(f"unknown text kind '{kind}' (known: {', '.join(KINDS)})")

    def fill(self, kind: str, chars: int) -> str:
        """Exactly ``chars`` characters of ``kind`` text (pieces joined, the last one cut)."""
        out: list[str] = []
        total = 0
        while total < chars:
            piece = self.piece(kind)
            out.append(piece)
            total += len(piece)
        return "".join(out)[:chars]
