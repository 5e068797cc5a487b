"""Differential fuzzing: hypothesis search, stress phase, cluster book, atheris, session edit scripts."""
