"""A test-only hook that holds a stage at a known point, so a fault test can kill the run there.

    VERIFY_FAULT_PAUSE=STAGE:FILE

When the driver reaches ``pause("STAGE")`` while FILE exists, it writes ``FILE.reached`` and
waits until FILE is removed. The stages, each held where a kill does the most harm:

  commit   ``ShardStore.commit``: the shard's findings file is written, its marker not yet
  triage   ``run_triage``: findings minimised, its engines still running, only its spill written

Unset (as everywhere but the fault tests), a pause is one environment lookup and nothing else.
"""

from __future__ import annotations

import os
import time

PAUSE_ENV = "VERIFY_FAULT_PAUSE"


def pause(stage: str) -> None:
    """Wait here while the file ``$VERIFY_FAULT_PAUSE`` names for ``stage`` exists."""
    named, sep, path = os.environ.get(PAUSE_ENV, "").partition(":")
    if not sep or named != stage or not os.path.exists(path):
        return
    with open(f"{path}.reached", "w", encoding="utf-8") as fh:
        fh.write(stage)
    while os.path.exists(path):
        time.sleep(0.02)
