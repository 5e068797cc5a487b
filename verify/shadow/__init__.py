"""Production shadow samples, verified: ``verify shadow FILE ... --reference SPEC``.

  schema    the ``verify.shadow/1`` record (docs/shadow.md) and its parser
  compare   production's recorded ids (or digest) against the reference's encode
  redact    what ``--redact`` keeps of an input: hashes and a window around the difference
  triage    cluster, minimise against a replay of production's tokenizer, de-duplicate
  report    OUT/shadow.json and OUT/shadow.md
  run       the job that ties them together

The reader of shadow files is ``verify.corpora.shadow`` (shard kind ``shadow``); the
producer side, for a serving stack, is ``verify.shadow_producer``.
"""
