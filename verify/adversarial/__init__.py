"""The hunts: generated and swept inputs that look for where an engine differs.

One room per subject:

  unicode/      every code point in probe contexts derived from the vocabulary; version attribution
  vocab/        every token of the vocabulary as text, pairs, special tokens and near-misses
  length/       growing runs of one character class, bisected to the first divergent length
  fuzz/         hypothesis search, the stress phase, the cluster book, atheris, session edit scripts
  stress/       serving-shaped inputs (big batches, chunking thresholds) shared by fuzz and checks
  checks/       metamorphic checks of one engine against itself (no reference)
  regressions/  the replayable record of every bug found in a real engine
"""
