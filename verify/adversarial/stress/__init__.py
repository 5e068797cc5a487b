"""Serving-shaped inputs (big batches, chunking thresholds) shared by fuzz and checks."""
