"""Markdown a viewer renders as text, never as markup.

Markdown renders inline HTML (``<h1>``, ``<details open>``), and a backtick or a pipe
in a value breaks out of its code span or table cell. Every value that came from a
corpus, an engine or a committed file goes into Markdown through one of these, on top
of ``verify.reports.visible`` -- the same escaping of control, bidi and invisible
characters the HTML report applies:

    md_text(value)    plain text: invisible characters escaped, HTML and Markdown specials inert
    md_code(value)    a code span fenced by more backticks than the value holds
    md_cell(value)    either, safe in a table cell (pipes escaped, one line)

The Markdown templates (``verify.reports.md_templates``) have them as filters of the same names.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from verify.reports.visible import cut_visible, reveal_invisible, visible

FIELD_CHARS = 80
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]()#+!|~])")  # not ">": html.escape makes it &gt; (escaped again, it would show)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def md_text(value: Any, limit: int | None = None, table: bool = True) -> str:
    """``value`` as inert text: escapes shown (``\\u202e``, ``\\n``), HTML entities for ``<>&"``,
    Markdown specials backslash-escaped (pipes too, so it can sit in a table cell)."""
    shown = visible(_str(value), limit)
    shown = _MARKDOWN_SPECIALS.sub(r"\\\1", shown)
    # after the Markdown escapes: an entity's own '#' must not be backslash-escaped (``&\#x27;`` shows as text)
    return html.escape(shown, quote=True)


def md_code(value: Any, limit: int | None = FIELD_CHARS, table: bool = False) -> str:
    """``value`` as a Markdown code span: cut (``limit`` None: whole), invisible characters escaped,
    fenced by more backticks than it holds; in a table cell its pipes escaped too (code spans show no HTML)."""
    shown = reveal_invisible(_str(value)).replace("\n", "\\n").replace("\r", "\\r")
    if limit is not None:
        shown = cut_visible(shown, limit)
    if not shown:
        return '`""`'
    if table:
        shown = shown.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") or longest else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def md_cell(value: Any, limit: int | None = FIELD_CHARS) -> str:
    """A table cell: a code span (the value exactly, escapes visible), one line."""
    return md_code(value, limit, table=True)
