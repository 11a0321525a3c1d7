"""Every code block of the user guide under ``docs/`` runs, and shows what it says.

``python`` blocks of one page run in order in one namespace, in a fresh
interpreter whose working folder holds the components the page names
(compiled with ``wasm-tools parse`` from ``docs/components/*.wat`` and from
``examples/``). ``sh`` blocks run with ``bash -euo pipefail`` in the same
folder, the running interpreter's scripts first on ``PATH``; an ``output``
block right after one is its exact expected stdout. Any other fenced block
fails the test, so nothing on a page goes unexecuted.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```\n", re.M | re.S)

#: The components a page may open, by file name.
SOURCES = {
    "hello.wasm": REPO / "examples" / "hello" / "hello.wat",
    "calc.wasm": REPO / "examples" / "embed" / "calc.wat",
    **{p.with_suffix(".wasm").name: p for p in sorted((DOCS / "components").glob("*.wat"))},
}

RUNNER = r"""
import json, sys, traceback
blocks = json.load(sys.stdin)
namespace = {"__name__": "__main__"}
for line, code in blocks:
    try:
        exec(compile(code, f"{sys.argv[1]}:{line}", "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"the python block at {sys.argv[1]}:{line} failed", file=sys.stderr)
        sys.exit(1)
print(f"ran {len(blocks)} python blocks")
"""


@dataclass
class Block:
    lang: str
    line: int
    text: str


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [
        Block(m.group(1), text.count("\n", 0, m.start()) + 2, m.group(2))
        for m in FENCE.finditer(text)
    ]


@pytest.fixture
def workdir(tmp_path: Path, wasm_tools: str) -> Path:
    for name, source in SOURCES.items():
        subprocess.run([wasm_tools, "parse", str(source), "-o", str(tmp_path / name)], check=True)
    return tmp_path


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["POLYENGINE_CACHE_DIR"] = str(workdir / ".module-cache")
    env.pop("PYTHONPATH", None)
    return env


def test_the_guide_exists() -> None:
    assert (DOCS / "guide.md").is_file()
    assert len(blocks(DOCS / "guide.md")) >= 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_runs(page: Path, workdir: Path) -> None:
    found = blocks(page)
    rel = page.relative_to(REPO).as_posix()
    python: list[tuple[int, str]] = []
    ran_sh = 0
    for i, block in enumerate(found):
        if block.lang == "python":
            python.append((block.line, block.text))
        elif block.lang == "sh":
            if block.text.lstrip().startswith("pip install"):
                continue  # the install line: CI runs it from a fresh venv (.ci/run)
            proc = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block.text],
                cwd=workdir,
                env=_env(workdir),
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            where = f"the sh block at {rel}:{block.line}"
            assert proc.returncode == 0, f"{where} failed:\n{proc.stdout}{proc.stderr}"
            following = found[i + 1] if i + 1 < len(found) else None
            if following is not None and following.lang == "output":
                assert proc.stdout == following.text, where
            ran_sh += 1
        elif block.lang == "output":
            assert i > 0 and found[i - 1].lang == "sh", f"{rel}:{block.line}: output after no sh"
        else:
            pytest.fail(f"{rel}:{block.line}: a {block.lang or 'plain'} block cannot be executed")
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, rel],
        input=json.dumps(python),
        cwd=workdir,
        env=_env(workdir),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.endswith(f"ran {len(python)} python blocks\n"), proc.stdout
    assert python or ran_sh


def test_the_components_table_names_real_files() -> None:
    table = (DOCS / "guide.md").read_text(encoding="utf-8")
    for name in re.findall(r"^\| `([\w-]+\.wasm)` ", table, re.M):
        assert name in SOURCES, name
    for name in SOURCES:
        assert f"`{name}`" in table, f"{name} is compiled for the guide but not listed"
