"""verify: differential verification and fuzzing harness for LLM tokenizers.

The flow is one-way: source -> samples -> engines -> comparison -> findings -> reports.
"""

__version__ = "0.1.0"
