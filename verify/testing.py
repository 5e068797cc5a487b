"""Parity assertions for a team's own test suite.

    from verify.testing import assert_same_ids

    def test_our_tokenizer_matches_tiktoken():
        assert_same_ids("python:mypkg.engines:make_engine", "tiktoken:cl100k_base",
                        ["hello world", [("<|endoftext|>", True), (" after", False)]])

``engine`` and ``reference`` are engine specs (``ADAPTER:TARGET``, a name from
``engines/*.toml``) or engine objects (``build_engine(spec)``, any ``verify.engines.base.Adapter``).
``texts_or_segments`` is one text, one sample given as segments, or a list of texts and
samples; a sample is a list of ``(text, allow_special)`` pairs or a ``verify.sample.Sample``.

The comparison is the harness's own (``verify.comparison.compare_batch``): every input must
give ids on both sides and equal ids. A difference raises ``ParityError`` (an
``AssertionError``) whose message is the divergence record -- the first differing token,
its byte and character offset, the text around it, the ids and decoded pieces on both
sides -- followed by the record itself as JSON (``verify.divergence/2``). An engine that
cannot decode (a ``python:`` plugin) has its pieces decoded with the reference's vocabulary,
and the message says so. An engine failure, or an input the engine is not asked because it
declares it cannot handle special-token segments, fails the assertion too: an input not
compared is not verified, and the message names it (its id, the input, why, and what to
change) -- ``ParityError.skipped`` lists them all.
The pytest plugin (``verify.pytest_plugin``) adds fixtures that build engines from
command-line or ini options.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from verify.sample import Sample, Segment

__all__ = ["ParityError", "assert_same_ids", "as_samples", "engine_from", "format_finding", "format_skip",
           "not_compared"]

SHOWN_FINDINGS = 3
INPUT_SHOWN_CHARS = 2000


SPECIAL_REMEDY = ("give the engine special-token support (a python: plugin: encode_segments(segments) and "
                  "supports_special = True), or keep special-token segments out of this engine's inputs")
PIECES_BY_REFERENCE = "decoded with the reference's vocabulary: the engine has no decode"


class ParityError(AssertionError):
    """The engine and the reference disagree; ``records`` holds the divergence records and
    ``skipped`` the inputs not compared (``sample_id``, ``engine``, ``input``, ``reason``)."""

    def __init__(self, message: str, records: list[dict[str, Any]], skipped: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.records = records
        self.skipped = skipped or []


def _is_segment(item: Any) -> bool:
    return isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str) \
        and isinstance(item[1], bool)


def _sample(item: Any, index: int) -> Sample:
    if isinstance(item, Sample):
        return item
    if isinstance(item, str):
        return Sample.plain(f"input[{index}]", item)
    if isinstance(item, (list, tuple)) and item and all(_is_segment(s) for s in item):
        return Sample.from_segments(f"input[{index}]", [Segment(t, a) for t, a in item])
    raise TypeError(f"input {index} is {type(item).__name__}: give a text, a list of (text, allow_special) "
                    "pairs or a verify.sample.Sample")


def as_samples(texts_or_segments: Any) -> list[Sample]:
    """One text, one segmented sample, or a list of texts and samples -> samples."""
    if isinstance(texts_or_segments, (str, Sample)):
        return [_sample(texts_or_segments, 0)]
    items = list(texts_or_segments)
    if items and all(_is_segment(s) for s in items):  # one sample given as its segments
        return [_sample(items, 0)]
    return [_sample(item, i) for i, item in enumerate(items)]


def engine_from(engine: Any):
    """An engine object for a spec string; an engine object as it is."""
    if isinstance(engine, str):
        from verify.engines.registry import build_engine

        return build_engine(engine)
    if callable(getattr(engine, "encode_batch", None)) and hasattr(engine, "capabilities") \
            and hasattr(engine, "spec"):
        return engine
    raise TypeError(f"{type(engine).__name__} is no verify engine: pass a spec ('python:MODULE:ATTR' wraps an "
                    "object with encode_batch(texts)) or an object from verify.engines.registry.build_engine")


def assert_same_ids(engine: Any, reference: Any, texts_or_segments: Iterable[Any] | str) -> None:
    """Raise ``ParityError`` unless ``engine`` gives ``reference``'s ids on every input."""
    __tracebackhide__ = True  # pytest shows the caller's line and the record, not this function
    from verify.comparison import Side, compare_batch
    from verify.executors.local import LocalExecutor

    samples = as_samples(texts_or_segments)
    if not samples:
        raise ValueError("assert_same_ids needs at least one input")
    owned = [x for x in (engine, reference) if isinstance(x, str)]
    eng, ref = engine_from(engine), engine_from(reference)
    try:
        executors = [LocalExecutor(ref), LocalExecutor(eng)]
        outcomes = [ex.encode(samples) for ex in executors]
        engine_pieces = executors[1].token_bytes if executors[1].capabilities.decode else executors[0].token_bytes
        sides = [Side(executors[0].spec, executors[0].token_bytes), Side(executors[1].spec, engine_pieces)]
        counts, findings = compare_batch(samples, outcomes, sides, source="assert_same_ids")
    finally:
        for built, spec in ((eng, engine), (ref, reference)):
            if spec in owned:
                built.close()
    skipped = not_compared(samples, outcomes, [ex.spec for ex in executors])
    if not findings and not skipped:
        return
    records = [f.to_record()[0] for f in findings]
    if not executors[1].capabilities.decode:
        for record in records:
            if "pieces" in record.get("actual", {}):
                record["actual"]["pieces_from"] = PIECES_BY_REFERENCE
    head = (f"{eng.spec} does not match {ref.spec} on {len(findings)} of {len(samples)} input(s)"
            + (f"; {len(skipped)} input(s) not compared" if skipped else ""))
    shown = [format_finding(r) for r in records[:SHOWN_FINDINGS]]
    more = [f"... and {len(records) - SHOWN_FINDINGS} more"] if len(records) > SHOWN_FINDINGS else []
    shown_skips = [format_skip(item) for item in skipped[:SHOWN_FINDINGS]]
    more_skips = [f"... and {len(skipped) - SHOWN_FINDINGS} more not compared"] \
        if len(skipped) > SHOWN_FINDINGS else []
    raise ParityError("\n\n".join([head, *shown, *more, *shown_skips, *more_skips]), records, skipped)


