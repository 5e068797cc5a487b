"""The run folder's layout (``verify.rundir.layout``): the names every run writes, in one place."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from verify.rundir import layout
from verify.rundir.layout import RunFolder


def test_the_names_a_run_writes_are_the_ones_it_always_wrote():
    """Committed folders (and records naming these files) outlive a release: a rename is a break."""
    folder = RunFolder("OUT")
    assert {name: getattr(folder, name).name for name in (
        "plan", "manifest", "hunt", "findings", "attempts", "shards", "inputs", "status", "lock", "triage",
        "clusters", "triage_summary", "summary", "report", "check", "recheck", "length", "certificate",
        "unicode", "unicode_summary", "shadow", "shadow_summary", "gate_check")} == {
        "plan": "plan.json", "manifest": "manifest.json", "hunt": "hunt.json", "findings": "divergences.jsonl",
        "attempts": "attempts.jsonl", "shards": "shards", "inputs": "inputs", "status": "status",
        "lock": ".verify.lock", "triage": "triage.jsonl", "clusters": "clusters.json",
        "triage_summary": "triage.json", "summary": "summary.md", "report": "report.html", "check": "check.json",
        "recheck": "recheck.json", "length": "length.json", "certificate": "certificate.json",
        "unicode": "unicode.json", "unicode_summary": "unicode.md", "shadow": "shadow.json",
        "shadow_summary": "shadow.md", "gate_check": "gate-check.json"}
    assert folder.clusters == Path("OUT") / "clusters.json"


def test_the_findings_module_below_the_run_folder_spells_the_same_names():
    """``verify.findings`` cannot import the layout (the run folder imports it), so it names the
    findings file and the stored inputs itself."""
    from verify import findings

    default = inspect.signature(findings.FindingWriter).parameters["name"].default
    assert default == layout.FINDINGS_FILE
    assert f'f"{layout.INPUTS_DIR}/{{key}}.json"' in inspect.getsource(findings)


def test_the_layout_imports_nothing_from_verify():
    """So that any module may use it without making an import circle."""
    tree = ast.parse(Path(layout.__file__).read_text(encoding="utf-8"))
    imported = [n.module if isinstance(n, ast.ImportFrom) else a.name for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in getattr(n, "names", [])]
    assert not [m for m in imported if m and m.startswith("verify")]
