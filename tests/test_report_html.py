"""The HTML report and the CI summary, read from the committed files of a real run whose
corpus (and sample ids, and gate.json) is hostile: opened in headless Chromium, the
page's DOM holds only what the templates make, bidi controls show as escapes, nothing
is blocked by its own Content-Security-Policy, and the page is not blank. The CI
summary stays within a comment's size with 500 clusters."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zlib
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import REPO, run_cli

TEMPLATES = REPO / "verify" / "reports" / "templates"
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "</textarea><b>x",
           '<a href="javascript:alert(1)">click</a>', "\"'><svg onload=alert(1)>"]
CORPUS = ([{"id": h, "text": f"{h} tail"} for h in HOSTILE]
          + [{"id": "rlo\u202eid", "text": "abc \u202edlrow olleh"},
             {"id": "lri", "text": "left \u2066isolated\u2069 end"},
             {"id": "fine", "text": "plain words, nothing planted"}])

PLUGIN = '''
from tokenizers import Tokenizer

class Engine:
    """The tiny reference with one planted bug: a text holding '<' or a bidi control
    gets id 0 in the middle."""
    def __init__(self):
        self.tok = Tokenizer.from_file(PATH)
    def encode_batch(self, texts):
        out = []
        for text, enc in zip(texts, self.tok.encode_batch(list(texts), add_special_tokens=False)):
            ids = list(enc.ids)
            if ids and any(c in text for c in "<\\u202e\\u2066"):
                ids[len(ids) // 2] = 0
            out.append(ids)
        return out

def planted():
    return Engine()
'''

GATE = {
    "schema": "verify.gate/1", "suite": "nightly <b>suite</b>", "verdict": "fail",
    "checks": [{"name": "corpus <script>x</script>", "kind": "corpus", "status": "fail", "out": "checks/corpus",
                "counts": {"samples": 8, "diverged": 7}, "seconds": 1.5, "note": "\u202eevil note"},
               {"name": "fuzz", "status": "skipped"},  # optional keys missing
               {"name": "sneaky", "status": "pass", "out": "javascript:alert(2)"}],
    "clusters": [{"key": "ids/Ll+Ll/Latin+Latin/letter|letter", "engine": "python:x", "status": "new", "size": 3,
                  "reproducer": [["<img src=x onerror=alert(1)>\u2066", False]],
                  "first_difference": {"token_index": 2, "expected": {"start": 0, "ids": [1, 2, 3], "pieces": ["a", "b", "\u202e"]},
                                       "actual": {"start": 0, "ids": [1, 2, 0]}}},
                 {"key": "k2", "status": "allowlisted", "reproducer": "</textarea>"}],
    "allowlist": [{"key": "k2", "status": "matched", "reason": "known", "link": "javascript:alert(1)", "expires": "2099-01-01"},
                  {"key": "k3", "status": "stale", "link": "https://example.org/issue/1"}],
    "baseline": {"previous": "runs/2026-01-01", "throughput_change": -0.05},
}


@pytest.fixture(scope="module")
def hostile_out(tmp_path_factory, tiny_tokenizer_json) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / "plugins").mkdir()
    (root / "plugins" / "html_plugin.py").write_text(PLUGIN.replace("PATH", repr(str(tiny_tokenizer_json))))
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in CORPUS), encoding="utf-8")
    out = root / "out"
    proc = run_cli("run", "--reference", f"hf:{tiny_tokenizer_json}", "--candidate", "python:html_plugin:planted",
                   "--corpus", str(corpus), "--text-field", "text", "--out", str(out), "--no-progress",
                   "--workers", "1", "--minimize-budget", "5", env={"PYTHONPATH": str(root / "plugins")})
    assert proc.returncode == 1, proc.stderr
    return out


def template_vocabulary() -> tuple[set[str], set[str]]:
    """Every tag and attribute name the templates write (plus what an HTML parser implies)."""
    tags, attrs = {"html", "head", "body"}, set()
    for path in TEMPLATES.glob("*.j2"):
        source = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)
        for name, inside in re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)\b([^>]*)>", source):
            tags.add(name.lower())
            attrs.update(a.lower() for a in re.findall(r"([a-zA-Z_:][-a-zA-Z0-9_:.]*)=\"", inside))
    return tags, attrs


class DomReader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, attrs))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", "--disable-extensions", f"--user-data-dir={cwd / 'chromium-profile'}",
                           "--enable-logging=stderr", "--v=0", "--window-size=1280,2400", *args],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def png_colours(path: Path) -> tuple[int, float]:
    """(distinct colours, share of pixels not of the most common colour), with Pillow or by hand."""
    try:
        from PIL import Image
    except ImportError:  # an 8-bit RGB(A) PNG, filters undone row by row
        return _png_colours_by_hand(path.read_bytes())
    with Image.open(path) as img:
        counts = img.convert("RGB").getcolors(maxcolors=1 << 24)
        total = img.width * img.height
    return len(counts), 1 - max(n for n, _ in counts) / total


def _png_colours_by_hand(data: bytes) -> tuple[int, float]:
    pos, idat, width, height, channels = 8, b"", 0, 0, 3
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")
            channels = {2: 3, 6: 4}[body[9]]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, prev, counts = zlib.decompress(idat), width * channels, bytearray(width * channels), {}
    for y in range(height):
        f, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = row[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            pred = {0: 0, 1: a, 2: b, 3: (a + b) // 2}.get(f)
            if pred is None:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
            row[i] = (row[i] + pred) & 0xFF
        for x in range(0, stride, channels):
            px = bytes(row[x:x + 3])
            counts[px] = counts.get(px, 0) + 1
        prev = row
    return len(counts), 1 - max(counts.values()) / (width * height)


def test_a_run_writes_the_html_report_and_the_ci_summary(hostile_out):
    html = (hostile_out / "report.html").read_text(encoding="utf-8")
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert csp and "default-src 'none'" in unescape(csp.group(1)) and "script-src 'none'" in unescape(csp.group(1))
    assert "<script" not in html.lower() and not any(c in html for c in BIDI)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, as text
    summary = (hostile_out / "ci-summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### verify: **FAIL**") and "report.html" in summary


def gate_copy(hostile_out: Path, tmp_path: Path) -> Path:
    """The hostile run folder with the hostile gate.json beside it (a folder with gate.json is a gate's)."""
    out = tmp_path / "gate-out"
    shutil.copytree(hostile_out, out)
    (out / "gate.json").write_text(json.dumps(GATE, ensure_ascii=False), encoding="utf-8")
    (out / "checks" / "corpus").mkdir(parents=True, exist_ok=True)
    (out / "checks" / "corpus" / "report.html").write_text("<!DOCTYPE html><title>check</title>")
    return out


def test_verify_report_rerenders_and_refuses_a_folder_that_is_no_output(hostile_out, tmp_path):
    proc = run_cli("report", str(tmp_path))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "manifest.json" in proc.stderr
    out = gate_copy(hostile_out, tmp_path)
    proc = run_cli("report", str(out), "--html")
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="gate"' in html and "<title>verify gate nightly &lt;b&gt;suite&lt;/b&gt;: FAIL</title>" in html


def test_a_gate_folder_without_a_run_manifest_renders_its_gate(tmp_path):
    (tmp_path / "gate.json").write_text(json.dumps({"schema": "verify.gate/1", "verdict": "pass"}), encoding="utf-8")
    proc = run_cli("report", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="gate"' in html and "still running" not in html and "all samples" not in html
    summary = (tmp_path / "ci-summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### verify gate `—`: **PASS**") and "summary.md" not in summary


def test_escapes_show_every_invisible_character_and_paste_back_as_python():
    import ast

    from verify.reports.visible import visible

    tricky = ("a\\u202e" + BIDI + "\u200b\u200c\u200d\u2060\ufeff\u00ad\ufe0f\U000e0001\U000e0100\x00\x1b\x7f"
              "\x85\u2028\u2029\u00a0\u3000\ue000\U0010fffd\n\t\r" + "\\" + " é 日本 👩\u200d💻")
    shown = visible(tricky)
    assert shown.isprintable() and all(ch in shown for ch in "é日本👩💻")
    assert ast.literal_eval('"' + shown + '"') == tricky


def open_in_chromium(page: Path, shot: Path | None = None) -> tuple[str, DomReader]:
    """The page as headless Chromium built it (``--dump-dom``), checked: it loaded, its own
    CSP refused nothing, no script ran, every element and attribute is one the templates write,
    no event handler or javascript: URL, every href an https URL or a file that exists beside
    the page; optionally a screenshot, which must not be blank."""
    work = page.parent.parent
    args = ["--dump-dom", *([f"--screenshot={shot}"] if shot else []), page.resolve().as_uri()]
    dumped = chromium(*args, cwd=work)
    assert dumped.returncode == 0 and "</html>" in dumped.stdout, dumped.stderr[-2000:]
    assert "Content Security Policy" not in dumped.stderr  # the page's own style is what its CSP allows
    assert "CONSOLE" not in dumped.stderr  # no script ran, nothing was refused
    dom = DomReader()
    dom.feed(dumped.stdout)
    tags, attrs = template_vocabulary()
    seen_tags = {t for t, _ in dom.elements}
    seen_attrs = {a for _, pairs in dom.elements for a, _ in pairs}
    assert seen_tags <= tags, seen_tags - tags
    assert seen_attrs <= attrs, seen_attrs - attrs
    assert not seen_tags & {"script", "iframe", "object", "embed", "img", "textarea", "b", "form", "base"}
    assert not [a for a in seen_attrs if a.startswith("on")]
    for tag, pairs in dom.elements:
        for name, value in pairs:
            assert "javascript:" not in re.sub(r"[\s\x00-\x1f]", "", (value or "").lower()), (tag, name, value)
            if name == "href" and not value.startswith("https://"):
                target = value.split("#", 1)[0]
                assert not target or (page.parent / target).resolve().is_file(), f"{page}: {value} does not exist"
                if value.startswith("#"):  # an anchor of the page itself
                    assert any(a == "id" and v == value[1:] for _, p in dom.elements for a, v in p), value
    assert not any(c in dumped.stdout for c in BIDI)
    if shot is not None:
        assert shot.is_file(), dumped.stderr[-2000:]
        colours, not_background = png_colours(shot)
        assert colours > 2 and not_background > 0.01
    return dumped.stdout, dom


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary here (CI installs it: apt-get install chromium)")
def test_hostile_text_injects_nothing_into_the_page_in_headless_chromium(hostile_out, tmp_path):
    from verify.reports.html import write_html

    _, dom = open_in_chromium(hostile_out / "report.html", tmp_path / "run.png")
    text = "".join(dom.text)
    for hostile in HOSTILE:  # every hostile sample id is on the page, as text
        assert hostile in text
    assert "rlo\\u202eid" in text and all(f"\\u{ord(c):04x}" in text for c in "\u202e\u2066\u2069")
    hrefs = {v for _, pairs in dom.elements for a, v in pairs if a == "href"}
    assert {"manifest.json", "divergences.jsonl", "clusters.json", "summary.md"} <= hrefs

    out = gate_copy(hostile_out, tmp_path)
    write_html(out)
    _, dom = open_in_chromium(out / "report.html", tmp_path / "gate.png")
    text = "".join(dom.text)
    assert "nightly <b>suite</b>" in text and "corpus <script>x</script>" in text  # the gate page, as text
    assert "javascript:alert(1)" in text and "javascript:alert(2)" in text  # no http(s) URL: text, never an href
    assert "\\u202eevil note" in text and "<img src=x onerror=alert(1)>\\u2066" in text
    hrefs = {v for _, pairs in dom.elements for a, v in pairs if a == "href"}
    assert {"https://example.org/issue/1", "checks/corpus/report.html", "gate.json"} <= hrefs
    assert "manifest.json" not in hrefs  # a gate folder's own files only


def test_the_ci_summary_fits_a_comment_with_500_clusters(hostile_out, tmp_path):
    from verify.reports.ci_gate import FAILING_LISTED
    from verify.reports.ci_markdown import GITHUB_COMMENT_LIMIT, MAX_CHARS, MAX_LINES, write_ci_summary

    out = tmp_path / "out"
    shutil.copytree(hostile_out, out)
    nasty = "`` | <script>alert(1)</script>\n\u202e" * 20
    clusters = [{"key": f"ids/Ll+Ll/Latin+Latin/{i}/{nasty}", "engine": f"python:e{i % 7}|{nasty}", "reference": "r",
                 "kind": "ids", "tags": [nasty, "t"], "links": [], "count": 1000 - i, "sample_ids": [nasty],
                 "cause": None, "example": [[nasty, False]],
                 "example_minimized": {"input": [[nasty, False]], "token_index": 0, "byte_offset": 0,
                                       "expected": {"start": 0, "ids": [1], "pieces": [nasty]},
                                       "actual": {"start": 0, "ids": [2], "pieces": [nasty]}}} for i in range(500)]
    (out / "clusters.json").write_text(json.dumps({"schema": "verify.clusters/1", "clusters": clusters}), encoding="utf-8")
    gate = {**GATE, "checks": [{"name": f"check {i} {nasty}", "status": "fail"} for i in range(100)],
            "clusters": [{"key": f"k{i}{nasty}", "engine": nasty, "status": "new", "size": i, "reproducer": nasty}
                         for i in range(500)],
            "allowlist": [{"key": f"a{i}{nasty}", "status": "expired"} for i in range(100)]}
    (out / "gate.json").write_text(json.dumps(gate), encoding="utf-8")

    text = write_ci_summary(out).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) < MAX_LINES and len(text) < MAX_CHARS < GITHUB_COMMENT_LIMIT, (len(lines), len(text))
    assert lines[0].startswith("### verify gate ") and lines[0].endswith(": **FAIL**")
    assert "report.html" in lines[-1] and "gate.json" in lines[-1]
    failing = [line for line in lines if re.match(r"\d+\. \*\*new\*\* ", line)]
    assert failing[0].startswith("1. **new** **499×**")  # the largest failing cluster first
    assert len(failing) == FAILING_LISTED and f"… and {500 - FAILING_LISTED:,} more failing clusters" in text
    assert "  - … and 485 more" in text  # each status section cut with its count too (500 new, 15 listed)
    assert not any(c in text for c in BIDI) and "\\u202e" in text
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)
    assert "<" not in outside_code and "alert" not in outside_code
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark", {"html": True}).render(text)
    assert "<script" not in rendered and "<b>" not in rendered and "\u202e" not in rendered
