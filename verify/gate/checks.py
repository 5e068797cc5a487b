"""Run one check of a gate suite into ``OUT/checks/NAME/`` by its kind's row
(``verify.gate.kinds.KINDS``), in this process, and read back what it committed.

    run_check(context) -> CheckRun

An error is recorded in the result (``state`` error, ``error_class`` config -- a full disk
too -- or harness), never raised, except Ctrl-C; ``$VERIFY_DEBUG`` lets a harness bug through
with its traceback.
"""

from __future__ import annotations

import os
import time

from verify.errors import VerifyError, storage_error
from verify.gate.check_run import (RESULT_FILE, RESULT_SCHEMA, CheckContext, CheckRun, load_run,  # noqa: F401
                                   one_line, save_run)
from verify.gate.kinds import KINDS


def run_check(ctx: CheckContext) -> CheckRun:
    run = CheckRun(ctx.spec.name, ctx.spec.kind, ctx.spec.digest())
    started = time.monotonic()
    try:
        KINDS[ctx.spec.kind].run(ctx, run)
    except KeyboardInterrupt:
        raise
    except VerifyError as exc:
        run.state, run.error_class = "error", "config"
        run.notes.append(one_line(str(exc)))
    except Exception as exc:  # a bug in verify itself, unless the disk is full
        full = storage_error(exc)
        if full is not None:  # the user's to fix (full, read-only, no permission), as a configuration error is
            run.state, run.error_class = "error", "config"
            run.notes.append(one_line(str(full)))
        elif os.environ.get("VERIFY_DEBUG"):
            raise
        else:
            run.state, run.error_class = "error", "harness"
            run.notes.append(one_line(f"harness bug: {type(exc).__name__}: {exc}"))
            run.detail = str(exc)
    run.seconds = round(time.monotonic() - started, 3)
    return run
