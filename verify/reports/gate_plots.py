"""The gate page's plots, from the normalised gate (``gate_view``) and each check's own
committed shard markers (never its findings: what a check found is already in gate.json
as clusters with sizes).

    gate_plots(gate, out) -> {"outcomes", "clusters", "checks": {name: {"classes", "throughput"}}}

``outcomes``: every check's samples by state, each bar the check's share (a sweep of a
million code points beside a corpus of 400 documents); ``clusters``: every check's
clusters by status; per check, its own findings by class (each cluster's findings in that
check, by the first two parts of the cluster key) and its samples committed over time (from its shard markers, in every
run folder of the check: a metamorphic check over several candidates has one each).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from verify.counts import STATES
from verify.reports.plots import bar_chart, line_chart, stacked_bars
from verify.rundir.layout import RunFolder

CLUSTER_STATES = ("new", "unchanged", "expired", "allowlisted")


def cluster_class(key: str) -> str:
    """``ids/Zs+Ll/Common+Latin/space|letter`` -> ``ids Zs+Ll``; ``unicode/mismatch/...`` -> ``unicode mismatch``."""
    return " ".join(key.split("/")[:2])


def run_folders(check_dir: Path) -> list[Path]:
    """The run folders of one check: the folder itself, or its subfolders that hold a plan."""
    if RunFolder(check_dir).plan.is_file():
        return [check_dir]
    if not check_dir.is_dir():
        return []
    return sorted(p for p in check_dir.iterdir() if RunFolder(p).plan.is_file())


def committed_over_time(folders: list[Path]) -> list[tuple[float, int]]:
    """(seconds since the first commit, samples committed so far) over the shard markers of ``folders``."""
    from verify.errors import VerifyError
    from verify.rundir.plan import load_plan
    from verify.rundir.store import ShardStore

    timed = []
    for folder in folders:
        if not RunFolder(folder).shards.is_dir():
            continue  # ShardStore would make it
        try:
            plan = load_plan(folder)
        except VerifyError:
            continue
        for marker in ShardStore(folder).committed([s.id for s in plan.shards]).values():
            if isinstance(marker.get("committed"), (int, float)):
                timed.append((float(marker["committed"]), int((marker.get("counts") or {}).get("samples", 0) or 0)))
    timed.sort()
    points, total = [], 0
    start = timed[0][0] if timed else 0.0
    for committed, samples in timed:
        total += samples
        points.append((max(0.0, committed - start), total))
    return points


def gate_plots(gate: dict[str, Any], out: Path | None) -> dict[str, Any]:
    checks = gate["checks"]
    outcomes = stacked_bars("Outcomes per check (each bar the check's samples; share by state)",
                            [(c["name"], {k: c["counts"].get(k) or 0 for k in STATES}) for c in checks], STATES,
                            share=True, empty="no check counted a sample")
    clusters = stacked_bars("Clusters per check by status",
                            [(c["name"], c["clusters"]) for c in checks], CLUSTER_STATES,
                            empty="no clusters")
    per_check: dict[str, dict[str, Any]] = {}
    for c in checks:
        classes: Counter = Counter()
        for cluster in gate["clusters"]:
            if c["name"] in cluster["checks"]:  # this check's own findings, not the gate-wide size
                own = cluster["sizes"].get(c["name"]) if cluster.get("sizes") else \
                    cluster["size"] if len(cluster["checks"]) == 1 else None
                if isinstance(own, int) and own:
                    classes[cluster_class(cluster["key"])] += own
        folders = run_folders(Path(out) / c["folder"]) if out is not None and c["folder"] else []
        points = committed_over_time(folders)
        per_check[c["name"]] = {
            "classes": bar_chart("This check's findings by class", classes, top=8, empty="no clusters"),
            "throughput": line_chart("Samples committed over time", points, y_unit="samples",
                                     empty="no timed shard commits" if folders else "no run folder")}
    return {"outcomes": outcomes, "clusters": clusters, "checks": per_check}
