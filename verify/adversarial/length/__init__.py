"""The length sweep: growing runs, bisected thresholds."""
