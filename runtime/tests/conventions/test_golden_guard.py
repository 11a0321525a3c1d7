"""The host-ABI guard: goldens change only with a protocol minor bump (seed A22).

Also proves that the probe host is written the way host modules must be:
it imports the standard library and ``polyengine_protocol``, nothing else.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .golden_guard import (
    FIX_VARIABLE,
    GOLDEN_DIR,
    MANIFEST,
    REPO,
    baseline_from_manifest,
    baseline_from_tag,
    blessing,
    current_baseline,
    guard_violations,
    last_release_tag,
    minor_moved_past,
    protocol_version,
    read_manifest,
    sha256_of,
    update_manifest,
)

HERE = Path(__file__).resolve().parent
ALLOWED_THIRD_PARTY = {"polyengine_protocol"}


def foreign_imports(source: str) -> list[str]:
    """Modules a host module imports beyond the standard library and the protocol package."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found.append("." * node.level + (node.module or ""))
                continue
            names = [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            if top not in ALLOWED_THIRD_PARTY:
                found.append(name)
    # an import by string (importlib / __import__) is an import too
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            fname = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if fname in ("__import__", "import_module"):
                found.append(f"{fname}(...)")
    return found


def test_probe_host_imports_only_the_protocol_package() -> None:
    assert foreign_imports((HERE / "probe_host.py").read_text()) == []


@pytest.mark.parametrize(
    "source",
    [
        "import polyengine",
        "from polyengine.embed import _streams",
        "import wasmtime",
        "from . import scenario",
        "import importlib\nimportlib.import_module('polyengine')",
        "def f():\n    from polyengine import create_stream",
    ],
)
def test_the_import_scan_catches_runtime_imports(source: str) -> None:
    assert foreign_imports(source) != []


def test_the_import_scan_accepts_stdlib_and_protocol() -> None:
    source = "from __future__ import annotations\nimport asyncio\nfrom polyengine_protocol import x"
    assert foreign_imports(source) == []


# --------------------------------------------------------------------------
# The rule on this repository


def test_protocol_versions_agree() -> None:
    version = protocol_version()
    import polyengine_protocol

    assert version == polyengine_protocol.__version__


def test_every_golden_is_in_the_manifest() -> None:
    if blessing():
        update_manifest(GOLDEN_DIR, protocol_version(), os.environ.get(FIX_VARIABLE) or None)
    entries = read_manifest(GOLDEN_DIR)["goldens"]
    assert isinstance(entries, dict)
    on_disk = {p.name for p in GOLDEN_DIR.glob("*.json")} - {MANIFEST}
    missing = sorted(on_disk - set(entries))
    assert missing == [], f"goldens not in {MANIFEST}: {missing} (run the bless)"
    assert on_disk, "no goldens recorded"


def test_goldens_unchanged_since_the_last_release() -> None:
    if blessing():
        update_manifest(GOLDEN_DIR, protocol_version(), os.environ.get(FIX_VARIABLE) or None)
    baseline = current_baseline()
    assert guard_violations(GOLDEN_DIR, baseline, protocol_version()) == []


# --------------------------------------------------------------------------
# The rule, simulated on copies


@pytest.fixture
def golden_copy(tmp_path: Path) -> Path:
    target = tmp_path / "golden"
    target.mkdir()
    (target / "a.json").write_text('{"scenario": "a"}\n')
    (target / "b.json").write_text('{"scenario": "b"}\n')
    assert update_manifest(target, "0.1.0", None) == []
    return target


def test_minor_comparison() -> None:
    assert minor_moved_past("0.2.0", "0.1.9")
    assert minor_moved_past("1.0.0", "0.9.0")
    assert not minor_moved_past("0.1.5", "0.1.0")
    assert not minor_moved_past("0.1.0", "0.1.0")


def test_manifest_guard_trips_on_a_modified_golden(golden_copy: Path) -> None:
    (golden_copy / "a.json").write_text('{"scenario": "a", "changed": true}\n')
    baseline = baseline_from_manifest(golden_copy)
    problems = guard_violations(golden_copy, baseline, "0.1.0")
    assert len(problems) == 1 and "a.json was modified" in problems[0]
    assert guard_violations(golden_copy, baseline, "0.1.7") != []  # a patch bump is not enough
    assert guard_violations(golden_copy, baseline, "0.2.0") == []


def test_manifest_guard_trips_on_a_deleted_golden(golden_copy: Path) -> None:
    (golden_copy / "b.json").unlink()
    problems = guard_violations(golden_copy, baseline_from_manifest(golden_copy), "0.1.0")
    assert len(problems) == 1 and "b.json was deleted" in problems[0]


def test_adding_a_golden_is_free(golden_copy: Path) -> None:
    (golden_copy / "c.json").write_text("{}\n")
    assert guard_violations(golden_copy, baseline_from_manifest(golden_copy), "0.1.0") == []
    assert update_manifest(golden_copy, "0.1.0", None) == []
    assert "c.json" in read_manifest(golden_copy)["goldens"]  # type: ignore[operator]


def test_blessing_cannot_launder_a_change(golden_copy: Path) -> None:
    (golden_copy / "a.json").write_text('{"scenario": "a", "changed": true}\n')
    assert update_manifest(golden_copy, "0.1.0", None) == ["a.json"]
    assert guard_violations(golden_copy, baseline_from_manifest(golden_copy), "0.1.0") != []
    # the bump makes the same bless legitimate, and the entry moves to the new version
    assert update_manifest(golden_copy, "0.2.0", None) == []
    entry = read_manifest(golden_copy)["goldens"]["a.json"]  # type: ignore[index]
    assert entry["protocol_version"] == "0.2.0"
    assert entry["sha256"] == sha256_of((golden_copy / "a.json").read_bytes())
    assert guard_violations(golden_copy, baseline_from_manifest(golden_copy), "0.2.0") == []


def test_the_conventions_fix_escape_is_recorded(golden_copy: Path) -> None:
    (golden_copy / "b.json").write_text('{"scenario": "b", "fixed": true}\n')
    assert update_manifest(golden_copy, "0.1.0", "the suite recorded a wrong label") == []
    manifest = read_manifest(golden_copy)
    assert guard_violations(golden_copy, baseline_from_manifest(golden_copy), "0.1.0") == []
    fixes = manifest["fixes"]
    assert isinstance(fixes, list) and fixes[0]["golden"] == "b.json"
    assert fixes[0]["reason"] == "the suite recorded a wrong label"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


@pytest.mark.parametrize("tag", ["polyengine-protocol-v0.1.0", "v0.1.0"])
def test_tag_guard_trips_on_a_modified_golden(tmp_path: Path, tag: str) -> None:
    repo = tmp_path / "repo"
    golden = repo / "runtime/tests/conventions/golden"
    golden.mkdir(parents=True)
    (repo / "protocol").mkdir()
    pyproject = repo / "protocol/pyproject.toml"
    pyproject.write_text('[project]\nname = "p"\nversion = "0.1.0"\n')
    shutil.copy(HERE / "golden" / "values.json", golden / "values.json")
    (golden / "other.json").write_text("{}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "release")
    _git(repo, "tag", "nightly-1")  # matches neither pattern
    assert last_release_tag(repo) is None
    _git(repo, "tag", tag)
    _git(repo, "commit", "-q", "--allow-empty", "-m", "after")
    assert last_release_tag(repo) == tag
    baseline = baseline_from_tag(repo, tag)
    assert set(baseline.goldens) == {"values.json", "other.json"}
    assert baseline.versions["values.json"] == "0.1.0"
    assert guard_violations(golden, baseline, "0.1.0") == []

    data = json.loads((golden / "values.json").read_text())
    data["transcript"][0]["tampered"] = True
    (golden / "values.json").write_text(json.dumps(data, indent=1) + "\n")
    (golden / "other.json").unlink()
    problems = guard_violations(golden, baseline, "0.1.0")
    assert [p.split(" relative")[0] for p in problems] == [
        "golden other.json was deleted",
        "golden values.json was modified",
    ]
    assert all(f"tag {tag}" in p for p in problems)
    assert guard_violations(golden, baseline, "0.2.0") == []


def test_this_repository_has_a_baseline() -> None:
    tag = last_release_tag(REPO)
    baseline = current_baseline()
    if tag is None:
        assert baseline.source.endswith(MANIFEST)
    else:
        assert baseline.source == f"tag {tag}"
