"""One function per command that sends inputs through engines: typed options in, the
result out. The command line (``verify.commands``) and the gate (``verify.gate``) both
call these; nothing here parses argv or prints.

  run_job            verify run / replay --traces     (verify.driver)
  unicode_job        verify unicode                    (jobs/unicode.py)
  ...
Each builds its hunt (``verify.adversarial.*.hunt``, ``verify.pipeline.corpus``) and runs
it with ``verify.driver.run_hunt``: shards, triage, reports.
"""
