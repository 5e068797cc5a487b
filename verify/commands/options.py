"""Options shared by several commands, each defined once (pip-tools' options module)."""

from __future__ import annotations

import time
from pathlib import Path


def default_out(kind: str) -> Path:
    """reports/KIND-TIMESTAMP in the project directory."""
    from verify.config import project_dir

    return project_dir() / "reports" / time.strftime(f"{kind}-%Y%m%d-%H%M%S")


def add_engine_options(p, *, allow_all: bool = False) -> None:
    """--reference SPEC and repeatable --candidate SPEC, defaulting to engines/defaults.toml."""
    from verify.config import run_defaults

    defaults = run_defaults()
    p.add_argument("--reference", default=defaults.get("reference"), metavar="SPEC",
                   help="reference engine (ADAPTER:VOCAB or a name from engines/*.toml); default %(default)s")
    every = " or 'all' (every installed engine on the reference's vocabulary)" if allow_all else ""
    p.add_argument("--candidate", action="append", metavar="SPEC",
                   help=f"engine under test; repeatable{every}; default {', '.join(defaults.get('candidates', []))}")


def add_corpus_options(p, default: str) -> None:
    """Repeatable --corpus plus the JSONL/Parquet field names."""
    p.add_argument("--corpus", action="append", metavar="NAME|PATH",
                   help=f"named corpus (corpora/*.toml), file, directory or glob; repeatable; default {default}")
    p.add_argument("--text-field", default="text", help="JSONL/Parquet field holding the text (default %(default)s)")
    p.add_argument("--id-field", default="id", help="JSONL/Parquet field holding a record id (default %(default)s)")
