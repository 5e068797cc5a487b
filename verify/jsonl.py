"""JSON Lines as this harness writes them: one object per line, UTF-8, readable text.

``json.dumps(..., ensure_ascii=False)`` leaves U+0085, U+2028 and U+2029 unescaped
inside strings; they are valid JSON, but ``str.splitlines`` (and older JavaScript)
treat them as line ends, so a reader that splits on them would cut a record in
two. ``line(obj)`` escapes exactly those three, keeping every other character as is.

Reading is strict and never a crash: a line (or a file, ``load``) that is not JSON, is
nested deeper than Python's parser recurses, or is not an object is a ``CorruptFileError``
naming the file and line (exit 2): these files were written by verify, so a bad one was
changed since.

orjson writes and parses (a run that diverges everywhere writes and reads every record several
times: the standard library took a fifth of its CPU); what orjson refuses and the standard
library takes -- an integer past 64 bits, nesting past orjson's 1,024 levels -- goes through the
standard library, so what a line can hold, and every message, is as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import orjson

from verify.errors import CorruptFileError

_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def line(obj: Any) -> str:
    try:  # compact separators: a line is read by parsers, and shorter
        text = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except orjson.JSONEncodeError:  # an int past 64 bits, a lone surrogate: as the standard library writes them
        text = json.dumps(obj, ensure_ascii=False)
    if any(ch in text for ch in _LINE_BREAKS):
        for ch, escape in _LINE_BREAKS.items():
            text = text.replace(ch, escape)
    return text + "\n"


def loads(text: str | bytes, where: str) -> dict[str, Any]:
    """One JSON object; anything else is a ``CorruptFileError`` naming ``where``."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:  # not JSON to orjson: the standard library decides, and says why
        obj = _standard_loads(text, where)
    if not isinstance(obj, dict):
        raise CorruptFileError(f"{where}: a JSON {type(obj).__name__}, not an object: not a file verify wrote "
                               "(changed since?)")
    return obj


def _standard_loads(text: str | bytes, where: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise CorruptFileError(f"{where}: JSON nested deeper than Python parses: not a file verify wrote "
                               "(changed since?)") from None
    except ValueError as exc:  # JSONDecodeError, invalid UTF-8
        raise CorruptFileError(f"{where}: not valid JSON ({exc}): not a file verify wrote (changed since?)") from None


def load(path: Path) -> dict[str, Any]:
    """The JSON object a whole file holds (``loads``); an unreadable file is a ``CorruptFileError`` too."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise CorruptFileError(f"{path}: unreadable ({exc})") from None
    return loads(text, str(path))


def read(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSON Lines file, in order; nothing when the file does not exist."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as fh:  # lines end at b"\n" only; each decoded (strictly) by the parser
        for number, raw in enumerate(fh, 1):
            if raw.strip():
                yield loads(raw, f"{path}:{number}")
