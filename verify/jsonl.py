"""JSON Lines as this harness writes them: one object per line, UTF-8, readable text.

``json.dumps(..., ensure_ascii=False)`` leaves U+0085, U+2028 and U+2029 unescaped
inside strings; they are valid JSON, but ``str.splitlines`` (and older JavaScript)
treat them as line ends, so a reader that splits on them would cut a record in
two. ``line(obj)`` escapes exactly those three, keeping every other character as is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def line(obj: Any) -> str:
    text = json.dumps(obj, ensure_ascii=False)
    if any(ch in text for ch in _LINE_BREAKS):
        for ch, escape in _LINE_BREAKS.items():
            text = text.replace(ch, escape)
    return text + "\n"


def read(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSON Lines file, in order; nothing when the file does not exist."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, encoding="utf-8", newline="\n") as fh:
        for text in fh:
            if text.strip():
                yield json.loads(text)
