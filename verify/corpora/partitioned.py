"""Rooted, partitioned corpora (``kind = "partitioned"`` in corpora/*.toml), such as
Nemotron-CC: data files below a root -- a directory or an fsspec URL -- in partition
folders, listed without opening a single data file.

The root is ``--corpus-root`` (``open_corpus(..., root=...)``), else the environment
variable the table names (``root_env``), else the table's ``root``. The table lists
``[[corpus.NAME.layouts]]``, tried in order unless ``layout`` names one:

  paths_file   a file at the root listing one relative path per line (``.gz``/``.zst``
               read as such), used when present: a 31,279-line list instead of walking
               an object store; leading folders the mirror does not have are dropped
               (``contrib/Nemotron/Nemotron-CC/data-jsonl/...`` -> ``data-jsonl/...``);
               a listed file the mirror lacks (a partial mirror) is never probed at
               listing: it is one ``bad-input`` record ("file not found") when its
               shard runs, whichever file it is
  patterns     globs relative to the root (``**`` any folders, ``*`` within one,
               ``{name}`` one folder or name part captured as a field), for the walk
  text_field, id_field   the record fields (``id_field`` may list candidates: the
               first column a Parquet layout has; JSON layouts use the first)

Partition fields are every ``key=value`` folder (hive style, parsed by ``pyarrow.dataset``'s
hive partitioning) plus every ``{name}`` the matching pattern captured. ``where``
(``--where quality=high``, values ``a,b`` for either) keeps the matching files at listing
time (a ``pyarrow.compute`` mask over the fields); each shard carries its file's fields in
its ``partition`` (``verify.corpora.shards.PathShard``). No data file is opened to list or select.
"""

from __future__ import annotations

import os
import posixpath
import re
import string
from dataclasses import dataclass
from functools import lru_cache, reduce
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.fs as pafs

from verify.corpora import files, remote
from verify.corpora.remote import PathLike
from verify.corpora.shards import file_shards
from verify.errors import ConfigError, CorpusError, UsageError

Listed = tuple[str, "int | None", dict[str, str]]  # (relative path, size or None, partition fields)


@dataclass(frozen=True)
class Layout:
    name: str
    patterns: tuple[str, ...]
    paths_file: str | None = None
    text_field: str = "text"
    id_fields: tuple[str, ...] = ("id",)

    def match(self, relative: str) -> dict[str, str] | None:
        """The pattern fields of a path the layout holds, else None."""
        for regex in _compiled(self.patterns):
            found = regex.fullmatch(relative)
            if found:
                return found.groupdict()
        return None


def _compiled(patterns: tuple[str, ...]) -> list[re.Pattern]:
    return [compile_pattern(p) for p in patterns]


@lru_cache(maxsize=64)
def compile_pattern(pattern: str) -> re.Pattern:
    """``**/`` any folders (none included), ``*`` / ``?`` within one component,
    ``{name}`` a named field (no ``/``); everything else literal."""
    out = []
    for token in re.findall(r"\*\*/|\*\*|\*|\?|\{[A-Za-z_][A-Za-z0-9_]*\}|[^*?{]+|\{", pattern):
        if token == "**/":
            out.append(r"(?:[^/]+/)*")
        elif token == "**":
            out.append(r".*")
        elif token == "*":
            out.append(r"[^/]*")
        elif token == "?":
            out.append(r"[^/]")
        elif token.startswith("{") and token.endswith("}"):
            out.append(f"(?P<{token[1:-1]}>[^/]+?)")
        else:
            out.append(re.escape(token))
    return re.compile("".join(out))


# pyarrow reads a folder whose value is its null_fallback (__HIVE_DEFAULT_PARTITION__ by default) as
# null; no folder name holds a "/", so with this one every value stays the text it is
_NO_NULL = "/"


def hive_fields(root: PathLike, relatives: list[str]) -> list[dict[str, str]]:
    """The ``key=value`` folders of each path below ``root``, as strings (``01`` stays ``01``),
    keys in the order they first appear in the listing. Each folder is parsed once."""
    if not relatives:
        return []
    folders: dict[str, str] = {}  # the first path of each folder
    for rel in relatives:
        folders.setdefault(posixpath.dirname(rel), rel)
    keys = _hive_keys(root, list(folders.values()))
    import pyarrow.dataset as ds  # see _hive_keys

    partitioning = ds.HivePartitioning(pa.schema([(key, pa.string()) for key in keys]),
                                       segment_encoding="none", null_fallback=_NO_NULL)
    parsed = {}
    for folder, rel in folders.items():
        values = ds.get_partition_keys(partitioning.parse(rel))
        # a key named twice in one path (a=1/a=2): pyarrow keeps the first
        parsed[folder] = {key: values[key] for key in keys if key in values}
    return [parsed[posixpath.dirname(rel)] for rel in relatives]


