"""The vocabulary sweep: every token as text, pairs, special tokens and near-misses."""