def not_compared(samples: list[Sample], outcomes: list[list], specs: list[str]) -> list[dict[str, Any]]:
    """Every input an engine was not asked (``verify.outcome.Skipped``), with why."""
    from verify.outcome import Skipped

    found = []
    for i, sample in enumerate(samples):
        for spec, per_engine in zip(specs, outcomes):
            if isinstance(per_engine[i], Skipped):
                found.append({"sample_id": sample.id, "engine": spec, "reason": per_engine[i].reason,
                              "input": [[seg.text, seg.allow_special] for seg in sample.segments]})
    return found


def format_skip(item: dict[str, Any]) -> str:
    text = json.dumps(item["input"], ensure_ascii=False)
    if len(text) > INPUT_SHOWN_CHARS:
        text = f"<{len(text)} characters of JSON, cut>"
    special = any(allow for _, allow in item["input"])
    return "\n".join([f"not compared: {item['sample_id']}: {item['engine']} was not asked ({item['reason']})",
                      f"  input:     {text}", *([f"  remedy:    {SPECIAL_REMEDY}"] if special else [])])


def format_finding(record: dict[str, Any]) -> str:
    """A divergence record as a person reads it, then the record as JSON."""
    lines = [f"{record['kind']} finding on {record['sample_id']}"]
    if record["kind"] == "ids":
        lines[0] += (f": first differing token {record['token_index']} at byte offset {record['byte_offset']} "
                     f"(character {record['char_offset']})")
        if "context" in record:
            ctx = record["context"]
            lines.append(f"  context:   {ctx['before']!r} >>> {ctx['after']!r}")
        for side, name in (("expected", "reference"), ("actual", "engine")):
            window = record[side]
            lines.append(f"  {name:9}  ids[{window['start']}:] = {window['ids']}")
            if "pieces" in window:
                by = f"   ({window['pieces_from']})" if window.get("pieces_from") else ""
                lines.append(f"  {'':9}  pieces   = {window['pieces']}{by}")
        lines.append(f"  lengths:   reference {record['expected_len']} tokens, engine {record['actual_len']}")
    elif "error" in record:
        lines[0] += f": {record['error'].get('type')}: {record['error'].get('message')}"
    shown = dict(record)
    text = json.dumps(shown.get("input"), ensure_ascii=False)
    if len(text) > INPUT_SHOWN_CHARS:
        shown["input"] = f"<{len(text)} characters of JSON, cut>"
    lines.append("  record:    " + json.dumps(shown, ensure_ascii=False, default=str))
    return "\n".join(lines)