def _hive_keys(root: PathLike, relatives: list[str]) -> list[str]:
    """The hive keys of these paths (pyarrow's partition discovery), in order of first appearance.
    Discovery reads the paths only: ``fragments=0`` (pyarrow 22 on) inspects no data file."""
    # imported where a plan lists files, not with the module: pyarrow.dataset costs 0.36 s of CPU
    # (it imports pandas), which every shard worker would pay only to read a shard it was given
    import pyarrow.dataset as ds

    fs, base = remote.url_to_fs(root)
    base = base.rstrip("/")
    discovery = ds.HivePartitioning.discover(segment_encoding="none", null_fallback=_NO_NULL)
    factory = ds.FileSystemDatasetFactory(
        pafs.PyFileSystem(pafs.FSSpecHandler(fs)), [f"{base}/{rel.lstrip('/')}" for rel in relatives],
        ds.ParquetFileFormat(),  # any format: the dataset is never scanned (verify.corpora.files reads)
        ds.FileSystemFactoryOptions(partition_base_dir=base, partitioning=discovery))
    return [key for key in factory.inspect(fragments=0).names if key]  # "=v" folders: no key, no field


def layouts_of(name: str, table: dict[str, Any]) -> list[Layout]:
    where = table.get("_file", "corpora/")
    found = []
    for body in table.get("layouts", []):
        if not isinstance(body, dict) or "name" not in body or not body.get("patterns"):
            raise ConfigError(f"corpus '{name}' ({where}): every [[layouts]] needs 'name' and 'patterns'")
        ids = body.get("id_field", table.get("id_field", "id"))
        found.append(Layout(str(body["name"]), tuple(body["patterns"]), body.get("paths_file"),
                            str(body.get("text_field", table.get("text_field", "text"))),
                            tuple(ids) if isinstance(ids, list) else (str(ids),)))
    if not found:
        raise ConfigError(f"corpus '{name}' ({where}) lists no [[corpus.{name}.layouts]]")
    return found


def resolve_root(name: str, table: dict[str, Any], root: str | None) -> PathLike:
    env = table.get("root_env")
    value = root or (os.environ.get(env) if env else None)
    if not value and table.get("root"):
        try:
            value = string.Template(table["root"]).substitute(os.environ)
        except KeyError:
            value = None
    if not value:
        hint = f" or set the environment variable {env}" if env else ""
        raise ConfigError(f"corpus '{name}' ({table.get('_file', 'corpora/')}) needs a root: "
                          f"pass --corpus-root DIR|URL{hint}")
    if remote.is_url(value):
        return value.rstrip("/")
    path = os.path.abspath(os.path.expanduser(value))
    if not os.path.isdir(path):
        raise CorpusError(f"corpus '{name}': root {value} is not a directory")
    return path


# --- listing -----------------------------------------------------------------------

def read_paths_file(path: PathLike) -> list[str]:
    try:
        with files.open_binary(path) as fh:
            lines = [line.decode("utf-8").strip() for line in fh]
    except Exception as exc:  # a corrupt .gz, a vanished object, bad UTF-8
        raise CorpusError(f"{path}: unreadable paths file ({type(exc).__name__}: {exc})") from None
    return [line for line in lines if line and not line.startswith("#")]


def rebase(root: PathLike, relatives: Iterable[str], tries: int = 64) -> int:
    """How many leading folders of the paths file's lines to drop. Lines written against
    another base (``contrib/Nemotron/Nemotron-CC/data-jsonl/quality=high/...`` in Common
    Crawl's file) then resolve in a mirror rooted anywhere; partition folders are never
    dropped. Decided on a line's *first partition folder* (the file itself for a line
    without one): the fewest drops that make it exist under the root. A data file missing
    from a partial mirror therefore never decides anything (it becomes a ``bad-input``
    record when its shard runs, first or last); lines are tried in order, one per distinct
    anchor folder, up to ``tries`` (Nemotron-CC has three: its quality folders)."""
    tried: set[str] = set()
    first = None
    for relative in relatives:
        parts = relative.split("/")
        first_field = next((i for i, part in enumerate(parts[:-1]) if "=" in part), len(parts) - 1)
        anchor = "/".join(parts[:first_field + 1])
        if anchor in tried:
            continue
        if len(tried) == tries:
            break
        tried.add(anchor)
        first = first or relative
        for k in range(first_field + 1):
            if remote.exists(remote.join(root, "/".join(parts[k:first_field + 1]))):
                return k
    raise CorpusError(f"{remote.join(root, first or '')}: listed in the paths file but not found under the root "
                      f"(nor any tail of its path; {len(tried)} partition folder{'s' * (len(tried) != 1)} of the "
                      "paths file tried: is the root right?)")


