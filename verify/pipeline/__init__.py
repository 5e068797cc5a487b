"""The run pipeline, one-way: source -> shards -> workers (engines) -> comparison ->
committed shard results -> merged findings -> triage -> reports.

  plan.py        what a run is: engines, corpora, shards, output-changing options (OUT/plan.json)
  shard_task.py  one shard through every engine and the comparison -> ShardResult
  store.py       committing shard results atomically under OUT, reading them back, merging
  status.py      progress on the terminal and the one-line OUT/status file
  run.py         the driver: plan or resume, run the pending shards, finalise, triage, report
"""
