"""The house is one-way: no module of ``verify`` imports, even lazily inside a function or only
for type checking (``if TYPE_CHECKING:``), a module that imports it back (directly or round a
longer circle). A type-checking import is counted: a circle hidden behind it is still a circle a
reader has to untangle."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import verify

PACKAGE = Path(verify.__file__).resolve().parent


def module_files() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def imports_of(path: Path, mods: dict[str, Path]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found.update(n for n in names if n in mods)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = module_files()
    graph = {}
    for name, path in mods.items():
        # a package's own submodules are not "imported back" by the package that holds them
        graph[name] = {m for m in imports_of(path, mods) if m != name and not name.startswith(m + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_package_has_no_import_circle():
    found = cycles(import_graph())
    assert not found, "import circles:\n" + "\n".join("  " + " <-> ".join(c) for c in found)


def room_of(module: str) -> str:
    """The room a module lives in: its top-level subpackage of ``verify`` (``verify.corpora``), or
    the core module itself (``verify.triage``)."""
    return ".".join(module.split(".")[:2])


def test_the_rooms_are_one_way():
    """One level up: the subpackages and core modules (engines, corpora, executors, pipeline,
    rundir, reports, ...) import each other one way only. A module in a lower room that imports
    a higher one (the reports reaching into a hunt for its result type, a shard reaching into the
    run folder for its heartbeat) is a circle between rooms, found here."""
    rooms: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        mine = room_of(module)
        rooms.setdefault(mine, set()).update(room_of(t) for t in targets
                                             if room_of(t) not in (mine, "verify"))
    for targets in list(rooms.values()):
        for target in targets:
            rooms.setdefault(target, set())
    found = cycles(rooms)
    assert not found, "rooms importing each other:\n" + "\n".join("  " + " <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_gate_calls_functions_not_the_command_line():
    gate = PACKAGE / "gate"
    offenders = [str(p.relative_to(PACKAGE)) for p in gate.rglob("*.py") if "verify.cli" in p.read_text()]
    assert not offenders


def test_the_package_patches_nothing_with_unittest_mock():
    """Production code that patches a library at run time hides what it depends on: none of it."""
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if any(isinstance(n, (ast.Import, ast.ImportFrom)) and "unittest" in ast.dump(n)
                        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert not offenders


def test_the_declared_python_has_every_standard_module_the_package_imports():
    """Before: ``requires-python >=3.10`` while the package imports ``tomllib`` (3.11): every command
    failed to import on 3.10."""
    declared = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = tuple(int(part) for part in declared.removeprefix(">=").split("."))
    imported = {alias.name.split(".")[0] for p in PACKAGE.rglob("*.py")
                for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                if isinstance(n, ast.Import) for alias in n.names}
    imported |= {n.module.split(".")[0] for p in PACKAGE.rglob("*.py")
                 for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                 if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    new_in = {"tomllib": (3, 11)}  # the standard modules newer than 3.8 that the package may use
    too_new = {name: since for name, since in new_in.items() if name in imported and since > minimum}
    assert not too_new, f"requires-python {declared} but the package imports {too_new}"
