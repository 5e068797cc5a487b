"""Regression cases: the replayable record of every bug found in a real engine."""
