"""The engines of a hunt, parsed where it is planned, and the named engines of ``engines/*.toml``
as a catalogue (which ones load a vocabulary).

    run_engines("tiktoken:cl100k_base", ["all"]) -> (reference, requested)   # EngineSpec values
    engine_values(reference, candidates)    # the same without engines/defaults.toml
    expand_candidates(reference, ["all"]) -> (specs, swept_in)
"""

from __future__ import annotations

from typing import Sequence

from verify.config import named_engines, parse_spec, run_defaults
from verify.engine_spec import EngineSpec
from verify.engines.registry import adapters

ALL = "all"  # --candidate all: every installed named engine on the reference's vocabulary


def run_engines(reference: str | None, requested: Sequence[str] | None
                ) -> tuple[EngineSpec | None, list[EngineSpec | str]]:
    """The reference and the candidates a hunt is asked for -- the command line's, else
    ``engines/defaults.toml``'s -- parsed here, once: every room below is handed the values.
    ``all`` stays as written (``expand_candidates`` replaces it); an empty reference is None."""
    defaults = run_defaults()
    return engine_values(reference or defaults.get("reference"), requested or defaults.get("candidates", []))


def engine_values(reference: str | None, candidates: Sequence[str] | None
                  ) -> tuple[EngineSpec | None, list[EngineSpec | str]]:
    """``run_engines`` without the defaults: what a hunt was handed, parsed (values stay as they
    are; an empty reference is None; ``all`` stays as written)."""
    return (parse_spec(reference) if reference else None,
            [c if c == ALL else parse_spec(c) for c in candidates or []])


def expand_candidates(reference: EngineSpec, candidates: Sequence[EngineSpec | str]
                      ) -> tuple[list[EngineSpec], set[str]]:
    """Replace ``all`` by every named engine (engines/*.toml) on the reference's
    vocabulary whose package is installed. Returns the specs and which came from ``all``."""
    if ALL not in candidates:
        return list(candidates), set()
    swept = [spec for name, spec in sorted(named_engines().items())
             if spec.target == reference.target and name != reference.text
             and not spec.builds_same_engine(reference)  # the target is the same: adapter and options
             and spec.adapter in adapters() and adapters()[spec.adapter].installed()]
    explicit = [c for c in candidates if c != ALL]
    return explicit + [s for s in swept if s not in explicit], set(swept) - set(explicit)
