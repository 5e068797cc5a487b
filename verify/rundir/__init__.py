"""The run folder OUT: what every command that sends inputs through engines commits,
a layer below triage and reports, which only read it.

  layout.py    ``RunFolder(out)``: every file of OUT by name (``.plan``, ``.findings``, ``.clusters`` ...)
  plan.py      what a run is (``OUT/plan.json``): hunt, engines, sources, shards, options
  result.py    ``ShardResult``: what one shard hands back to the driver (data, never files)
  store.py     committed shards under ``OUT/shards/``: markers, findings, hunt extras; merging
  attempts.py  ``OUT/attempts.jsonl``: one line when a run attempt (a start or --resume) begins, one when it ends
  status.py    the live progress line and ``OUT/status``
"""
