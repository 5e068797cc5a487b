"""Each committed schema is defined once, as a TypedDict beside its schema constant, and
documented: every field the type declares is named in its section of the docs, and the
field tables of docs/schema.md list exactly the fields the types declare. (Records a real
run writes are checked against these types where the tests that run them are:
``tests/record_types.py``.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_type_hints

import pytest
from pydantic import ValidationError

from verify.adversarial.certify.hunt import CERTIFICATE_SCHEMA, Certificate
from verify.cause_clusters import ClusterRecord
from verify.findings import SCHEMA as DIVERGENCE_SCHEMA, DivergenceRecord
from verify.gate.verdict import GATE_SCHEMA, GateRecord
from verify.outcome import FAILURE_KINDS, FindingKind
from verify.rundir.manifest import MANIFEST_SCHEMA, Manifest
from verify.triage import CLUSTERS_SCHEMA, TriageLine
from record_types import conforms

DOCS = Path(__file__).resolve().parent.parent / "docs"


def section(doc: str, heading: str) -> str:
    """The section of ``doc`` whose heading starts with ``heading``, its heading included, to the next heading."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    match = re.search(rf"^##+ {re.escape(heading)}.*?(?=^##+ |\Z)", text, re.M | re.S)
    assert match, f"docs/{doc} has no section '{heading}'"
    return match.group(0)


def named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", text))


def table_fields(text: str) -> set[str]:
    """The field names of a ``| field | meaning |`` table (a row may name several: `a`, `b`)."""
    rows = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row)}


CASES = [  # type, docs file, section, schema constant the section must name
    (DivergenceRecord, "schema.md", "Findings", DIVERGENCE_SCHEMA),
    (TriageLine, "schema.md", "Triage", CLUSTERS_SCHEMA),
    (ClusterRecord, "schema.md", "Triage", CLUSTERS_SCHEMA),
    (Manifest, "schema.md", "Manifest", MANIFEST_SCHEMA),
    (GateRecord, "schema.md", "Gate", GATE_SCHEMA),
    (Certificate, "schema.md", "Certificate", CERTIFICATE_SCHEMA),
]


@pytest.mark.parametrize("schema,doc,heading,name", CASES, ids=[c[0].__name__ for c in CASES])
def test_every_field_a_type_declares_is_documented(schema, doc, heading, name):
    text = section(doc, heading)
    assert name in text, f"docs/{doc} '{heading}' does not name {name}"
    missing = set(get_type_hints(schema)) - named(text) - {"schema"}
    assert not missing, f"{schema.__name__} fields not in docs/{doc} '{heading}': {sorted(missing)}"


@pytest.mark.parametrize("schema,heading", [(DivergenceRecord, "Findings"), (TriageLine, "Triage")])
def test_a_field_table_lists_exactly_the_declared_fields(schema, heading):
    assert table_fields(section("schema.md", heading)) == set(get_type_hints(schema))


def test_the_finding_kinds_are_one_table():
    assert [k.value for k in FindingKind] == ["ids", *FAILURE_KINDS, "bad-input"]
    assert all(f"`{k.value}`" in section("schema.md", "Findings") for k in FindingKind)


def test_a_record_that_breaks_its_type_is_refused():
    """The check the run-folder tests rely on can fail: a wrong type, a missing field, an unknown kind."""
    good = ('{"schema": "verify.divergence/2", "kind": "ids", "engine": "a", "reference": "b", "sample_id": "s",'
            ' "source": null, "finding_key": "k", "input_key": "i", "input": [["x", false]], "token_index": 0}')
    assert conforms(good, DivergenceRecord)["kind"] is FindingKind.IDS
    for bad in (good.replace('"token_index": 0', '"token_index": "0"'), good.replace('"sample_id": "s",', ""),
                good.replace('"kind": "ids"', '"kind": "wrong"'), good.replace('[["x", false]]', '[["x", 0]]')):
        with pytest.raises(ValidationError):
            conforms(bad, DivergenceRecord)
