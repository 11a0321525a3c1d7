"""The package surface: curated exports, the version, and the standard-library-only rule."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import polyengine_protocol as pp

PACKAGE_DIR = Path(pp.__file__).parent


def test_version_matches_the_distribution_metadata() -> None:
    pyproject = (PACKAGE_DIR.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert f'version = "{pp.__version__}"' in pyproject


def test_all_is_exactly_the_public_namespace() -> None:
    public = {name for name in vars(pp) if not name.startswith("_")}
    assert set(pp.__all__) == public
    assert len(pp.__all__) == len(set(pp.__all__))


def test_every_public_name_is_defined_in_a_private_module() -> None:
    for name in pp.__all__:
        value = getattr(pp, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__.startswith("polyengine_protocol._"), name


def test_every_public_name_is_exported_by_exactly_one_private_module() -> None:
    owners: dict[str, list[str]] = {}
    for path in sorted(PACKAGE_DIR.glob("_*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                names = ast.literal_eval(node.value)
                for name in names:
                    owners.setdefault(name, []).append(path.name)
    for name in pp.__all__:
        assert len(owners.get(name, [])) == 1, (name, owners.get(name))


def test_the_package_imports_only_the_standard_library() -> None:
    """python-mapping.md §0: polyengine_protocol may import the standard library only."""
    stdlib = sys.stdlib_module_names
    files = sorted(PACKAGE_DIR.rglob("*.py"))
    assert files, "no source found"
    offenders: list[str] = []
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level > 0:
                    continue  # a relative import stays inside the package
                roots = [(node.module or "").split(".")[0]]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute | ast.Name)
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
                in ("import_module", "__import__")
            ):
                offenders.append(f"{path.name}:{node.lineno}: dynamic import")
                continue
            else:
                continue
            for root in roots:
                if root != "__future__" and root not in stdlib:
                    offenders.append(f"{path.name}:{node.lineno}: {root}")
    assert offenders == []


def test_the_scan_would_catch_a_third_party_import() -> None:
    tree = ast.parse("import wasmtime\nfrom hypothesis import given\nimport json\n")
    roots = [
        (n.names[0].name if isinstance(n, ast.Import) else n.module or "").split(".")[0]
        for n in tree.body
        if isinstance(n, ast.Import | ast.ImportFrom)
    ]
    assert [r for r in roots if r not in sys.stdlib_module_names] == ["wasmtime", "hypothesis"]


def test_py_typed_marker_ships() -> None:
    assert (PACKAGE_DIR / "py.typed").is_file()
