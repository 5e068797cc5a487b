"""Thread pinning: how many threads an engine's own thread pool may use.

N shard workers on C cores would each start engines that spread over every core
(HuggingFace tokenizers and other Rust engines use rayon; some use OpenMP), so
the machine is oversubscribed N times. ``pin_threads(k)`` sets the variables
those pools read when they start; it must run in the engine's process before the
engine's first parallel call. ``None`` leaves the engine's defaults alone
(GPU engines, a single worker); ``unpin_threads()`` undoes a pin a process
inherited (a device worker, whatever its parent's environment).
"""

from __future__ import annotations

import os

THREAD_VARIABLES = ("RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS", "OMP_NUM_THREADS")
PINNED_MARK = "VERIFY_PINNED_THREADS"  # set by pin_threads: the variables above are ours, not the user's


def pin_threads(threads: int | None) -> None:
    if threads is None:
        return
    threads = max(1, int(threads))
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    if threads == 1:
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ[PINNED_MARK] = str(threads)


def unpin_threads() -> None:
    """Remove the variables ``pin_threads`` set, here or in a parent process (nothing if it never ran)."""
    if os.environ.pop(PINNED_MARK, None) is None:
        return
    for name in THREAD_VARIABLES:
        os.environ.pop(name, None)
    if os.environ.get("TOKENIZERS_PARALLELISM") == "false":
        del os.environ["TOKENIZERS_PARALLELISM"]


def threads_per_worker(workers: int, cores: int | None = None) -> int:
    """Cores shared out evenly: each of ``workers`` workers gets at least one thread."""
    cores = cores or os.cpu_count() or 1
    return max(1, cores // max(1, workers))
