"""Build ``verify/unicode_tables/data/unicode_categories.json.gz`` and
``unicode_normalization.json.gz`` from public Unicode data.

    python -m tools.build_unicode_data [--work DIR] [--release X ...]

The data comes from the ``unicodedata2`` releases on PyPI (one per Unicode
version) plus the running Python's own ``unicodedata``. Only one
``unicodedata2`` can be imported per interpreter, so each release is installed
into its own ``pip install --target`` directory and read by a subprocess with
``PYTHONPATH`` pointing there. Releases without a wheel for this Python are
built from their sdist; the oldest sdists (11.0 .. 14.0) need two small
compatibility patches for CPython >= 3.10 (``Py_SET_TYPE`` instead of assigning
``Py_TYPE``; a local ``ucnhash.h``, which CPython no longer installs). Nothing
from those packages is copied: we only record, for every code point, its
general category (run-length encoded), and the names of code points that older
Pythons' ``unicodedata`` does not know.

Output format (JSON, gzip):

    {"format": 1,
     "source": "...",
     "versions": {"15.0.0": {"starts": [delta-encoded run starts], "cats": "LuLlCn..."}, ...},
     "names": {"cutoff": "13.0.0",
               "algorithmic": [[first, last, "PREFIX-"], ...],   # name = PREFIX + %04X
               "explicit": [[delta-encoded cp, "NAME"], ...]}}

A run covers ``starts[i] .. starts[i+1]-1`` (the last one ends at U+10FFFF) and
has category ``cats[2*i:2*i+2]``.

The normalization file holds, per version, the NFC and NFKC form of every code point
whose form is not itself, as a difference from the previous version (the oldest in
full), and the primary composites canonical composition forms (``[first, second,
composite]``; the oldest version in full, then ``added``/``removed``): ``{"format": 1,
"source": ..., "versions": {"11.0.0": {"nfc": {CP: TEXT | null}, "nfkc": {...},
"compositions": {"added": [...], "removed": [...]}}, ...}}`` (a null: the code point maps to
itself again). A single code point's NFC form never changes between versions; what
composition data a version adds shows in ``compositions``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unicodedata
from pathlib import Path

DATA_PATH = Path(__file__).resolve().parents[1] / "verify" / "unicode_tables" / "data" / "unicode_categories.json.gz"
NORMALIZATION_PATH = DATA_PATH.with_name("unicode_normalization.json.gz")

# unicodedata2 release -> the Unicode version it carries (checked at build time).
RELEASES = [
    "11.0.0", "12.0.0", "12.1.0", "13.0.0.post2", "14.0.0",
    "15.0.0", "15.1.0", "16.0.0", "17.0.1", "18.0.0",
]
NAMES_CUTOFF = "13.0.0"  # the oldest unicodedata a supported Python (3.10) ships

_DUMP = r"""
import json, sys
try:
    import unicodedata2 as u
except ImportError:
    import unicodedata as u
want_names = sys.argv[1] == "1"
starts, cats, names = [], [], []
prev = None
for cp in range(0x110000):
    ch = chr(cp)
    c = u.category(ch)
    if c != prev:
        starts.append(cp); cats.append(c); prev = c
    if want_names and c != "Cn":
        n = u.name(ch, None)
        if n:
            names.append([cp, n])
forms = {"nfc": {}, "nfkc": {}}
for cp in range(0x110000):
    if 0xD800 <= cp <= 0xDFFF:
        continue
    ch = chr(cp)
    for form in ("NFC", "NFKC"):
        n = u.normalize(form, ch)
        if n != ch:
            forms[form.lower()][cp] = n
compositions = []  # primary composites: [first, second, composite] that canonical composition forms
for cp in range(0x110000):
    # Hangul syllables compose algorithmically in every version (and some unicodedata2
    # releases report their decompositions while others do not): left out
    if 0xD800 <= cp <= 0xDFFF or 0xAC00 <= cp <= 0xD7A3:
        continue
    d = u.decomposition(chr(cp))
    if not d or d.startswith("<"):
        continue
    parts = [int(x, 16) for x in d.split()]
    if len(parts) == 2 and u.normalize("NFC", chr(parts[0]) + chr(parts[1])) == chr(cp):
        compositions.append([parts[0], parts[1], cp])
