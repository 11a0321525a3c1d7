"""polyengine_wasi imports the standard library and polyengine_protocol only (A22)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import polyengine_wasi

PACKAGE_DIR = Path(polyengine_wasi.__file__).parent
ALLOWED_THIRD_PARTY = {"polyengine_protocol"}


def _imported_roots(tree: ast.AST) -> list[tuple[int, str]]:
    roots: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module is not None:
                roots.append((node.lineno, node.module.split(".")[0]))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
        ):
            roots.append((node.lineno, "__import__"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
        ):
            roots.append((node.lineno, "importlib.import_module"))
    return roots


def test_sources_found() -> None:
    sources = sorted(PACKAGE_DIR.rglob("*.py"))
    assert len(sources) >= 10
    assert PACKAGE_DIR / "__init__.py" in sources


def test_imports_only_stdlib_and_protocol() -> None:
    offenders: list[str] = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, root in _imported_roots(tree):
            if root == "polyengine":
                offenders.append(f"{path.name}:{line} imports the runtime (polyengine)")
            elif root in ("__import__", "importlib.import_module"):
                offenders.append(f"{path.name}:{line} imports dynamically ({root})")
            elif root not in sys.stdlib_module_names and root not in ALLOWED_THIRD_PARTY:
                offenders.append(f"{path.name}:{line} imports {root}")
    assert offenders == []


def test_the_scan_catches_a_runtime_import() -> None:
    tree = ast.parse("import os\nfrom polyengine.embed import x\nimport wasmtime\n")
    roots = [root for _, root in _imported_roots(tree)]
    assert roots == ["os", "polyengine", "wasmtime"]
