"""The module import graph of ``runtime/src``, read from the source with :mod:`ast`.

Two rules of the layout (architecture.md, style.md: "private modules behind a
curated ``__init__`` face"):

* No module imports a private module or name (a ``_module`` or ``_name``) of
  another folder: other folders import a package's face, its ``__init__``,
  or its public modules.
* No import cycle between modules at run time: the graph of imports that run
  (every import outside ``if TYPE_CHECKING:``, at module level or inside a
  function) has no cycle.

Every violation is listed, one a line. :data:`ALLOWED` names the ones that
live in folders being restructured; each entry must still occur (a stale
entry fails too), so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
FIRST_PARTY = ("polyengine", "polyengine_protocol", "polyengine_wasi")

# Violations that live in folders being restructured. A private import is
# "importer -> target"; a cycle is "cycle: " and its modules, sorted, joined
# by " ". Remove a line when its violation is gone; the test fails on a line
# that no longer matches anything.
ALLOWED: frozenset[str] = frozenset({})


@dataclass(frozen=True)
class Edge:
    """``importer`` imports ``target`` (a module), naming ``names`` from it, at ``line``."""

    importer: str
    target: str
    names: tuple[str, ...]
    line: int
    type_checking: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def folder(module: str, known: dict[str, Path]) -> str:
    """The package a module lives in (a package's own folder for its ``__init__``)."""
    if is_package(known[module]):
        return module
    return module.rpartition(".")[0]


def _is_type_checking(test: ast.expr) -> bool:
    match test:
        case ast.Name("TYPE_CHECKING"):
            return True
        case ast.Attribute(ast.Name("typing"), "TYPE_CHECKING"):
            return True
    return False


def _imports(tree: ast.AST, type_checking: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement below ``tree`` with whether it only runs under a type checker."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, type_checking
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports_of(child, True)
            for child in node.orelse:
                yield from _imports_of(child, type_checking)
        else:
            yield from _imports(node, type_checking)


def _imports_of(node: ast.stmt, type_checking: bool) -> Iterator[tuple[ast.stmt, bool]]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node, type_checking
    else:
        yield from _imports(node, type_checking)


def _resolve(importer: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        assert node.module is not None
        return node.module
    base = importer if is_package(path) else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def edges(known: dict[str, Path]) -> list[Edge]:
    out: list[Edge] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        for node, tc in _imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out.append(Edge(name, alias.name, (), node.lineno, tc))
                continue
            assert isinstance(node, ast.ImportFrom)
            base = _resolve(name, path, node)
            plain: list[str] = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:  # ``from package import module``
                    out.append(Edge(name, sub, (), node.lineno, tc))
                else:
                    plain.append(alias.name)
            if plain or not node.names:
                out.append(Edge(name, base, tuple(plain), node.lineno, tc))
    return out


def _private(segment: str) -> bool:
    return segment.startswith("_") and not (segment.startswith("__") and segment.endswith("__"))


def private_imports(known: dict[str, Path], graph: list[Edge]) -> dict[str, str]:
    """``"importer -> target"`` for each import of another folder's private module or name."""
    found: dict[str, str] = {}
    for e in graph:
        if e.target.split(".")[0] not in FIRST_PARTY:
            continue
        home = folder(e.importer, known)
        target_folder = folder(e.target, known) if e.target in known else e.target
        if target_folder == home:
            continue
        # the segments of the target below the deepest folder the importer shares with it
        shared = _common(home, e.target)
        below = e.target.split(".")[len(shared) :]
        bad = [s for s in below if _private(s)]
        names = [n for n in e.names if _private(n)]
        if not bad and not names:
            continue
        shown = e.target + (f" ({', '.join(names)})" if names else "")
        key = f"{e.importer} -> {e.target}"
        where = f"{known[e.importer].relative_to(SRC)}:{e.line}"
        found.setdefault(key, f"{where}: {e.importer} imports {shown}")
    return found


def _common(a: str, b: str) -> list[str]:
    out: list[str] = []
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x != y:
            break
        out.append(x)
    return out


def runtime_cycles(known: dict[str, Path], graph: list[Edge]) -> dict[str, str]:
    """``"cycle: m1 m2 ..."`` for each strongly connected set of modules, with one cycle shown."""
    succ: dict[str, dict[str, int]] = {m: {} for m in known}
    for e in graph:
        if not e.type_checking and e.target in known and e.target != e.importer:
            succ[e.importer].setdefault(e.target, e.line)
    found: dict[str, str] = {}
    for scc in _sccs(succ):
        if len(scc) < 2:
            continue
        members = sorted(scc)
        path = _cycle_through(members[0], scc, succ)
        shown = " -> ".join(
            f"{a} (line {succ[a][b]})" for a, b in zip(path, [*path[1:], path[0]], strict=True)
        )
        found[f"cycle: {' '.join(members)}"] = (
            f"import cycle among {len(members)} modules ({', '.join(members)}); "
            f"one is {shown} -> {path[0]}"
        )
    return found


def _sccs(succ: dict[str, dict[str, int]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = 0
    for root, root_succ in succ.items():
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(root_succ))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp: set[str] = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def _cycle_through(start: str, scc: set[str], succ: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle from ``start`` back to itself inside ``scc`` (breadth first)."""
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt: list[str] = []
        for v in frontier:
            for w in sorted(succ[v]):
                if w not in scc:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return path[::-1]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{start} is on no cycle")


def violations() -> dict[str, str]:
    known = modules()
    graph = edges(known)
    return {**private_imports(known, graph), **runtime_cycles(known, graph)}


def test_the_graph_is_read() -> None:
    known = modules()
    graph = edges(known)
    assert "polyengine.translate._inline" in known
    targets = {e.target for e in graph if e.importer == "polyengine.translate._inline"}
    assert "polyengine.binary.ast" in targets
    assert "polyengine.translate._canon" in targets  # ``from polyengine.translate import _canon``


def test_no_private_import_across_folders_and_no_runtime_cycle() -> None:
    found = violations()
    new = sorted(v for k, v in found.items() if k not in ALLOWED)
    stale = sorted(ALLOWED - found.keys())
    report = []
    if new:
        report.append(f"{len(new)} import rule violation(s):")
        report.extend(f"  {v}" for v in new)
    if stale:
        report.append("allowed violations that no longer occur (remove them from ALLOWED):")
        report.extend(f"  {k}" for k in stale)
    if report:
        pytest.fail("\n".join(report), pytrace=False)


def _write(tmp: Path, files: dict[str, str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for rel, text in files.items():
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for p in sorted(tmp.rglob("*.py")):
        parts = list(p.relative_to(tmp).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def test_the_rules_catch_what_they_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(__import__(__name__, fromlist=["SRC"]), "SRC", tmp_path)
    known = _write(
        tmp_path,
        {
            "polyengine/__init__.py": "",
            "polyengine/a/__init__.py": "from polyengine.a._impl import f as f\n",
            "polyengine/a/_impl.py": "from polyengine.b import g\ndef f() -> None: ...\n",
            "polyengine/b/__init__.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from polyengine.a._impl import f\n"
                "def g() -> None:\n    from polyengine.a import f\n"
            ),
            "polyengine/c/__init__.py": (
                "from polyengine.a import _impl\nfrom polyengine.b import _x\n"
            ),
        },
    )
    graph = edges(known)
    private = private_imports(known, graph)
    assert set(private) == {
        "polyengine.c -> polyengine.a._impl",
        "polyengine.c -> polyengine.b",
        "polyengine.b -> polyengine.a._impl",  # a TYPE_CHECKING import is still an import
    }
    assert "(_x)" in private["polyengine.c -> polyengine.b"]
    cycles = runtime_cycles(known, graph)
    # a -> a._impl -> b -> (in g) a; the TYPE_CHECKING import adds no edge
    assert list(cycles) == ["cycle: polyengine.a polyengine.a._impl polyengine.b"]
    assert cycles[next(iter(cycles))] == (
        "import cycle among 3 modules (polyengine.a, polyengine.a._impl, polyengine.b); "
        "one is polyengine.a (line 1) -> polyengine.a._impl (line 1)"
        " -> polyengine.b (line 5) -> polyengine.a"
    )