json.dump({"version": u.unidata_version, "module": u.__name__, "starts": starts, "cats": cats,
           "names": names, "forms": forms, "compositions": compositions}, sys.stdout)
"""

_UCNHASH_STUB = """#ifndef UCNHASH_STUB_H
#define UCNHASH_STUB_H
typedef struct {
    int size;
    int (*getname)(PyObject *self, Py_UCS4 code, char* buffer, int buflen, int with_alias_and_seq);
    int (*getcode)(PyObject *self, const char* name, int namelen, Py_UCS4* code, int with_named_seq);
} _PyUnicode_Name_CAPI;
#define PyUnicodeData_CAPSULE_NAME "unicodedata2.ucnhash_CAPI"
#endif
"""


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "-q", *args], capture_output=True, text=True)


def _patch_sdist(src: Path) -> None:
    for c_file in src.rglob("unicodedata.c"):
        text = c_file.read_text(encoding="utf-8", errors="surrogateescape")
        text = text.replace("Py_TYPE(&UCD_Type) = &PyType_Type;", "Py_SET_TYPE(&UCD_Type, &PyType_Type);")
        c_file.write_text(text, encoding="utf-8", errors="surrogateescape")
        if '#include "ucnhash.h"' in text and not (c_file.parent / "ucnhash.h").exists():
            (c_file.parent / "ucnhash.h").write_text(_UCNHASH_STUB)


def install_release(release: str, work: Path) -> Path:
    """Install unicodedata2==release into its own --target directory; return it."""
    target = work / f"ud2-{release}"
    if (target / "unicodedata2").exists() or any(target.glob("unicodedata2*.so")):
        return target
    r = _pip("install", "--no-deps", "--only-binary", ":all:", "--target", str(target), f"unicodedata2=={release}")
    if r.returncode == 0:
        return target
    sdists = work / "sdist"
    r = _pip("download", "--no-deps", "--no-binary", ":all:", "-d", str(sdists), f"unicodedata2=={release}")
    if r.returncode != 0:
        raise RuntimeError(f"cannot download unicodedata2=={release}: {r.stderr.strip()[-500:]}")
    archive = next(p for p in sdists.iterdir() if p.name.startswith(f"unicodedata2-{release}") and p.name.endswith(".tar.gz"))
    src_root = work / f"src-{release}"
    with tarfile.open(archive) as tf:
        tf.extractall(src_root, filter="data") if sys.version_info >= (3, 12) else tf.extractall(src_root)  # noqa: S202
    src = next(p for p in src_root.iterdir() if p.is_dir())
    _patch_sdist(src)
    r = _pip("install", "--no-deps", "--target", str(target), str(src))
    if r.returncode != 0:
        raise RuntimeError(f"cannot build unicodedata2=={release}: {r.stderr.strip()[-800:]}")
    return target


def dump(pythonpath: Path | None, with_names: bool) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    script = _DUMP if pythonpath is not None else _DUMP.replace("import unicodedata2 as u", "raise ImportError")
    out = subprocess.run([sys.executable, "-c", script, "1" if with_names else "0"],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _expand(starts: list[int], cats: list[str]) -> list[str]:
    out = [""] * 0x110000
    bounds = starts[1:] + [0x110000]
    for s, e, c in zip(starts, bounds, cats):
        out[s:e] = [c] * (e - s)
    return out


def _compress_names(names: list[list], cutoff_cats: list[str] | None) -> dict:
    keep = [(cp, n) for cp, n in names if cutoff_cats is None or cutoff_cats[cp] == "Cn"]
    algorithmic: list[list] = []
    explicit: list[list] = []
    prev = 0
    for cp, n in keep:
        suffix = f"{cp:04X}"
        if n.endswith("-" + suffix):
            prefix = n[: -len(suffix)]
            if algorithmic and algorithmic[-1][2] == prefix and algorithmic[-1][1] == cp - 1:
                algorithmic[-1][1] = cp
            else:
                algorithmic.append([cp, cp, prefix])
            continue
        explicit.append([cp - prev, n])
        prev = cp
    return {"algorithmic": algorithmic, "explicit": explicit}


def build(releases: list[str], work: Path, out: Path = DATA_PATH) -> dict:
    tables: dict[str, dict] = {}
    sources: list[str] = []
    for release in releases:
        target = install_release(release, work)
        d = dump(target, with_names=False)
        d["target"] = target
        tables[d["version"]] = d
        sources.append(f"unicodedata2=={release} (Unicode {d['version']})")
        print(f"unicodedata2=={release}: Unicode {d['version']}, {len(d['starts'])} runs", file=sys.stderr)
    own = dump(None, with_names=False)
    if own["version"] in tables:
        if (own["starts"], own["cats"]) != (tables[own["version"]]["starts"], tables[own["version"]]["cats"]):
            raise RuntimeError(f"Python's unicodedata {own['version']} disagrees with unicodedata2 {own['version']}")
        sources.append(f"Python {sys.version.split()[0]} unicodedata (Unicode {own['version']}, identical)")
    else:
        tables[own["version"]] = own
        sources.append(f"Python {sys.version.split()[0]} unicodedata (Unicode {own['version']})")

    versions = sorted(tables, key=_vkey)
    newest = versions[-1]
    named = dump(tables[newest].get("target"), with_names=True)
    assert named["version"] == newest
    cutoff = NAMES_CUTOFF if NAMES_CUTOFF in tables else versions[0]
    cutoff_cats = _expand(tables[cutoff]["starts"], tables[cutoff]["cats"])

    doc = {
        "format": 1,
        "source": "; ".join(sources),
        "versions": {},
        "names": {"cutoff": cutoff, "version": newest, **_compress_names(named["names"], cutoff_cats)},
    }
    for v in versions:
        starts = tables[v]["starts"]
        deltas = [starts[0]] + [b - a for a, b in zip(starts, starts[1:])]
        doc["versions"][v] = {"starts": deltas, "cats": "".join(tables[v]["cats"])}
    _write_gz(out, doc)
    normalization = {"format": 1, "source": doc["source"], "versions": {}}
    previous: dict[str, dict] = {"nfc": {}, "nfkc": {}}
    composed: set[tuple[int, int, int]] = set()
    for v in versions:
        now_composed = {tuple(c) for c in tables[v]["compositions"]}
        entry = {"compositions": {"added": sorted(now_composed - composed), "removed": sorted(composed - now_composed)}}
        composed = now_composed
        for form in ("nfc", "nfkc"):
            now = {int(cp): text for cp, text in tables[v]["forms"][form].items()}
            before = previous[form]
            entry[form] = {str(cp): now.get(cp) for cp in sorted(set(now) | set(before)) if now.get(cp) != before.get(cp)}
            previous[form] = now
        normalization["versions"][v] = entry
    _write_gz(out.with_name(NORMALIZATION_PATH.name), normalization)
    return doc


def _write_gz(out: Path, doc: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode()
    tmp = out.with_suffix(".tmp")
    with gzip.GzipFile(tmp, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(payload)
    os.replace(tmp, out)
    print(f"wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, help="directory for the per-release installs (kept; default: a temp dir)")
    p.add_argument("--release", action="append", help="unicodedata2 release(s) to include (default: 11..18)")
    p.add_argument("--out", type=Path, default=DATA_PATH)
    args = p.parse_args(argv)
    releases = args.release or RELEASES
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        build(releases, args.work, args.out)
    else:
        with tempfile.TemporaryDirectory(prefix="ud2-") as tmp:
            build(releases, Path(tmp), args.out)
    print(f"Python's own unicodedata: {unicodedata.unidata_version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
