"""The named engines of ``engines/*.toml`` as a catalogue: which ones load a vocabulary.

    expand_candidates("tiktoken:cl100k_base", ["all"]) -> (specs, swept_in)
"""

from __future__ import annotations

from verify.config import named_engines
from verify.engines.registry import adapters, parse_spec


def expand_candidates(reference: str, candidates: list[str]) -> tuple[list[str], set[str]]:
    """Replace ``all`` by every named engine (engines/*.toml) on the reference's
    vocabulary whose package is installed. Returns the specs and which came from ``all``."""
    if "all" not in candidates:
        return candidates, set()
    ref = parse_spec(reference)
    swept = [name for name, spec in sorted(named_engines().items())
             if spec.target == ref.target and name != ref.text and (spec.adapter, spec.options) != (ref.adapter, ref.options)
             and spec.adapter in adapters() and adapters()[spec.adapter].installed()]
    explicit = [c for c in candidates if c != "all"]
    return explicit + [s for s in swept if s not in explicit], set(swept) - set(explicit)
