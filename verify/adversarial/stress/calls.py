"""What the stress shapes need to know about an executor's calls, beyond their outcomes.

``CallWatch`` tells whether one big-batch call failed as a call although every
sample came back with ids: executors retry a batch that raises one sample at a
time (the ``batch_fallbacks`` run note) and re-run a batch that crashed or hung
the worker after restarting it (``restarts``), so the outcomes alone hide it.
``CachedTokenBytes`` (``verify.comparison``, where every comparison uses it) asks
``token_bytes`` once per distinct id for a whole phase.
"""

from __future__ import annotations

from typing import Sequence

from verify.comparison import CachedTokenBytes
from verify.outcome import Failure, Outcome, is_ids

__all__ = ["CachedTokenBytes", "CallWatch"]


class CallWatch:
    """``with``-free: ``watch = CallWatch(ex)`` before the call, ``watch.failure(outcomes, n)`` after."""

    def __init__(self, executor):
        self.executor = executor
        self.restarts, self.fallbacks, _ = self._state()

    def _state(self) -> tuple[int, int, str]:
        notes = self.executor.run_notes()
        warnings = notes.get("warnings") or [""]
        return self.executor.restarts, int(notes.get("batch_fallbacks", 0) or 0), str(warnings[-1])

    def failure(self, outcomes: Sequence[Outcome], size: int) -> Failure | None:
        """The call's own failure when it raised or lost its worker and yet every sample has ids."""
        restarts, fallbacks, warning = self._state()
        if not (restarts > self.restarts or fallbacks > self.fallbacks):
            return None
        if not all(is_ids(o) for o in outcomes):
            return None  # some sample fails alone too: those failures are the findings
        why = (f"the call with {size} samples raised ({warning})" if fallbacks > self.fallbacks else
               f"the call with {size} samples crashed or hung the engine's worker")
        return Failure("error", "BatchCallFailed", f"{why}; every sample alone encodes")
