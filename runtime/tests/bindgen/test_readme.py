"""The README's typed-bindings example runs, and type-checks under ``mypy --strict``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from polyengine.cli import main

from .support import tool

ROOT = Path(__file__).parents[3]


def _example() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Typed bindings", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1
    return str(blocks[0])


def test_readme_bindings_example(wat: object, tmp_path: Path) -> None:
    assert callable(wat)
    build = tmp_path / "examples" / "build"
    build.mkdir(parents=True)
    calc = build / "calc.wasm"
    calc.write_bytes(wat((ROOT / "examples" / "embed" / "calc.wat").read_text()))
    assert main(["bindgen", str(calc), "-o", str(tmp_path / "calc_bindings.py")]) == 0
    script = tmp_path / "example.py"
    script.write_text(_example())
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("3 ")
    checked = subprocess.run(
        [tool("mypy"), "--strict", "--no-incremental", "example.py", "calc_bindings.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout


@pytest.mark.parametrize("flag", ["--stubs", None])
def test_readme_commands(wat: object, tmp_path: Path, flag: str | None) -> None:
    assert callable(wat)
    calc = tmp_path / "calc.wasm"
    calc.write_bytes(wat((ROOT / "examples" / "embed" / "calc.wat").read_text()))
    args = ["bindgen", str(calc)] + ([flag] if flag else [])
    assert main(args) == 0
    assert main(["wit", str(calc)]) == 0


def test_readme_wit_command(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Typed bindings", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("polyengine bindgen --wit ")]
    assert len(lines) == 1
    args = lines[0].split()[1:]
    out = args[args.index("-o") + 1]
    args[args.index("-o") + 1] = str(tmp_path / out)
    args[args.index("--wit") + 1] = str(ROOT / args[args.index("--wit") + 1])
    assert main(args) == 0
    assert (tmp_path / out).read_text().splitlines()[1] == (
        "# Source: wit/ (world example:py-app/py-app)"
    )
