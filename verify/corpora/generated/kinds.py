"""The content kinds of the generated corpus and their weights (``KINDS``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from verify.corpora.generated.kinds_code import kind_code, kind_json
from verify.corpora.generated.kinds_text import (kind_combining, kind_contractions, kind_control, kind_emoji,
                                                 kind_ids, kind_mixed_prose, kind_numbers, kind_prose,
                                                 kind_special_literals, kind_tiny, kind_unicode_soup,
                                                 kind_whitespace)
from verify.corpora.generated.scripts import Gen


@dataclass(frozen=True)
class Kind:
    name: str
    weight: float
    make: Callable[[Gen], str]


KINDS: tuple[Kind, ...] = (
    Kind("prose", 30, kind_prose),
    Kind("mixed_prose", 6, kind_mixed_prose),
    Kind("code", 10, kind_code),
    Kind("json", 5, kind_json),
    Kind("numbers", 7, kind_numbers),
    Kind("ids", 5, kind_ids),
    Kind("whitespace", 6, kind_whitespace),
    Kind("emoji", 6, kind_emoji),
    Kind("combining", 4, kind_combining),
    Kind("control", 3, kind_control),
    Kind("contractions", 4, kind_contractions),
    Kind("special_literals", 4, kind_special_literals),
    Kind("unicode_soup", 2, kind_unicode_soup),
    Kind("tiny", 2, kind_tiny),
)
_KIND_WEIGHTS = tuple(k.weight for k in KINDS)
