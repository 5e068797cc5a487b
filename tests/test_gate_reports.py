"""Reports tell the truth (issue 19): real gates and runs, their pages opened in headless
Chromium and their PR comments read back.

* A failing gate (with a baseline: unchanged, new and fixed clusters, a whitespace-only
  reproducer), a passing gate (an allowlisted cluster, a skipped check), a replay with
  session findings and a ``verify replay --edits`` run: each page's header says the verdict
  of its own files, a gate page's counts are gate.json's, every link resolves, and the
  screenshot is not blank. ``VERIFY_SCREENSHOTS=DIR`` keeps the PNGs (docs/img/ is made so).
* ``ci-summary.md`` lists the failing clusters whatever their baseline status, then new /
  fixed / unchanged / allowlisted / expired; a PASS names its skipped checks; its footer
  names only files that exist.
* A skip says why and what to do (stdout, summary.md, HTML, ci-summary.md, JUnit
  ``<skipped message=...>``, ``--template plain`` for transcripts), and a check that ran
  nothing is marked, never a silent pass.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import REPO, run_cli
from planted import CONCAT_SESSION_PLUGIN
from test_gate import CORPUS, PLUGIN, SUITE, write_allowlist
from test_report_html import CHROMIUM, open_in_chromium, png_colours
from verify.cli import main

IMG = REPO / "docs" / "img"
SCREENSHOTS = ("gate-fail.png", "gate-pass.png", "replay-sessions.png", "replay-edits.png")
TURNS = {"s-digits": ["count 12", "345 and ", "more"], "s-space": ["hello   ", " world", "! done"],
         "s-long": ["word " * 30, "words " * 30, "tail 42"]}
SESSIONS = CONCAT_SESSION_PLUGIN + '''
class Correct:
    def __init__(self): self.text = ""
    def append(self, text):
        self.text += text
        return enc(self.text)

class Engine:
    def __init__(self, cls): self.cls = cls
    def open_session(self, state=None): return self.cls()

def concat(): return Engine(Concat)
def correct(): return Engine(Correct)
'''


class Rows(HTMLParser):
    """Text by table cell: ``rows[tr id][td class]``, and the text of every ``h1``/``title``."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows: dict[str, dict[str, str]] = {}
        self.heads: dict[str, str] = {"h1": "", "title": ""}
        self._row = self._cell = self._head = None
        self._seen: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and attrs.get("id"):
            self._row = self.rows.setdefault(attrs["id"], {})
        elif tag == "td" and self._row is not None:
            self._cell = next((c for c in (attrs.get("class") or "").split() if c.startswith("c-")), None)
            if self._cell:
                self._row[self._cell] = ""
        elif tag in self.heads and tag not in self._seen:  # the page's own title, not an SVG tooltip's
            self._head = tag
            self._seen.add(tag)

    def handle_endtag(self, tag):
        if tag == "tr":
            self._row = None
        elif tag == "td":
            self._cell = None
        elif tag == self._head:
            self._head = None

    def handle_data(self, data):
        if self._row is not None and self._cell:
            self._row[self._cell] += data
        if self._head:
            self.heads[self._head] += data


def parse(html: str) -> Rows:
    rows = Rows()
    rows.feed(html)
    return rows


def number(cell: str) -> int | None:
    cell = cell.strip()
    return None if cell in ("—", "") else int(cell.replace(",", ""))


