"""The one jinja2 environment of the Markdown reports: ``templates/NAME.md.j2`` lay a report out,
Python prepares its rows and numbers.

    render(name, **context) -> str     a whole report
    section_lines(name, macro, *args)  one section (a macro) as lines, for a report cut to a limit

Markdown is escaped like HTML, by filters rather than by autoescaping (which knows only HTML):
every value that reaches a template's output passes through one of

    md_text / md_code / md_cell   ``verify.reports.md``: text, a code span, a table cell
    num(spec)                     a number formatted by ``spec``; anything else as ``md_text``
    trusted                       text verify itself composed (a timestamp, a code point span)

and ``tests/test_markdown_templates.py`` fails on any output expression that does not.
"""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from verify.reports.md import md_cell, md_code, md_text


def num(value: Any, spec: str = "") -> str:
    """A count or a measure as Python formats it (``num(",")``: ``12,345``); a value that is no
    number (a corrupt record) shown as inert text instead."""
    if isinstance(value, (int, float)):
        return format(value, spec)
    return md_text(str(value))


def trusted(value: Any) -> str:
    """Text verify composed from its own values: shown as it is (the template says so)."""
    return str(value)


@functools.cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("verify.reports", "templates"), autoescape=False,
                      undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(md_text=md_text, md_code=md_code, md_cell=md_cell, num=num, trusted=trusted)
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def section_lines(name: str, macro: str, *args: Any) -> list[str]:
    """The lines of one section of ``name``: its macro ``macro`` called with ``args`` (each line of
    its output ends with a newline; an empty section has none)."""
    text = getattr(environment().get_template(name).module, macro)(*args)
    return text[:-1].split("\n") if text else []
