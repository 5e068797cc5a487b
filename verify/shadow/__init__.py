"""Production shadow samples, verified: ``verify shadow FILE ... --reference SPEC``.

  schema    the ``verify.shadow/1`` record (docs/shadow.md) and its parser
  compare   production's recorded ids (or digest) against the reference's encode
  redact    what ``--redact`` keeps of an input: hashes and a window around the difference
  run       the shard task: one shadow file's records through the reference (in a worker)
  hunt      the hunt on the one pipeline (plan, finish) and its triage stage
  triage    cluster, minimise against a replay of production's tokenizer, de-duplicate
  report    OUT/shadow.json and OUT/shadow.md

The job function is ``verify.jobs.shadow.shadow_job``; the command ``verify.commands.shadow``.

The reader of shadow files is ``verify.shadow.source`` (shard kind ``shadow``); the
producer side, for a serving stack, is ``verify.shadow_producer``.
"""