def keep_screenshot(shot: Path) -> None:
    """``VERIFY_SCREENSHOTS=DIR`` copies the screenshot there (``VERIFY_SCREENSHOTS=docs/img``
    refreshes the README's)."""
    target = os.environ.get("VERIFY_SCREENSHOTS")
    if not target:
        return
    Path(target).mkdir(parents=True, exist_ok=True)
    try:
        from PIL import Image, ImageChops
    except ImportError:
        shutil.copy2(shot, Path(target) / shot.name)
        return
    with Image.open(shot) as img:  # the page's end, not the window's: the blank below it cut off
        rgb = img.convert("RGB")
        box = ImageChops.difference(rgb, Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1))))
        bottom = (box.getbbox() or (0, 0, rgb.width, rgb.height))[3]
        page = rgb.crop((0, 0, rgb.width, min(rgb.height, bottom + 24)))
        page.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(Path(target) / shot.name, optimize=True)


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_tokenizer_json):
    """Two nights of a gate over a planted candidate, a passing gate, a session replay and an
    edits run, all on the tiny vocabulary (seconds each)."""
    root = tmp_path_factory.mktemp("reports")
    plugins = root / "plugins"
    plugins.mkdir()
    (plugins / "gate_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    (plugins / "report_sessions.py").write_text(SESSIONS.replace("PATH", repr(str(tiny_tokenizer_json))))
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    (root / "suite.toml").write_text(SUITE.format(reference=f"hf:{tiny_tokenizer_json}"))
    (root / "traces.jsonl").write_text("".join(
        json.dumps({"schema": "verify.trace/1", "session": sid, "turn": i, "text": text}) + "\n"
        for sid, turns in TURNS.items() for i, text in enumerate(turns)))
    env = {"PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}

    def gate(plant: str, rows: list[dict], out: str, *args: str):
        write_allowlist(root / "allowlist.toml", rows)
        return run_cli("gate", "suite.toml", "--out", out, *args, cwd=root, env={**env, "GATE_PLANT": plant})

    found = {"root": root}
    found["night-1"] = gate("ß ", [], "night-1")  # a space bug tonight: its reproducer is whitespace
    found["night-2"] = gate("ß€", [], "night-2", "--baseline", "night-1")
    eszett = next(c["key"] for c in json.loads((root / "night-2" / "gate.json").read_text())["clusters"]
                  if "ß" in "".join(t for t, _ in c["reproducer"]))
    found["pass"] = gate("ß", [{"engine": "gate_plugin", "key": eszett, "reason": "known: eszett",
                                "link": "https://example.org/1", "expires": "2999-12-31"}], "pass")
    found["replay"] = run_cli("replay", "--engine", "python:report_sessions:concat", "--reference",
                              f"hf:{tiny_tokenizer_json}", "--traces", str(root / "traces.jsonl"), "--out",
                              str(root / "replay"), "--no-progress", "--workers", "1", env=env)
    found["edits"] = edits_run(root / "edits", f"hf:{tiny_tokenizer_json}", plugins)
    return found


def edits_run(out: Path, reference: str, plugins: Path) -> int:
    """``verify replay --edits 40 --seed 1`` as the command runs it (EditsHunt on the driver),
    called through the hunt so the folder does not depend on ``verify.jobs.edits``'s extras."""
    import sys

    from verify.adversarial.fuzz.edits_hunt import EditsHunt
    from verify.driver import run_hunt
    from verify.executors.pool import EngineOptions
    from verify.pipeline.hunt import JobOptions

    sys.path.insert(0, str(plugins))
    try:
        job = JobOptions(out=out, engine=EngineOptions(isolate=False), workers=1, progress=False,
                         minimize_budget_s=30.0, argv=["replay", "--engine", "python:report_sessions:concat",
                                                        "--edits", "40", "--seed", "1"])
        result = run_hunt(EditsHunt(reference, ["python:report_sessions:concat"], job, examples=40, seed=1), job)
    finally:
        sys.path.remove(str(plugins))
    return result.counts.findings


def test_the_folders_ran(folders):
    for name in ("night-1", "night-2", "pass", "replay"):
        assert folders[name].returncode == (0 if name == "pass" else 1), folders[name].stderr[-2000:]
    assert folders["edits"] >= 1


def gate_doc(folders, name: str) -> dict:
    return json.loads((folders["root"] / name / "gate.json").read_text(encoding="utf-8"))


def test_the_second_nights_comment_lists_the_unchanged_failing_clusters_then_each_status(folders):
    doc = gate_doc(folders, "night-2")
    status = {c["key"]: c["status"] for c in doc["clusters"]}
    assert sorted(status.values()) == ["new", "unchanged"] and doc["baseline"]["fixed"]  # the space bug is gone
    text = (folders["root"] / "night-2" / "ci-summary.md").read_text(encoding="utf-8")
    assert text.startswith("### verify gate `planted`: **FAIL**")
    failing = text[text.index("#### Failing clusters (2: "):text.index("#### By status")]
    for key, state in status.items():  # listed whatever their baseline status, with the status
        assert re.search(rf"\d\. \*\*{state}\*\* .*`{re.escape(key)}`", failing), (key, failing)
    sections = [line for line in text.splitlines() if line.startswith("- **")]
    assert [s.split("**")[1] for s in sections] == ["New", "Fixed since the baseline", "Unchanged (still failing)",
                                                   "Allowlisted", "Expired (failing)"]
    fixed = doc["baseline"]["fixed"][0]
    assert fixed["reproducer"] and f"`{fixed['key']}` — was " in text  # a fixed cluster shows what it was
    footer = text.strip().splitlines()[-1]
    named = re.findall(r"`([^`]+)`", footer)
    assert named == ["report.html", "gate.json", "junit.xml"]
    assert all((folders["root"] / "night-2" / n).is_file() for n in named)
    assert "summary.md" not in text and "divergences.jsonl" not in text


def test_a_pass_names_its_skipped_check_and_the_allowlisted_cluster(folders):
    doc = gate_doc(folders, "pass")
    assert doc["verdict"] == "pass"
    text = (folders["root"] / "pass" / "ci-summary.md").read_text(encoding="utf-8")
    assert text.startswith("### verify gate `planted`: **PASS**")
    assert "**Checks**: 2 — 1 passed; 1 skipped: `recheck` (`no regression case" in text
    assert "- **Allowlisted** (1):" in text and "known: eszett" in text and "**Failing clusters**: none." in text


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (CI installs it: apt-get install chromium)")
@pytest.mark.parametrize("name, shot", [("night-2", "gate-fail.png"), ("pass", "gate-pass.png")])
def test_a_gate_page_heads_with_its_verdict_and_counts_equal_gate_json(folders, tmp_path, name, shot):
    doc = gate_doc(folders, name)
    html, _ = open_in_chromium(folders["root"] / name / "report.html", tmp_path / shot)
    keep_screenshot(tmp_path / shot)
    page = parse(html)
    verdict = doc["verdict"].upper()
    assert page.heads["h1"].split() == ["verify", "gate", doc["suite"] + ":", verdict]
    assert page.heads["title"] == f"verify gate {doc['suite']}: {verdict}"
    assert "still running" not in html and "all samples" not in html  # no run header on a gate page
    for i, check in enumerate(doc["checks"], 1):
        row = page.rows[f"check-{i}"]
        for key in ("samples", "verified", "diverged", "error", "crash", "timeout", "skipped", "bad_records"):
            assert number(row[f"c-{key}"]) == check["counts"].get(key), (check["name"], key)
    for status in {c["status"] for c in doc["clusters"]}:
        assert f'id="{status}"' in html
    if name == "night-2":
        assert 'id="fixed"' in html and "\\x20" in html  # the fixed space bug, its reproducer escaped
        assert 'id="baseline"' in html and "unchanged" in html


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (CI installs it: apt-get install chromium)")
def test_a_replay_page_shows_session_findings_with_turn_prefix_and_append(folders, tmp_path):
    out = folders["root"] / "replay"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    html, dom = open_in_chromium(out / "report.html", tmp_path / "replay-sessions.png")
    keep_screenshot(tmp_path / "replay-sessions.png")
    page = parse(html)
    assert page.heads["h1"].split() == ["verify", "replay:", "FAIL"] and manifest["complete"]
    counts = manifest["counts"]
    assert f"all turns ({counts['samples']}; {counts['chars']} chars" in "".join(dom.text)
    section = html[html.index('id="session-findings"'):]
    findings = [json.loads(line) for line in (out / "divergences.jsonl").read_text().splitlines()]
    for f in findings:
        assert f"<code>{f['session']['id']}</code>" in section
    assert "minimised prefix" in section and "minimised append" in section


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (CI installs it: apt-get install chromium)")
def test_an_edits_page_has_its_counts_clusters_and_the_minimised_pair(folders, tmp_path):
    out = folders["root"] / "edits"
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    html, dom = open_in_chromium(out / "report.html", tmp_path / "replay-edits.png")
    keep_screenshot(tmp_path / "replay-edits.png")
    page = parse(html)
    assert page.heads["h1"].split() == ["verify", "replay", "--edits:", "FAIL"]
    text = "".join(dom.text)
    assert f"all edit scripts ({manifest['counts']['samples']}; chars and tokens not counted" in text
    assert "0 chars/s" not in text and "python:report_sessions:concat" in text
    clusters = json.loads((out / "clusters.json").read_text())["clusters"]
    assert clusters and f"Clusters ({len(clusters)})" in text and "minimised prefix" in html


def test_the_committed_screenshots_are_pictures():
    for name in SCREENSHOTS:
        path = IMG / name
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
        colours, not_background = png_colours(path)
        assert colours > 8 and not_background > 0.05, name


# --- skips and empty checks ----------------------------------------------------------------

def test_an_all_skipped_replay_says_why_and_names_the_remedy_everywhere(tmp_path, plugin_dir, tiny_tokenizer_json):
    (plugin_dir / "report_sessions.py").write_text(SESSIONS.replace("PATH", repr(str(tiny_tokenizer_json))))
    out = tmp_path / "agent"
    proc = run_cli("replay", "--engine", "python:report_sessions:correct", "--reference", "tiktoken-cl100k",
                   "--traces", "agent:1:1", "--out", str(out), "--no-progress", "--workers", "1", "--in-process")
    assert proc.returncode == 1, proc.stderr
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    assert counts["skipped"] == counts["samples"] > 0
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert f"## Skipped ({counts['samples']} turns" in summary and "--template plain" in summary
    assert "--template plain" in (out / "ci-summary.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="skips"' in html and "--template plain" in html


def test_counts_carry_skip_reasons_and_the_rows_add_up():
    from verify.counts import Counts
    from verify.reports.skips import NOT_RECORDED, SPECIAL_SEGMENTS, TEMPLATE_PLAIN, skip_rows

    a, b = Counts(), Counts()
    a.engine("e")["skipped"] += 3
    a.skip_reason("e", SPECIAL_SEGMENTS, 2)  # one of the three without a reason
    b.engine("e")["skipped"] += 1
    b.skip_reason("e", SPECIAL_SEGMENTS)
    total = a.add(b)
    assert total.skipped_reasons == {"e": {SPECIAL_SEGMENTS: 3}}
    assert Counts.from_dict(total.as_dict()).skipped_reasons == total.skipped_reasons
    assert "skipped_reasons" not in Counts().as_dict()  # documents without skips keep their shape
    rows = skip_rows(total.as_dict(), traces=True)
    assert [(r.reason, r.count) for r in rows] == [(SPECIAL_SEGMENTS, 3), (NOT_RECORDED, 1)]
    assert rows[0].remedy == TEMPLATE_PLAIN and "--template plain" in TEMPLATE_PLAIN


SKIPS_SUITE = '''
[gate]
name = "skips"
reference = "tiktoken-cl100k"
candidates = ["python:report_sessions:correct"]
in_process = true
workers = 1
minimize_budget = 1

[[check]]
name = "agent"
kind = "replay"
traces = "agent:1:1"
allow_skipped = true

[[check]]
name = "meta"
kind = "metamorphic"
corpus = "smoke"
limit = 4
checks = ["repeat", "stress"]
stress_seconds = 1e-9
'''


def test_a_gate_check_that_skipped_everything_or_ran_a_part_empty_is_marked_and_junit_says_why(
        tmp_path, plugin_dir, tiny_tokenizer_json, capsys):
    from lxml import etree

    (plugin_dir / "report_sessions.py").write_text(SESSIONS.replace("PATH", repr(str(tiny_tokenizer_json))))
    suite = tmp_path / "skips.toml"
    suite.write_text(SKIPS_SUITE)
    code = main(["gate", str(suite), "--out", str(tmp_path / "out")])
    stdout = capsys.readouterr().out
    assert code == 1  # the stress part ran nothing: the check cannot pass
    doc = json.loads((tmp_path / "out" / "gate.json").read_text())
    agent, meta = doc["checks"]
    (skip,) = agent["skips"]
    assert skip["count"] == agent["counts"]["skipped"] == agent["counts"]["samples"] and "--template plain" in skip["remedy"]
    assert agent["empty"] == [f"every one of its {skip['count']} samples was skipped: nothing was compared"]
    # every stress phase checks its first unit whatever the budget; the state hunt has no victim the
    # engine gets right alone (it is not the reference's tokenizer): that part ran nothing
    assert meta["status"] == "fail" and len(meta["empty"]) == 1 and "0 victims checked" in meta["empty"][0]
    assert "raise stress_seconds" in meta["empty"][0] and "--stress-budget" not in meta["note"]  # the suite's key
    assert "parts that ran nothing: agent, meta" in stdout and "--template plain" in stdout

    tree = etree.parse(str(tmp_path / "out" / "junit.xml"))
    schema = etree.XMLSchema(etree.parse(str(Path(__file__).with_name("junit.xsd"))))
    assert schema.validate(tree), schema.error_log
    cases = tree.findall(".//testsuite[@name='skips.skips']/testcase")
    messages = [c.find("skipped").get("message") for c in cases]
    assert len(messages) == 3 and "--template plain" in messages[0] and f"{skip['count']} samples skipped" in messages[0]
    assert sum("ran nothing" in m for m in messages) == 2
    comment = (tmp_path / "out" / "ci-summary.md").read_text(encoding="utf-8")
    assert "#### Skipped samples" in comment and "#### Ran nothing" in comment and "(part empty)" in comment


def test_reproducers_show_whitespace_and_repetition_as_escapes():
    from verify.reports.views import EMPTY_INPUT, shown_input

    assert shown_input([["  ", False]]) == "\\x20\\x20"
    assert shown_input([[" a\u202e ", False]]) == "\\x20a\\u202e\\x20"
    assert shown_input([["1" * 24998 + "\x1c11", False]]) == "'1'×24998 + '\\x1c' + '1'×2"
    assert shown_input([["a", False], ["<|endoftext|>", True]]) == "[a] [special: <|endoftext|>]"
    assert shown_input([["", False]]) == EMPTY_INPUT
    assert ast.literal_eval('"' + shown_input([["\t x \n", False]]) + '"') == "\t x \n"
