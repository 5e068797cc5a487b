"""OUT/junit.xml: a gate's result in the JUnit XML format CI servers read (the common
Jenkins/Ant form: ``testsuites`` > ``testsuite`` > ``testcase`` with ``failure``,
``error``, ``skipped``, ``system-out``).

    write_junit(path, gate_doc) -> path

Three test suites: ``SUITE.checks`` (one case per check: a failing check is a
``failure``, a check that could not run an ``error``, a skipped one ``skipped`` with why),
``SUITE.clusters`` (one case per cluster, classname the engine: new, unchanged and
expired clusters fail, with the minimised reproducer and the first differing token in
the failure text; allowlisted ones pass and say why), and ``SUITE.allowlist`` (one case
per allowlist row: an expired row fails, a stale one is skipped); and, when a check skipped
samples or left a part empty, ``SUITE.skips`` (one ``skipped`` case per check, engine and
reason, its message the count, the reason and what to do; one per part that ran nothing).
Corpus text is shown
through ``verify.reports.visible`` (control, bidi and invisible characters as escapes),
so the file is valid XML 1.0 whatever the input held.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from verify.reports.visible import visible, visible_input
from verify import atomic

REPRODUCER_CHARS = 2000
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: Any) -> str:
    """A string any XML 1.0 parser accepts (escapes for what XML cannot hold)."""
    return _XML_INVALID.sub(lambda m: f"\\u{ord(m.group()):04x}", str(text))


def _token(window: dict | None, index: int) -> str:
    if not isinstance(window, dict):
        return "?"
    at = index - int(window.get("start") or 0)
    ids, pieces = window.get("ids") or [], window.get("pieces")
    if not 0 <= at < len(ids):
        return "(end of ids)"
    piece = f" '{visible(pieces[at])}'" if pieces is not None and at < len(pieces) else ""
    return f"{ids[at]}{piece}"


def describe_difference(diff: Any) -> str:
    """The first differing token in one line: ``token 3 (byte 7, char 5): expected 1234 'ab', got 0 'a'``."""
    if not isinstance(diff, dict):
        return "no located difference"
    if "error" in diff:
        error = diff["error"] or {}
        return visible(f"{error.get('type', '?')}: {error.get('message', '')}", 300)
    if diff.get("token_index") is None:
        return visible(", ".join(f"{k} {v}" for k, v in diff.items()), 300)
    i = int(diff["token_index"])
    where = ", ".join(f"{name} {diff[key]}" for name, key in (("byte", "byte_offset"), ("char", "char_offset"))
                      if diff.get(key) is not None)
    return (f"token {i}{f' ({where})' if where else ''}: expected {_token(diff.get('expected'), i)}, "
            f"got {_token(diff.get('actual'), i)}")


def _reproducer(cluster: dict[str, Any]) -> str:
    value = cluster.get("reproducer")
    if value is None:
        where = cluster.get("input_file") or cluster.get("source") or "the check's report"
        return f"(no reproducer inline: see {where})"
    if isinstance(value, str):
        return visible(value, REPRODUCER_CHARS)
    return visible_input(value, REPRODUCER_CHARS) or '""'


def _case(parent: ET.Element, classname: str, name: str, seconds: float | None = None) -> ET.Element:
    return ET.SubElement(parent, "testcase", {"classname": _xml(classname), "name": _xml(name),
                                              "time": f"{float(seconds or 0.0):.3f}"})


def _suite(root: ET.Element, name: str, timestamp: str | None) -> ET.Element:
    attrs = {"name": _xml(name), "tests": "0", "failures": "0", "errors": "0", "skipped": "0", "time": "0.000"}
    if timestamp:
        attrs["timestamp"] = timestamp
    return ET.SubElement(root, "testsuite", attrs)


def _tally(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        suite.set(attr, str(sum(1 for c in cases if c.find(tag) is not None)))
    suite.set("time", f"{sum(float(c.get('time', 0)) for c in cases):.3f}")


def _out(case: ET.Element, text: str) -> None:
    ET.SubElement(case, "system-out").text = _xml(text)


def _checks(root: ET.Element, doc: dict[str, Any], name: str, stamp: str | None) -> None:
    suite = _suite(root, f"{name}.checks", stamp)
    for check in doc.get("checks", []):
        case = _case(suite, f"{name}.checks", f"{check['name']} ({check['kind']})", check.get("seconds"))
        note = _xml(visible(check.get("note") or "", 1000))
        counts = ", ".join(f"{k} {v}" for k, v in (check.get("counts") or {}).items() if isinstance(v, int) and v)
        status = check.get("status")
        if status == "fail":
            failing = [k for k in check.get("clusters", []) if
                       any(c["key"] == k and c["status"] in ("new", "unchanged", "expired") for c in doc["clusters"])]
            message = f"{len(failing)} failing clusters" if failing else "failed"
            ET.SubElement(case, "failure", {"message": _xml(f"{message}{'; ' + note if note else ''}"),
                                            "type": "check-failed"}).text = _xml(
                "\n".join([f"counts: {counts}", *[f"cluster: {k}" for k in failing]]))
        elif status == "error":
            ET.SubElement(case, "error", {"message": note or "the check could not run",
                                          "type": check.get("error_class") or "error"})
        elif status == "skipped":
            ET.SubElement(case, "skipped", {"message": note or "skipped (the check gave no reason)"})
        _out(case, f"out: {check.get('out')}\ncounts: {counts}\n{note}")
    _tally(suite)


def _clusters(root: ET.Element, doc: dict[str, Any], name: str, stamp: str | None) -> None:
    suite = _suite(root, f"{name}.clusters", stamp)
    for cluster in doc.get("clusters", []):
        case = _case(suite, f"{name}.clusters.{cluster.get('engine')}", cluster["key"])
        difference = describe_difference(cluster.get("first_difference"))
        reproducer = _reproducer(cluster)
        label = "minimised reproducer" if cluster.get("minimized") else "reproducer (not minimised)"
        body = "\n".join([f"engine: {cluster.get('engine')}", f"reference: {cluster.get('reference')}",
                          f"findings: {cluster.get('size')} (checks: {', '.join(cluster.get('checks') or [])})",
                          f"first difference: {difference}", f"{label}: {reproducer}",
                          f"report: {cluster.get('source')}"])
        status = cluster["status"]
        if status in ("new", "unchanged", "expired"):
            message = f"{status} cluster, {cluster.get('size')} findings: {difference}"
            if status == "expired":
                message += f" (allowlist entry expired {cluster.get('allowlist', {}).get('expires')})"
            ET.SubElement(case, "failure", {"message": _xml(message), "type": f"cluster-{status}"}).text = _xml(body)
        else:
            rule = cluster.get("allowlist") or {}
            _out(case, f"allowlisted: {rule.get('reason')} ({rule.get('link') or 'no link'}; expires "
                       f"{rule.get('expires') or 'never'})\n{body}")
    _tally(suite)


def _allowlist(root: ET.Element, doc: dict[str, Any], name: str, stamp: str | None) -> None:
    entries = doc.get("allowlist") or []
    if not entries:
        return
    suite = _suite(root, f"{name}.allowlist", stamp)
    for entry in entries:
        case = _case(suite, f"{name}.allowlist", f"row {entry.get('row')}: {entry.get('key')}")
        text = f"reason: {entry.get('reason')}\nlink: {entry.get('link')}\nexpires: {entry.get('expires')}\n" \
               f"matched: {', '.join(entry.get('matched') or []) or 'nothing'}"
        if entry["status"] == "expired":
            ET.SubElement(case, "failure", {"message": _xml(f"allowlist entry expired on {entry.get('expires')}: "
                                                            "renew its date or delete it"),
                                            "type": "allowlist-expired"}).text = _xml(text)
        elif entry["status"] == "stale":
            ET.SubElement(case, "skipped", {"message": "stale: matched no cluster tonight (fixed?)"})
        _out(case, text)
    _tally(suite)


def _skips(root: ET.Element, doc: dict[str, Any], name: str, stamp: str | None) -> None:
    checks = [c for c in doc.get("checks", []) if isinstance(c, dict) and (c.get("skips") or c.get("empty"))]
    if not checks:
        return
    suite = _suite(root, f"{name}.skips", stamp)
    for check in checks:
        for row in check.get("skips") or []:
            case = _case(suite, f"{name}.skips.{check['name']}", f"{check['name']}: {row.get('engine')}")
            remedy = f"; what to do: {row['remedy']}" if row.get("remedy") else ""
            ET.SubElement(case, "skipped", {"message": _xml(visible(
                f"{row.get('count')} samples skipped by {row.get('engine')}: {row.get('reason')}{remedy}", 1000))})
        for i, part in enumerate(check.get("empty") or [], 1):
            case = _case(suite, f"{name}.skips.{check['name']}", f"{check['name']}: ran nothing ({i})")
            ET.SubElement(case, "skipped", {"message": _xml(visible(f"ran nothing: {part}", 1000))})
    _tally(suite)


def write_junit(path: Path, doc: dict[str, Any]) -> Path:
    name = str(doc.get("suite") or "gate")
    started = doc.get("started")
    stamp = started[:19] if isinstance(started, str) else None  # ISO 8601 without the zone, as Ant writes it
    root = ET.Element("testsuites", {"name": _xml(name)})
    _checks(root, doc, name, stamp)
    _clusters(root, doc, name, stamp)
    _allowlist(root, doc, name, stamp)
    _skips(root, doc, name, stamp)
    for attr in ("tests", "failures", "errors", "skipped"):
        root.set(attr, str(sum(int(s.get(attr)) for s in root.findall("testsuite"))))
    root.set("time", f"{float(doc.get('seconds') or 0.0):.3f}")
    ET.indent(root)
    path = Path(path)
    return atomic.write_bytes(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))
