"""Committed files checked against their typed schemas (the TypedDicts beside each schema
constant): every declared field present when required, each of its declared type. Pydantic
validates the file's own JSON text strictly (no coercion: a count written as "3" fails)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from verify.adversarial.certify.hunt import Certificate
from verify.findings import DivergenceRecord
from verify.gate.verdict import GateRecord
from verify.rundir.layout import RunFolder
from verify.rundir.manifest import Manifest
from verify.triage import ClustersFile, TriageLine

_ADAPTERS: dict[type, TypeAdapter] = {}


def conforms(text: str | bytes, schema: type) -> Any:
    """The JSON document ``text`` validated as ``schema`` (raises pydantic's ValidationError naming
    the field that does not fit)."""
    adapter = _ADAPTERS.get(schema)
    if adapter is None:
        adapter = _ADAPTERS[schema] = TypeAdapter(schema)
    return adapter.validate_json(text, strict=True)


def lines_conform(path: Path, schema: type) -> int:
    """Every line of a JSONL file validated as ``schema``; how many there were."""
    n = 0
    for line in Path(path).read_bytes().splitlines():
        if line.strip():
            conforms(line, schema)
            n += 1
    return n


def run_folder_conforms(out: Path) -> None:
    """The committed files of a run folder that are there, each against its schema (a gate folder's
    ``gate.json`` too, and every check's run folder it names)."""
    out, folder = Path(out), RunFolder(out)
    if folder.findings.is_file():
        lines_conform(folder.findings, DivergenceRecord)
    if folder.triage.is_file():
        lines_conform(folder.triage, TriageLine)
    if folder.clusters.is_file():
        conforms(folder.clusters.read_bytes(), ClustersFile)
    if folder.manifest.is_file():
        manifest = conforms(folder.manifest.read_bytes(), Manifest)
        assert manifest["schema"] == "verify.manifest/3"
    if folder.certificate.is_file():
        conforms(folder.certificate.read_bytes(), Certificate)
    if (out / "gate.json").is_file():
        doc = conforms((out / "gate.json").read_bytes(), GateRecord)
        for check in doc["checks"]:
            if (out / check["out"]).is_dir():
                run_folder_conforms(out / check["out"])
