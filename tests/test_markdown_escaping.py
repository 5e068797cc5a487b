"""Markdown is rendered by viewers: every Markdown report shows hostile corpus text as text.

A corpus whose texts and ids hold HTML (``<h1>``, ``<b>``, ``<details open``), a backtick,
bidi and control characters goes through a candidate that differs on every sample; the
reports are rendered by a CommonMark renderer with HTML on (as GitHub and most viewers do):
no element the text spells appears, no invisible character survives, nothing breaks out of
its code span."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli

markdown_it = pytest.importorskip("markdown_it")

HOSTILE = [
    "<h1>HEAD</h1> and <b>bold</b> text",
    "<details open><summary>x</summary>y</details>",
    "right\u202eleft and \x1b[31mred\x1b[0m and del\x7f here",
    "para\u2029graph and nel\x85 end",
    "tick ` and ``` fence",
]
PLUGIN = r'''
from verify.engines import build_engine
from verify.sample import Sample

REF = build_engine("tiktoken:cl100k_base")


class Off:
    def encode_batch(self, texts):
        return [list(REF.encode_batch([Sample.plain("t", t)])[0]) + [42] for t in texts]


def off():
    return Off()
'''


def elements(html: str) -> list[str]:
    """Elements the hostile text spells, if any rendered as markup (the report's own title is an h1)."""
    return [tag for tag in ("<h1>HEAD", "<b>bold", "<details open", "<summary>x", "<b>x</b>") if tag in html]


def test_hostile_text_in_every_markdown_report_stays_text(tmp_path, plugin_dir):
    (plugin_dir / "md_plugin.py").write_text(PLUGIN)
    corpus = tmp_path / "hostile.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"id`{i}<b>x</b>", "text": t}) + "\n" for i, t in enumerate(HOSTILE)))
    out = tmp_path / "out"
    proc = run_cli("run", "--reference", "tiktoken:cl100k_base", "--candidate", "python:md_plugin:off",
                   "--corpus", str(corpus), "--out", str(out), "--workers", "1", "--in-process", "--no-progress",
                   "--minimize-budget", "5")
    assert proc.returncode == 1, proc.stderr
    renderer = markdown_it.MarkdownIt("commonmark", {"html": True})
    for name in ("summary.md", "ci-summary.md"):
        text = (out / name).read_text()
        rendered = renderer.render(text)
        assert not elements(rendered), (name, elements(rendered))
        for invisible in ("\u202e", "\x1b", "\x7f", "\u2029", "\x85"):
            assert invisible not in rendered, (name, repr(invisible))
    rendered = renderer.render((out / "summary.md").read_text())
    assert "<code>id`0&lt;b&gt;x&lt;/b&gt;</code>" in rendered  # the backtick stays inside its code span


def test_md_helpers_fence_and_escape():
    from verify.reports.md import md_cell, md_code, md_text

    assert md_code("a`b") == "`` a`b ``" and md_code("```") == "```` ``` ````"
    assert "\\|" in md_cell("a|b") and "\n" not in md_cell("a\nb")
    assert md_text("<h1>x</h1>") == "&lt;h1&gt;x&lt;/h1&gt;"
    assert "\\u202e" in md_text("\u202e") and "\\`" in md_text("`")
