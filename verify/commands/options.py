"""Options shared by several commands, each defined once (pip-tools' options module).

An option that means the same thing in two commands is defined here and nowhere
else, with one default: ``--timeout``, ``--load-timeout``, ``--memory-limit-mb`` and ``--in-process``
(how engines are started, ``EngineOptions``), ``--out``, the corpus options.
"""

from __future__ import annotations

import time
from pathlib import Path

from verify.engine_spec import EngineSpec
from verify.errors import UsageError
from verify.executors.isolated import DEFAULT_TIMEOUT_S, MAX_MEMORY_MB, MAX_TIMEOUT_S
from verify.executors.loading import DEFAULT_LOAD_TIMEOUT_S
from verify.executors.pool import EngineOptions
from verify.executors.workers import MAX_WORKERS

MAX_SECONDS = MAX_TIMEOUT_S  # every time option's ceiling (--timeout, --budget, --stress-budget)


def default_out(kind: str) -> Path:
    """reports/KIND-TIMESTAMP in the project directory."""
    from verify.config import project_dir

    return project_dir() / "reports" / time.strftime(f"{kind}-%Y%m%d-%H%M%S")


def add_out_option(p, kind: str) -> None:
    p.add_argument("--out", type=Path, metavar="DIR", help=f"report directory (default reports/{kind}-TIMESTAMP)")


def out_dir(args, kind: str) -> Path:
    from verify.rundir.paths import folder_to_write

    return folder_to_write(args.out or default_out(kind), "--out")


def add_engine_options(p, *, allow_all: bool = False, defaults_shown: bool = True) -> None:
    """--reference SPEC and repeatable --candidate SPEC, defaulting to engines/defaults.toml."""
    from verify.config import run_defaults

    defaults = run_defaults()
    p.add_argument("--reference", metavar="SPEC",
                   help=f"reference engine (ADAPTER:VOCAB or a name from engines/*.toml); default "
                        f"{defaults.get('reference')}")
    every = " or 'all' (every installed engine on the reference's vocabulary)" if allow_all else ""
    p.add_argument("--candidate", action="append", metavar="SPEC",
                   help=f"engine under test; repeatable{every}; default {', '.join(defaults.get('candidates', []))}")


def reference_and_candidates(args) -> tuple[EngineSpec | None, list[EngineSpec | str]]:
    """--reference and --candidate, else engines/defaults.toml's, parsed."""
    from verify.engines.catalogue import run_engines

    return run_engines(args.reference, args.candidate)


def add_pool_options(p) -> None:
    """How engines are started: isolated workers (default) or in this process, hang timeout, memory limit."""
    p.add_argument("--in-process", action="store_true",
                   help="run engines inside the harness's processes (faster start; a crash or hang there ends "
                        "the worker it happens in)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help=f"an engine call that takes longer than S seconds is a hang (isolated engines; "
                        f"default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--load-timeout", type=float, default=None, metavar="S",
                   help=f"an engine that takes longer than S seconds to build (its constructor, its vocabulary) "
                        f"did not start: a finding for it, the run goes on (default {DEFAULT_LOAD_TIMEOUT_S:g})")
    p.add_argument("--memory-limit-mb", type=int, metavar="MB", help="address-space limit for each engine worker")


def engine_options(args) -> EngineOptions:
    timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    if not 0 < timeout <= MAX_SECONDS:
        raise UsageError(f"--timeout must be a positive number of seconds, at most {MAX_SECONDS:g}, got {timeout:g}")
    load = DEFAULT_LOAD_TIMEOUT_S if getattr(args, "load_timeout", None) is None else args.load_timeout
    if not 0 < load <= MAX_SECONDS:
        raise UsageError(f"--load-timeout must be a positive number of seconds, at most {MAX_SECONDS:g}, got {load:g}")
    if args.memory_limit_mb is not None and not 64 <= args.memory_limit_mb <= MAX_MEMORY_MB:
        raise UsageError(f"--memory-limit-mb must be from 64 to {MAX_MEMORY_MB}, got {args.memory_limit_mb}")
    return EngineOptions(isolate=not args.in_process, timeout_s=timeout, memory_limit_mb=args.memory_limit_mb,
                         load_timeout_s=load)


def add_corpus_options(p, default: str) -> None:
    """Repeatable --corpus plus the JSONL/Parquet field names."""
    p.add_argument("--corpus", action="append", metavar="NAME|PATH",
                   help=f"named corpus (corpora/*.toml), file, directory or glob; repeatable; default {default}")
    p.add_argument("--text-field", help="JSONL/Parquet field holding the text (default text)")
    p.add_argument("--id-field", help="JSONL/Parquet field holding a record id (default id)")


def add_limit_option(p) -> None:
    p.add_argument("--limit", type=int, metavar="N", help="stop after N records per corpus")


def check_positive(value, flag: str, minimum: float = 1) -> None:
    if value is not None and value < minimum:
        raise UsageError(f"{flag} must be at least {minimum:g}")


def check_workers(value: int | None, flag: str = "--workers") -> None:
    """A count of worker processes or actors: from 1 to ``MAX_WORKERS`` (each is a process)."""
    if value is not None and not 1 <= value <= MAX_WORKERS:
        raise UsageError(f"{flag} must be from 1 to {MAX_WORKERS}, got {value}")


def add_job_options(p, minimize_budget: float | None = 120.0) -> None:
    """How a hunt runs on the pipeline: --workers, --executor ray (--ray-*), --resume, --no-progress
    and, when the hunt triages, --minimize-budget (``minimize_budget`` its default; None: none)."""
    from verify.executors.workers import default_workers

    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help=f"shard workers, each with every engine (default: the machine's cores, {default_workers()})")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local: worker processes on this machine (default); ray: actors of a Ray cluster")
    p.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster (default: a local one)")
    p.add_argument("--ray-actors", type=int, metavar="N", help="engine actors (default: the cluster's CPUs)")
    p.add_argument("--ray-cpus-per-actor", type=float, default=1.0, metavar="C",
                   help="CPUs each engine actor reserves (default %(default)s)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: only shards not yet committed run again")
    p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    add_allow_skipped_option(p)
    if minimize_budget is not None:
        p.add_argument("--minimize-budget", type=float, default=minimize_budget, metavar="S",
                       help="seconds to cluster and minimise findings after the shards; 0 disables "
                            "(default %(default)s)")


