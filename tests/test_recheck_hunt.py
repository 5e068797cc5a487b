"""`verify recheck` on the one pipeline: groups of cases are shards; 1 and 2 workers give the
same counts, results and (no) findings; the per-case lines come in case order; a resume replays
only what was not committed; the job function is what the gate calls."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from test_regressions import PLANTED, case_doc, write_cases
from verify.adversarial.regressions.cases import load_cases
from verify.adversarial.regressions.hunt import CASES_PER_SHARD


@pytest.fixture
def planted(plugin_dir):
    (plugin_dir / "planted_regress.py").write_text(PLANTED)
    return "python:planted_regress"


def mixed_cases(planted, n=20):
    """``n`` cases of every outcome, in file order c00, c01, ..."""
    kinds = [("buggy", {}), ("other_bug", {}), ("fixed_engine", {}), ("fixed_engine", {"status": "fixed"}),
             ("missing_factory", {}), ("raises", {}),
             ("buggy", {"reference": f"{planted}:changed_reference"})]
    return [case_doc(planted, kinds[i % len(kinds)][0], id=f"c{i:02d}", **kinds[i % len(kinds)][1]) for i in range(n)]


def without_seconds(results):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in results]


def test_one_and_two_workers_give_the_same_counts_and_results(tmp_path, planted):
    folder = write_cases(tmp_path / "cases", mixed_cases(planted))
    seen = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        proc = run_cli("recheck", "--cases", str(folder), "--out", str(out), "--workers", str(workers),
                       "--no-progress", "--in-process")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stdout.strip().splitlines()
        assert [line.split()[1] for line in lines[:20]] == [f"c{i:02d}" for i in range(20)]  # case order
        manifest = json.loads((out / "manifest.json").read_text())
        report = json.loads((out / "recheck.json").read_text())
        assert manifest["complete"] and manifest["hunt"] == "recheck"
        assert manifest["shards"]["total"] == -(-20 // CASES_PER_SHARD) > 1
        assert (out / "divergences.jsonl").read_text() == ""  # a case is no finding
        seen.append((manifest["counts"], without_seconds(report["results"]), lines[:20],
                     {k: report[k] for k in ("counts", "as_recorded", "skipped", "changed", "newly_fixed")},
                     manifest["recheck"]))
    counts, results, lines, summary, section = seen[0]
    assert [r["id"] for r in results] == [f"c{i:02d}" for i in range(20)]
    assert counts["samples"] == 20 and counts["verified"] == summary["as_recorded"] == 6  # buggy x3, fixed x3
    assert counts["skipped"] == 3 and counts["error"] == 3 and counts["diverged"] == 8
    assert summary["counts"] == {"still-diverges": 6, "fixed": 6, "engine-unavailable": 3, "error": 3,
                                 "reference-changed": 2}
    assert section == summary
    missing = next(r for r in results if r["status"] == "engine-unavailable")
    assert missing["detail"].startswith(f"{planted}:missing_factory unavailable: ") and "missing_factory" in \
        missing["detail"].split("unavailable: ", 1)[1]  # why it did not load, as the workers said
    assert seen[1][:2] == (counts, results) and seen[1][2] == lines and seen[1][3:] == (summary, section)


def test_the_job_function_and_a_resume(tmp_path, planted):
    from verify.executors.pool import EngineOptions
    from verify.jobs.recheck import recheck_job
    from verify.pipeline.hunt import JobOptions

    folder = write_cases(tmp_path / "cases", mixed_cases(planted, 10))
    out = tmp_path / "out"
    job = JobOptions(out=out, engine=EngineOptions(isolate=False), workers=1, progress=False, minimize_budget_s=0)
    result = recheck_job(load_cases(folder), job, allow_unavailable=True, cases_dir=folder)
    assert [r["id"] for r in result.results] == [f"c{i:02d}" for i in range(10)]
    assert result.report["cases_dir"] == str(folder) and result.report["skipped"] == 1
    assert result.counts.samples == 9  # an unavailable case, allowed, is not counted
    assert result.complete

    again = recheck_job(load_cases(folder), JobOptions(out=out, engine=EngineOptions(isolate=False), workers=2,
                                                       progress=False, resume=True),
                        allow_unavailable=True, cases_dir=folder)
    assert without_seconds(again.results) == without_seconds(result.results)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["resumed"] and manifest["resume"]["shards_run_after_resume"] == 0
    proc = run_cli("recheck", "--cases", str(folder), "--resume", "--out", str(out), "--no-progress")
    assert proc.returncode == 2 and "allow_unavailable" in proc.stderr  # another run: refused

    (folder / "c00.json").write_text(json.dumps(case_doc(planted, "buggy", id="c00", actual=[1, 2])))
    proc = run_cli("recheck", "--cases", str(folder), "--resume", "--out", str(out), "--no-progress",
                   "--allow-unavailable")
    assert proc.returncode == 2 and "cases_sha256" in proc.stderr  # the cases changed: refused
