"""The shadow comparison step: production's recorded output against the reference's encode.

    ShadowComparer(reference, replays).compare(items, source) -> list[Mismatch]

Each item is a record and the sample the reference encodes for it: a request's own
input, or for a session turn the whole transcript after it (``SessionTrace.transcript``,
the same from-scratch transcript ``verify replay`` compares turns with). Agreement is
``verify.outcome.agree`` between the reference's ids and production's ids or recorded
digest and length; an agreeing record is *confirmed* (state ``verified``). Every other
record is a finding, one per request (a session's mismatched turns each, unlike
``verify replay``, which writes a session's first difference only):

  ids      production's ids differ: located by ``describe_divergence`` (first differing
           token, byte and character offset, pieces); when only a digest was recorded the
           difference cannot be located from the record, so the finding says so
           (``shadow.recorded = "digest"``) and carries the reference's ids and both
           lengths -- unless a local replay of production's tokenizer reproduces the
           recorded digest, whose ids then locate it (``shadow.actual_from = "replay"``)
  error/crash/timeout  the reference failed on the input (engine = the reference)

A *replay engine* is production's tokenizer run here (``--engine [NAME=]SPEC``, or a
named engine of engines/*.toml equal to the tokenizer's name). For each mismatch it
encodes the input too; it reproduces production when its outcome agrees with the
recorded one, and only then may triage minimise the finding against it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from verify.comparison import sample_size
from verify.counts import Counts
from verify.errors import UsageError
from verify.findings import Finding, describe_divergence, describe_failure
from verify.keys import ids_digest
from verify.outcome import REFERENCE_FAILED, Failure, Skipped, agree, is_ids, state_of
from verify.sample import Sample
from verify.shadow.schema import ShadowRecord

NO_REPLAY = "production's tokenizer is not available here (pass --engine NAME=SPEC to replay it)"
DIGEST_NOTE = ("production recorded only a digest of its ids: where they differ is unknown; shadow.reference.ids "
               "holds the reference's ids")
WINDOW = 12  # reference ids shown in 'expected' when the difference is not located


def parse_engine_mapping(values: Sequence[str]) -> dict[str | None, str]:
    """``--engine SPEC`` (every tokenizer) or ``--engine NAME=SPEC`` (the tokenizer named NAME).
    A value is NAME=SPEC when the text before its first '=' has no ':' or '?'."""
    mapping: dict[str | None, str] = {}
    for value in values:
        name, sep, spec = value.partition("=")
        if sep and name and ":" not in name and "?" not in name:
            key, target = name, spec
        else:
            key, target = None, value
        if not target:
            raise UsageError(f"--engine {value!r}: no engine spec")
        if key in mapping:
            raise UsageError(f"--engine: {'every tokenizer' if key is None else repr(key)} is mapped twice")
        mapping[key] = target
    return mapping


class ReplayEngines:
    """Production's tokenizers run here. ``started``: the executors of the engines ``--engine``
    names (started with the run's engines in every worker); a tokenizer no ``--engine`` covers
    is replayed on the engines/*.toml engine of its name, started on first use from ``pool``
    (a callable returning the worker's ``EnginePool``; None: never)."""

    def __init__(self, mapping: dict[str | None, str], started: Sequence = (), pool: Callable | None = None):
        self.mapping = mapping
        self.started = {ex.spec: ex for ex in started}
        self.pool = pool
        self.used: dict[str, str] = {}  # tokenizer name -> spec replayed for it

    def spec_for(self, name: str) -> str | None:
        if name in self.mapping:
            return self.mapping[name]
        if None in self.mapping:
            return self.mapping[None]
        from verify.config import named_engines

        # Only a name the project declared (engines/*.toml): a spec spelled by production's
        # records could name python: or subprocess: targets, i.e. run arbitrary code here.
        return name if name in named_engines() else None

    def get(self, name: str):
        """The executor for tokenizer ``name``, or a line saying why there is none."""
        spec = self.spec_for(name)
        if spec is None:
            return NO_REPLAY
        executor = self.started.get(spec)
        if executor is None:
            executor = self.pool().try_get(spec) if self.pool is not None else "not started"
        if not isinstance(executor, str):
            self.used[name] = spec
            return executor
        return f"{spec} cannot start here: {executor}"


def mapping_to_json(mapping: dict[str | None, str]) -> list[list]:
    """The mapping as plan options hold it: ``[[NAME or null, SPEC], ...]``."""
    return [[name, spec] for name, spec in mapping.items()]


def mapping_from_json(pairs: list[list]) -> dict[str | None, str]:
    return {name: spec for name, spec in pairs}


@dataclass
class Item:
    record: ShadowRecord
    sample: Sample  # what the reference encodes (a session turn: the transcript)
    session: dict[str, Any] | None = None  # the finding's session block (verify.pipeline.session_task)
    last_turn: bool = True  # tokens are counted once per transcript, at its last turn


@dataclass
class Mismatch:
    finding: Finding
    record: ShadowRecord
    replay: Any = None  # the replay executor that reproduces production on this input, else None
    replay_note: str | None = None  # why there is none


class ShadowComparer:
    def __init__(self, reference, replays: ReplayEngines):
        self.reference = reference
        self.replays = replays
        self.source: str | None = None  # the shard's source, while comparing its items
        self.counts = Counts()
        self.counts.engine(reference.spec)
        # (name, version, vocab_sha256) -> records, confirmed, mismatched, unchecked
        self.tokenizers: dict[tuple, Counter] = {}
        self.vocab = reference.identity().vocab_sha256

    def compare(self, items: Sequence[Item], source: str | None = None) -> list[Mismatch]:
        self.source = source
        outcomes = self.reference.encode([it.sample for it in items])
        found = []
        for item, ref in zip(items, outcomes):
            mismatch = self._one(item, ref)
            if mismatch is not None:
                found.append(mismatch)
        return found

    def _one(self, item: Item, ref) -> Mismatch | None:
        record, c = item.record, self.counts
        tally = self.tokenizers.setdefault((record.tokenizer.name, record.tokenizer.version,
                                            record.tokenizer.vocab_sha256), Counter())
        tally["records"] += 1
        chars, nbytes = sample_size(record.sample())
        c.samples += 1
        c.chars += chars
        c.bytes += nbytes
        production = record.tokenizer.engine
        ref_state = state_of(ref)
        c.engine(self.reference.spec)[ref_state] += 1
        if not is_ids(ref):
            state = ref_state if isinstance(ref, Failure) else "skipped"
            c.states[state] += 1
            c.engine(production)["skipped"] += 1
            c.skip_reason(production, ref.reason if isinstance(ref, Skipped) else REFERENCE_FAILED)
            tally["unchecked"] += 1
            if isinstance(ref, Skipped):
                return None
            fields = {**describe_failure(ref), "shadow": self._shadow(record)}
            if item.session is not None:
                fields["session"] = item.session
            return Mismatch(Finding(self.reference.spec, self.reference.spec, item.sample, ref.kind, self.source,
                                    fields, detail=record.position), record, None, "the reference failed")
        if item.last_turn:
            c.tokens += int(ref.size)
        prod = record.production()
        if agree(ref, prod):
            c.states["verified"] += 1
            c.engine(production)["verified"] += 1
            tally["confirmed"] += 1
            return None
        c.states["diverged"] += 1
        c.engine(production)["diverged"] += 1
        tally["mismatched"] += 1
        return self._mismatch(item, ref, prod)

    def _shadow(self, record: ShadowRecord, ref=None) -> dict[str, Any]:
        doc = record.describe()
        doc["vocab_matches_reference"] = (None if record.tokenizer.vocab_sha256 is None or self.vocab is None
                                          else record.tokenizer.vocab_sha256 == self.vocab)
        if ref is not None:
            doc["reference"] = {"ids_len": int(ref.size), "ids_digest": ids_digest(ref)}
        return doc

    def _mismatch(self, item: Item, ref, prod) -> Mismatch:
        record, sample, reference = item.record, item.sample, self.reference
        shadow = self._shadow(record, ref)
        replay, note, local = self._replay(record, sample, prod, shadow)
        ref_pieces = reference.token_bytes(ref)
        if is_ids(prod):
            same_vocab = shadow["vocab_matches_reference"] is not False
            fields = describe_divergence(sample, ref, prod, ref_pieces, reference.token_bytes(prod) if same_vocab
                                         else None)
        elif replay is not None:  # a digest, reproduced by the replay: its ids locate the difference
            fields = describe_divergence(sample, ref, local, ref_pieces, replay.token_bytes(local))
            shadow["actual_from"] = "replay"
        else:
            head = ref[:WINDOW]
            expected = {"start": 0, "ids": [int(i) for i in head]}
            pieces = reference.token_bytes(head)
            if pieces is not None:
                expected["pieces"] = [p.decode("utf-8", "backslashreplace") for p in pieces]
            fields = {"token_index": None, "byte_offset": None, "char_offset": None, "offsets_exact": False,
                      "expected_len": int(ref.size), "actual_len": record.ids_len, "expected": expected,
                      "note": DIGEST_NOTE}
            shadow["reference"]["ids"] = [int(i) for i in ref]  # all of them (dropped under --redact)
        fields["shadow"] = shadow
        if item.session is not None:
            fields["session"] = item.session
        finding = Finding(record.tokenizer.engine, reference.spec, sample, "ids", self.source, fields,
                          detail=record.position)
        return Mismatch(finding, record, replay, note)

    def _replay(self, record: ShadowRecord, sample: Sample, prod, shadow: dict[str, Any]):
        """(executor that reproduces production here | None, why not, its ids)."""
        executor = self.replays.get(record.tokenizer.name)
        if isinstance(executor, str):
            shadow["replay"] = {"engine": None, "reproduces": False, "why": executor}
            return None, executor, None
        out = executor.encode([sample])[0]
        block: dict[str, Any] = {"engine": executor.spec, "reproduces": bool(agree(out, prod))}
        if isinstance(out, Failure):
            block["error"] = {"kind": out.kind, **out.as_dict()}
        elif is_ids(out):
            block["local"] = {"ids_len": int(out.size), "ids_digest": ids_digest(out)}
        else:
            block["skipped"] = out.reason
        shadow["replay"] = block
        if block["reproduces"]:
            return executor, None, out
        return None, why_not_reproduced(executor.spec, out), None


def why_not_reproduced(spec: str, out) -> str:
    """The true reason a replay engine's outcome could not stand in for production's: it failed,
    it cannot take the input (special-token segments on a plain-text engine), or it gave other
    ids (another build or configuration than production ran)."""
    if isinstance(out, Failure):
        return f"the replay engine {spec} failed on this input ({out.kind}: {out.type}: {out.message[:160]})"
    if not is_ids(out):
        return (f"the replay engine {spec} cannot take this input ({getattr(out, 'reason', out)}): give --engine an "
                "engine that honours allow_special (docs/plugins.md)")
    return (f"the replay engine {spec} gives other ids than production on this input: production ran another "
            "build or configuration (compare the tokenizer versions)")
