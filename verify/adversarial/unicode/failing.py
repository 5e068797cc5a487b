"""The Unicode sweep's findings: each mismatching code point as the string that fails on its own.

    findings = failing_strings(reference, candidates, probes, states, limit=MAX_PER_SHARD)

The sweep (``sweep.scan_range``) knows, per candidate, the contexts each mismatching code point
differed in -- often only inside a pack of probes. Triage needs inputs: so each such code point's
probe texts in those contexts are encoded again, alone, through the reference and the candidate,
and the first that still differs (or fails) is the finding (``unicode:U+180E:digits-after``),
committed like any other hunt's and minimised and clustered by cause after the shards. A code
point whose texts all agree alone is no finding here (the sweep counts it, as ``pack_only`` when
only a pack showed it). At most ``limit`` code points per candidate and shard are re-encoded
(the lowest first): a table change of thousands of code points is one cause, and its count
stays in the sweep's report.
"""

from __future__ import annotations

from typing import Sequence

from verify.comparison import CachedTokenBytes, Side, compare_batch
from verify.findings import Finding
from verify.sample import Sample

MAX_PER_SHARD = 64  # mismatching code points re-encoded alone, per candidate and shard
SOURCE = "unicode"


def failing_strings(reference, candidates: Sequence, probes, states: Sequence, *,
                    limit: int = MAX_PER_SHARD) -> list[Finding]:
    """One finding per mismatching code point of each candidate (``states[i]`` is candidate ``i``'s
    ``CandidateState``): its first probe text, in a context it differed in, that differs alone."""
    ref_side = Side(reference.spec, CachedTokenBytes(reference))
    found: list[Finding] = []
    for candidate, state in zip(candidates, states):
        samples: list[Sample] = []
        of_cp: list[int] = []
        for cp in sorted(state.bad)[:limit]:
            contexts = state.bad[cp]
            for name, text in probes.probes(cp):
                if name in contexts:
                    samples.append(Sample.plain(f"{SOURCE}:U+{cp:04X}:{name}", text))
                    of_cp.append(cp)
        if not samples:
            continue
        outcomes = [reference.encode(samples), candidate.encode(samples)]
        _, findings = compare_batch(samples, outcomes, [ref_side, Side(candidate.spec, CachedTokenBytes(candidate))],
                                    SOURCE)
        by_id = {s.id: cp for s, cp in zip(samples, of_cp)}
        seen: set[int] = set()
        for finding in findings:
            cp = by_id.get(finding.sample.id)
            if finding.engine == candidate.spec and cp is not None and cp not in seen:
                seen.add(cp)
                found.append(finding)
    return found