def check_job_numbers(args) -> None:
    """--workers and --ray-actors from 1 to ``MAX_WORKERS``, --ray-cpus-per-actor above 0 and at most that
    (nan and inf refused): one line, exit 2."""
    check_workers(args.workers, "--workers")
    check_workers(args.ray_actors, "--ray-actors")
    if not 0 < args.ray_cpus_per_actor <= MAX_WORKERS:
        raise UsageError(f"--ray-cpus-per-actor must be a positive number of CPUs, at most {MAX_WORKERS}, got "
                         f"{args.ray_cpus_per_actor:g}")


def job_options(args, kind: str, engine: EngineOptions | None = None):
    """The ``JobOptions`` of a command with ``add_job_options`` (checked: one line, exit 2)."""
    from verify.executors.workers import RayOptions, default_workers
    from verify.pipeline.hunt import JobOptions

    check_job_numbers(args)
    if args.executor != "ray" and (args.ray_address or args.ray_actors):
        raise UsageError("--ray-address and --ray-actors go with --executor ray")
    budget = getattr(args, "minimize_budget", 0.0)
    if budget is None or not budget >= 0:
        raise UsageError("--minimize-budget must be 0 (off) or positive")
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR (the run to continue)")
    return JobOptions(out=args.out or default_out(kind), engine=engine or engine_options(args),
                      workers=args.workers or default_workers(), executor=args.executor,
                      ray=RayOptions(args.ray_address, args.ray_actors, args.ray_cpus_per_actor),
                      ledger=getattr(args, "ledger", None), progress=False if args.no_progress else None,
                      minimize_budget_s=budget, resume=args.resume, argv=list(getattr(args, "argv", [])))


def add_allow_skipped_option(p) -> None:
    """``--allow-skipped``: every command that compares engines (and ``verify gate``) takes it."""
    p.add_argument("--allow-skipped", action="store_true",
                   help="samples an engine cannot take (special-token segments for a plain-text engine) are "
                        "reported with their reason, not failing: exit 0 when every other sample was verified "
                        "(a gate suite's allow_skipped)")


def compared_exit(counts, args, complete: bool = True) -> int:
    """0 when every sample was verified (with ``--allow-skipped``: verified or skipped, at least one
    verified) and the run is complete, else 1; a run that failed only on skips says so on stderr,
    with the remedy, in one line."""
    import sys

    from verify.reports.skips import only_skips_line

    allowed = bool(getattr(args, "allow_skipped", False))
    if complete and (counts.all_verified or (allowed and counts.verified_or_skipped())):
        return 0
    if complete and not allowed and counts.verified_or_skipped():
        print(only_skips_line(counts.as_dict()), file=sys.stderr)
    return 1
