"""The goldens and host code written against them, under ``mypy --strict`` and pyright.

Every expected module, its provider skeleton (``--stubs``) and every
``hosts/*_host.py`` must pass both checkers;
every ``hosts/bad_*.py`` must be rejected by both, on exactly the lines
marked ``# expect-error`` (python-mapping.md §7: generated code passes
``mypy --strict``; bindgen.md §4: negative type tests).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .support import EXPECTED, GOLDEN_NAMES, HOSTS, stubs_text, tool

MARK = "# expect-error"


@pytest.fixture(scope="module")
def checked(
    tmp_path_factory: pytest.TempPathFactory, golden_components: dict[str, bytes]
) -> dict[str, dict[str, set[int]]]:
    """``{checker: {file name: lines with errors}}`` over one copy of goldens and hosts."""
    mypy, pyright = tool("mypy"), tool("pyright")
    work = tmp_path_factory.mktemp("typecheck")
    golden = golden_components
    for name in GOLDEN_NAMES:
        shutil.copy(EXPECTED / f"{name}_bindings.py", work)
    for host in HOSTS.glob("*.py"):
        shutil.copy(host, work)
    for name in GOLDEN_NAMES:
        stubs = stubs_text(golden[name], f"{name}.wasm", f"{name}_bindings")
        (work / f"{name}_stubs.py").write_text(stubs)
    files = sorted(p.name for p in work.glob("*.py"))
    python = str(Path(mypy).with_name("python"))
    out: dict[str, dict[str, set[int]]] = {"mypy": {}, "pyright": {}}
    proc = subprocess.run(
        [mypy, "--strict", "--no-incremental", "--show-error-codes", *files],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    for m in re.finditer(r"^([\w.]+\.py):(\d+): error:", proc.stdout, re.MULTILINE):
        out["mypy"].setdefault(m.group(1), set()).add(int(m.group(2)))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    proc = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", python, *files],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    report = json.loads(proc.stdout)
    for diag in report["generalDiagnostics"]:
        if diag["severity"] == "error":
            name = Path(diag["file"]).name
            out["pyright"].setdefault(name, set()).add(diag["range"]["start"]["line"] + 1)
    return out


CLEAN = [f"{n}_{kind}.py" for n in GOLDEN_NAMES for kind in ("bindings", "stubs")] + sorted(
    p.name for p in HOSTS.glob("*_host.py")
)
BAD = sorted(p.name for p in HOSTS.glob("bad_*.py"))


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
@pytest.mark.parametrize("name", CLEAN)
def test_passes(checked: dict[str, dict[str, set[int]]], checker: str, name: str) -> None:
    assert checked[checker].get(name, set()) == set(), f"{checker} errors in {name}"


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
@pytest.mark.parametrize("name", BAD)
def test_rejects(checked: dict[str, dict[str, set[int]]], checker: str, name: str) -> None:
    lines = (HOSTS / name).read_text().splitlines()
    marked = {i + 1 for i, line in enumerate(lines) if line.rstrip().endswith(MARK)}
    assert marked, f"{name} marks no line"
    assert checked[checker].get(name, set()) == marked, f"{checker} on {name}"


def test_every_golden_has_host_code() -> None:
    hosts = {p.name for p in HOSTS.glob("*_host.py")}
    assert {f"{n}_host.py" for n in GOLDEN_NAMES} <= hosts
