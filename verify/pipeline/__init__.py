"""The run pipeline, one-way: source -> shards -> workers (engines) -> comparison ->
committed shard results -> merged findings -> triage -> reports.

  hunt.py          what a command sends through the engines: a ``Hunt`` is a plan of shards
                   and the task that runs one (``JobOptions``: how it runs, never what it finds)
  run.py           the shard loop of the one driver: plan or resume, run the pending shards,
                   commit each as it comes back, merge (``verify.driver`` adds triage and reports)
  corpus.py        the ``run`` hunt: corpora and agent traces through the reference and candidates
  records_task.py  one corpus shard through every engine and the comparison -> ShardResult
  session_task.py  one shard of agent traces, replayed turn by turn

What a run is lives in ``verify.rundir`` (plan, store, status); the sources and shards in
``verify.corpora``.
"""