def list_layout(root: PathLike, layouts: list[Layout], chosen: str) -> tuple[Layout, str, list[Listed]]:
    """The layout that holds the root, how it was listed, and its files."""
    walked: list[tuple[str, int | None]] | None = None
    for layout in layouts:
        if chosen not in ("auto", layout.name):
            continue
        if layout.paths_file:
            paths_file = remote.join(root, layout.paths_file)
            if remote.is_file(paths_file):
                lines = sorted(read_paths_file(paths_file), key=remote.sort_key)  # as a walk lists
                listed = with_fields(root, [(line, None, layout.match(line) or {}) for line in lines])
                return layout, f"paths file {layout.paths_file}", listed
        if walked is None:
            walked = list(remote.walk(root))
        listed = with_fields(root, [(rel, size, fields) for rel, size in walked
                                    if (fields := layout.match(rel)) is not None])
        if listed:
            return layout, "walk", listed
    names = [layout.name for layout in layouts]
    if chosen != "auto" and chosen not in names:
        raise ConfigError(f"layout '{chosen}' is not one of {', '.join(names)}")
    tried = "; ".join(f"{layout.name}: {layout.paths_file + ' or ' if layout.paths_file else ''}"
                      f"{', '.join(layout.patterns)}" for layout in layouts if chosen in ("auto", layout.name))
    raise CorpusError(f"{root}: no corpus files in any known layout ({tried})")


def with_fields(root: PathLike, matched: list[Listed]) -> list[Listed]:
    """The files with their hive fields first, then the fields their pattern captured."""
    hive = hive_fields(root, [rel for rel, _, _ in matched])
    return [(rel, size, {**folders, **captured}) for (rel, size, captured), folders in zip(matched, hive)]


def field_values(listed: Iterable[Listed]) -> dict[str, list[str]]:
    values: dict[str, set[str]] = {}
    for _, _, fields in listed:
        for key, value in fields.items():
            values.setdefault(key, set()).add(value)
    return {key: sorted(vals) for key, vals in values.items()}


def select(name: str, listed: list[Listed], where: dict[str, str], known: dict[str, list[str]]) -> list[Listed]:
    """The files whose partition fields match every ``where`` (``a,b``: either value)."""
    for key in where:
        if key not in known:
            fields = ", ".join(known) if known else "none"
            raise UsageError(f"--where {key}=...: corpus '{name}' has no field '{key}' (its fields: {fields})")
    kept = [listed[row] for row in matching_rows(listed, where)]
    if not kept:
        spelled = " ".join(f"{k}={v}" for k, v in where.items())
        seen = "; ".join(f"{k}: {', '.join(known[k])}" for k in where)
        raise CorpusError(f"--where {spelled}: no file of corpus '{name}' matches ({seen})")
    return kept


def matching_rows(listed: list[Listed], where: dict[str, str]) -> list[int]:
    """The indexes of the files whose fields match every ``where``, in order. One column per
    field (null where a file lacks it: it matches nothing), ``is_in`` per field, ANDed.
    Not ``Dataset.get_fragments(filter=...)``: pyarrow keeps a fragment whose path lacks the
    field (its partition expression cannot rule it out), and the fields a pattern captured
    (``{subset}``) are no partitions pyarrow parses."""
    import pyarrow.compute as pc  # 0.36 s of CPU: where a plan selects files (see _hive_keys)

    masks = [pc.is_in(pa.array([fields.get(key) for _, _, fields in listed], pa.string()),
                      value_set=pa.array(value.split(","), pa.string()))
             for key, value in where.items()]
    return pc.indices_nonzero(reduce(pc.and_, masks)).to_pylist()


def _first_present(paths: list[PathLike], tries: int = 64) -> PathLike | None:
    """The first listed file that exists (a paths file may list files a partial mirror lacks;
    those are bad-input records when their shards run), trying at most ``tries``."""
    return next((path for path in paths[:tries] if remote.exists(path)), None)


def partitioned_source(name: str, table: dict[str, Any], *, root: str | None, where: dict[str, str] | None,
                       text_field: str | None, id_field: str | None):
    from verify.corpora.source import Source

    base = resolve_root(name, table, root)
    layout, how, listed = list_layout(base, layouts_of(name, table), str(table.get("layout", "auto")))
    known = field_values(listed)
    kept = select(name, listed, dict(where or {}), known) if where else listed
    # the selection's lines first, then the rest: a partition missing from the mirror is bad-input too
    drop = rebase(base, [rel for rel, _, _ in kept + listed]) if how.startswith("paths file") else 0
    paths = [(remote.join(base, "/".join(rel.split("/")[drop:])), size, fields) for rel, size, fields in kept]
    text = text_field or layout.text_field
    ids = (id_field,) if id_field else layout.id_fields
    chosen_id = ids[0]
    if files.base_suffix(paths[0][0]) in files.PARQUET_SUFFIXES:  # one footer: a wrong field fails before any engine
        first = _first_present([path for path, _, _ in paths]) if how.startswith("paths file") else paths[0][0]
        if first is not None:
            names, _ = files.parquet_row_groups(first, text)
            chosen_id = next((c for c in ids if c in names), ids[0])
    shards = [s for path, size, fields in paths
              for s in file_shards(name, path, text, chosen_id, size=size, partition=fields)]
    description = {"kind": "partitioned", "root": str(base), "layout": layout.name, "listing": how,
                   "files": len(kept), "files_listed": len(listed), "fields": known,
                   "where": dict(sorted((where or {}).items())), "text_field": text, "id_field": chosen_id}
    return Source(name, description, shards)
