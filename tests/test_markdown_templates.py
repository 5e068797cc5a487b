"""Markdown is escaped like HTML (issue 26): every Markdown report is laid out by a jinja2 template
(``verify/reports/templates/*.md.j2``) rendered through one environment, and every value reaches
its output through an escaping filter.

* No report module builds Markdown table rows by hand.
* Every output expression of every Markdown template ends in an escaping filter (``md_text``,
  ``md_code``, ``md_cell``, ``num``, ``trusted``), a macro call or a template literal.
* A hostile value (a pipe, backticks, ``<script>``, a newline, a ``javascript:`` link) in each
  report's untrusted fields is shown as text: no element, no link, no heading, no cell break.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from jinja2 import nodes

import verify
from verify.commands.sweep import table_rows
from verify.device_bench import render as render_bench
from verify.reports.ci_markdown import render_ci_summary
from verify.reports.gate_view import normalise_gate
from verify.reports.markdown import render_summary
from verify.reports.md_templates import environment, render
from verify.reports.report_data import ReportData
from verify.reports.unicode import write_unicode_report
from verify.selftest.report import markdown
from verify.shadow.report import render_markdown
from verify.sweep_result import SweepResult

PACKAGE = Path(verify.__file__).resolve().parent
TEMPLATES = PACKAGE / "reports" / "templates"
MARKDOWN_WRITERS = [*sorted((PACKAGE / "reports").glob("*.py")), PACKAGE / "shadow" / "report.py",
                    PACKAGE / "selftest" / "report.py", PACKAGE / "commands" / "sweep.py", PACKAGE / "device_bench.py"]
TABLE_ROW = re.compile(r"^\s*\|[ \-:]|\|---| \| ")
ESCAPING = {"md_text", "md_code", "md_cell", "num", "trusted"}
HOSTILE = "x|y `z` <script>alert(1)</script>\n# head [a](javascript:alert(1))"


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


def test_no_report_module_builds_markdown_table_rows_by_hand():
    offenders = []
    for path in MARKDOWN_WRITERS:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        offenders += [f"{path.relative_to(PACKAGE)}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
                      if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
                      and TABLE_ROW.search(n.value)]
    assert not offenders, "Markdown rows built in Python (lay them out in a .md.j2 template):\n" + "\n".join(offenders)


def _escaped(node: nodes.Node, macros: set[str]) -> bool:
    """True when what ``node`` prints has passed through an escaping filter (or is template text)."""
    if isinstance(node, (nodes.TemplateData, nodes.Const)):
        return True
    if isinstance(node, nodes.Filter):
        if node.name == "join":  # a list joined: each item through an escaping filter
            items = node.node
            return isinstance(items, nodes.Filter) and items.name == "map" and bool(items.args) \
                and isinstance(items.args[0], nodes.Const) and items.args[0].value in ESCAPING
        return node.name in ESCAPING
    if isinstance(node, nodes.CondExpr):
        return _escaped(node.expr1, macros) and (node.expr2 is None or _escaped(node.expr2, macros))
    if isinstance(node, nodes.Or):
        return _escaped(node.left, macros) and _escaped(node.right, macros)
    if isinstance(node, nodes.Call):  # a macro's output: its own expressions are checked where it is defined
        return isinstance(node.node, nodes.Name) and node.node.name in macros
    return False


def unescaped_expressions(source: str) -> list[str]:
    tree = environment().parse(source)
    macros = {m.name for m in tree.find_all(nodes.Macro)}
    macros |= {name if isinstance(name, str) else name[1]  # {% from ... import a as b %}: b
               for imp in tree.find_all(nodes.FromImport) for name in imp.names}
    return [repr(child) for out in tree.find_all(nodes.Output) for child in out.nodes if not _escaped(child, macros)]


def test_every_markdown_template_expression_passes_an_escaping_filter():
    templates = sorted(TEMPLATES.glob("*.md.j2"))
    assert len(templates) >= 9
    offenders = {t.name: bad for t in templates if (bad := unescaped_expressions(t.read_text(encoding="utf-8")))}
    assert not offenders, offenders


def test_the_checker_finds_a_raw_expression():
    assert len(unescaped_expressions("{{ x }} {{ x|upper }} {{ xs|join(', ') }} {{ x|md_text|upper }}")) == 4
    assert not unescaped_expressions('{{ x|md_text }} {{ xs|map("md_cell", 9)|join(", ") or "-" }} '
                                     '{{ "a" if y else z|num }}')


# --- a hostile value in each report ---------------------------------------------------------

def _summary(tmp_path: Path) -> str:
    manifest = _manifest()
    finding = {"kind": "ids", "engine": HOSTILE, "sample_id": HOSTILE, "token_index": 1, "byte_offset": 2,
               "context": {"before": HOSTILE, "after": HOSTILE}, "expected": {"pieces": [HOSTILE]},
               "actual": {"ids": [1]}, "minimized": {"input": [[HOSTILE, False]]},
               "session": {"id": HOSTILE, "turn": 2, "prefix_chars": 3, "append": [[HOSTILE, False]],
                           "update": {"replace_from": HOSTILE, "notes": {"rules": [HOSTILE]}}}}
    cluster = {"key": HOSTILE, "engine": HOSTILE, "count": 1, "tags": [HOSTILE], "cause": HOSTILE,
               "example": [[HOSTILE, True]]}
    return render_summary(manifest, [finding], [cluster], title=HOSTILE)


def _manifest() -> dict:
    return {"counts": {"samples": 2, "chars": 9, "tokens": 9, "verified": 1, "diverged": 1, "error": 0, "crash": 0,
                       "timeout": 0, "skipped": 1, "bad_records": 0, "findings": 1,
                       "per_engine": {HOSTILE: {"verified": 1, "diverged": 1, "error": 0, "crash": 0, "timeout": 0,
                                                "skipped": 1}},
                       "skipped_reasons": {HOSTILE: {HOSTILE: 1}}},
            "reference": {"spec": HOSTILE, "package": HOSTILE, "package_version": HOSTILE, "vocab_sha256": HOSTILE},
            "candidates": [{"spec": HOSTILE, "name": HOSTILE, "fingerprint": HOSTILE}],
            "reports": {HOSTILE: HOSTILE}, "sources": [{"name": HOSTILE}], "aborted": HOSTILE, "statement": HOSTILE,
            "started": "2026-01-01T00:00:00Z", "finished": None, "seconds": 1.0, "shards": {"committed": 1, "total": 1},
            "engine_notes": {HOSTILE: {"warnings": [HOSTILE], "not_loaded": HOSTILE}}}


def _ci_summary(tmp_path: Path) -> str:
    cluster = {"count": 2, "engine": HOSTILE, "key": HOSTILE, "tags": [HOSTILE], "minimised": False,
               "reproducer": HOSTILE, "context": {"before": HOSTILE, "after": HOSTILE},
               "difference": {"token_index": 1, "expected": {"id": HOSTILE, "piece": HOSTILE},
                              "actual": {"id": HOSTILE, "piece": HOSTILE}}}
    return render_ci_summary(ReportData(out=tmp_path, manifest=_manifest(), verdict="FAIL", findings_total=2,
                                        clusters=[cluster], clusters_total=1, triaged=True))


def _ci_gate(tmp_path: Path) -> str:
    cluster = {"key": HOSTILE, "engine": HOSTILE, "status": "new", "size": 3, "reproducer": [[HOSTILE, False]],
               "checks": [HOSTILE], "first_difference": {"token_index": 0,
                                                        "expected": {"ids": [1], "pieces": [HOSTILE]},
                                                        "actual": {"ids": [2], "pieces": [HOSTILE]}}}
    doc = {"suite": HOSTILE, "verdict": "fail", "reference": HOSTILE, "candidates": [HOSTILE], "reasons": [HOSTILE],
           "checks": [{"name": HOSTILE, "status": "fail", "counts": {"samples": 3}, "empty": [HOSTILE],
                       "skips": [{"engine": HOSTILE, "reason": HOSTILE, "count": 1, "remedy": HOSTILE}]},
                      {"name": HOSTILE, "status": "skipped", "note": HOSTILE}],
           "clusters": [cluster, {**cluster, "status": "allowlisted",
                                  "allowlist": {"reason": HOSTILE, "expires": HOSTILE, "link": HOSTILE}}],
           "baseline": {"out": HOSTILE, "fixed": [cluster], "throughput": {HOSTILE: {HOSTILE: {
               "before": 1.0, "after": 2.0, "change": 1.0}}}}}
    return render_ci_summary(ReportData(out=tmp_path, manifest={}, verdict="FAIL", gate=normalise_gate(doc, tmp_path)))


def _unicode(tmp_path: Path) -> str:
    result = SweepResult(reference=HOSTILE, candidate=HOSTILE, mismatched=[[0x1C, 0x1F]], count=4, unicode_version=None,
                         reference_unicode_version=None, version_basis="inferred", explained=0.0, whitespace=[],
                         unexplained=[[0x1C, 0x1F]], errors=[], pack_only=[], by_context={HOSTILE: 4},
                         contexts_of={0x1C: [HOSTILE]})
    return write_unicode_report(result, tmp_path)[1].read_text(encoding="utf-8")


def _shadow(tmp_path: Path) -> str:
    rep = {"minimized": False, "why": HOSTILE, "request_id": HOSTILE, "input": [[HOSTILE, False]],
           "first_difference": {"token_index": 1, "char_offset": 2, "expected": {"pieces": [HOSTILE]},
                                "actual": {"ids": [HOSTILE]}}}
    row = {"rank": 1, "key": HOSTILE, "engine": HOSTILE, "status": "allowlisted", "reason": HOSTILE, "count": 2,
           "first_seen": HOSTILE, "last_seen": HOSTILE, "versions": [HOSTILE], "request_ids": [HOSTILE],
           "suspects": [HOSTILE], "cause": HOSTILE, "same_cause_as": [2], "reproducer": rep}
    redacted = {**row, "rank": 2, "reproducer": {"minimized": False, "why": HOSTILE, "request_id": HOSTILE,
                                                 "redacted": {"chars": 9, "text_sha256": HOSTILE,
                                                              "window": {"segments": [[HOSTILE, False]]}}}}
    report = {"verdict": "fail", "redacted": True, "files": [HOSTILE], "replay_engines": {HOSTILE: HOSTILE},
              "reference": {"spec": HOSTILE, "package": HOSTILE, "package_version": HOSTILE, "vocab_sha256": HOSTILE},
              "counts": {"records": 3, "confirmed": 1, "mismatched": 2, "reference_failed": 0, "skipped": 0,
                         "bad_records": 1, "clusters": 2, "new_clusters": 0, "causes": 1, "accepted_findings": 2},
              "known_clusters": {"from": HOSTILE, "not_seen": []},
              "tokenizers": [{"name": HOSTILE, "version": HOSTILE, "vocab_sha256": HOSTILE,
                              "vocab_matches_reference": False, "records": 3, "confirmed": 1, "mismatched": 2}],
              "clusters": [row, redacted], "bad_records": [{"position": HOSTILE, "reason": HOSTILE}]}
    return render_markdown(report)


def _selftest(tmp_path: Path) -> str:
    shadow = {"per_request": 0.05, "requests": 45, "simulated": {"median": 45, "range_5_95": [26, 73]},
              "sample_rate": 0.05, "target": 0.9}
    kind = {"kind": "substitute", "inputs": 5, "injected": 0, "found": 0, "share_found": 0.0, "located": 0,
            "bytes_preserved": 0, "false_positives": 0, "shadow": shadow, "passed": False, "missed": [HOSTILE],
            "spec": HOSTILE, "run": HOSTILE}
    return markdown({"passed": False, "reference": HOSTILE, "seed": 0, "rate": 0.25, "faults_per_kind": 5,
                     "documents": 5, "corpus": HOSTILE, "unicode_fault": HOSTILE, "after": 300, "turns": 3,
                     "min_recall": 0.9, "kinds": [kind]})


def _bench(tmp_path: Path) -> str:
    row = {"engine": HOSTILE, "reference": False, "shape": "one document", "chars": 10, "documents": 1,
           "median_s": 0.1, "chars_per_s": 100.0, "tokens": 3, "failed": 0, "identical": True}
    return render_bench({"reference": HOSTILE, "repeats": 3, "rows": [row],
                         "notes": {HOSTILE: {"routes_exercised": [HOSTILE], "gpu": {"kernel_delivery": HOSTILE},
                                             "warnings": [HOSTILE]}}})


def _sweep(tmp_path: Path) -> str:
    (tmp_path / "clusters.json").write_text(json.dumps({"clusters": [
        {"engine": HOSTILE, "key": HOSTILE, "count": 2, "example": [[HOSTILE, False]]}]}), encoding="utf-8")
    manifest = {**_manifest(), "reference": {"spec": "ref"},
                "candidates": [{"spec": HOSTILE, "package_version": HOSTILE}]}
    return render("sweep.md.j2", rows=table_rows(manifest, tmp_path), unicode_rows=[], skipped=[HOSTILE])


REPORTS = {"summary.md": _summary, "ci-summary.md": _ci_summary, "ci-summary.md of a gate": _ci_gate,
           "unicode.md": _unicode, "shadow.md": _shadow, "selftest.md": _selftest, "bench.md": _bench,
           "sweep.md": _sweep}


@pytest.mark.parametrize("name", REPORTS)
def test_a_hostile_value_stays_text_in_every_markdown_report(name, tmp_path):
    markdown_it = pytest.importorskip("markdown_it")  # renders as GitHub does: CommonMark, HTML on, tables
    text = REPORTS[name](tmp_path)
    shown = text.count("x\\|y") + text.count("x|y")  # in a table or in text its pipe is escaped
    assert shown, name
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<script" not in html and 'href="javascript' not in html, name
    assert "<h1>head" not in html, name  # its newline started no heading
    # each shown whole, no pipe broke a table cell (a code span outside a table shows its escape)
    assert html.count("x|y") + html.count("x\\|y") == shown, name
