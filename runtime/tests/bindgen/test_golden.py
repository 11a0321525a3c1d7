"""Golden bindings: each WIT world under ``golden/`` → ``expected/NAME_bindings.py``.

``POLYENGINE_BLESS=1`` rewrites the expected modules; review them as diffs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import polyengine
from polyengine.bindings import world_digest

from .support import EXPECTED, GOLDEN_NAMES, bindings_text, load_module, tool


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_bindings(name: str, golden_components: dict[str, bytes]) -> None:
    text = bindings_text(golden_components[name], f"{name}.wasm")
    path = EXPECTED / f"{name}_bindings.py"
    if os.environ.get("POLYENGINE_BLESS") == "1":
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with POLYENGINE_BLESS=1"
    assert text == path.read_text(), f"{path.name} differs; rerun with POLYENGINE_BLESS=1"


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_generation_is_deterministic(name: str, golden_components: dict[str, bytes]) -> None:
    data = golden_components[name]
    first = bindings_text(data, "x.wasm")
    polyengine.translate(bytes(data))  # a second translation (cache or not) changes nothing
    assert bindings_text(bytes(data), "x.wasm") == first
    assert "Any" not in first.replace("Anonymous", "")


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_verifies_against_its_component(
    name: str, golden_components: dict[str, bytes]
) -> None:
    module = load_module(EXPECTED / f"{name}_bindings.py", f"{name}_bindings")
    plan = polyengine.translate(golden_components[name]).plan
    module.verify(plan)
    module.verify(plan, strict=True)
    assert world_digest(plan) == module.WORLD_DIGEST


def test_goldens_are_ruff_clean() -> None:
    ruff = tool("ruff")
    root = Path(__file__).parents[3]
    files = [str(EXPECTED / f"{n}_bindings.py") for n in GOLDEN_NAMES]
    config = str(root / "pyproject.toml")
    for cmd in (
        [ruff, "check", "--config", config, *files],
        [ruff, "format", "--check", "--config", config, *files],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
