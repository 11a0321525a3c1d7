"""Helpers of the bindgen tests: WIT worlds compiled to components, bindings imported.

A golden world ``golden/NAME.wit`` is compiled with ``wasm-tools component
embed --dummy`` and ``component new`` (a component whose core code is a
placeholder: it has the world's imports and exports and nothing else), and
its bindings are compared with ``expected/NAME_bindings.py``
(``POLYENGINE_BLESS=1`` rewrites them).
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import polyengine
from polyengine.bindgen import Options, generate, generate_stubs

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
EXPECTED = HERE / "expected"
HOSTS = HERE / "hosts"
GOLDEN_NAMES = sorted(p.stem for p in GOLDEN.glob("*.wit"))


def build_component(wasm_tools: str, wit: Path | str, world: str | None = None) -> bytes:
    """A placeholder component of ``world`` in the WIT file or text ``wit``."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "world.wit"
        if isinstance(wit, Path):
            src = wit
        else:
            src.write_text(wit)
        core, out = Path(tmp) / "core.wasm", Path(tmp) / "out.wasm"
        cmd = [wasm_tools, "component", "embed", "--dummy", str(src), "-o", str(core)]
        if world is not None:
            cmd += ["--world", world]
        for step in (cmd, [wasm_tools, "component", "new", str(core), "-o", str(out)]):
            proc = subprocess.run(step, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise AssertionError(f"{' '.join(step)} failed:\n{proc.stderr}")
        return out.read_bytes()


def bindings_text(data: bytes, source: str) -> str:
    return generate(
        polyengine.translate(data).plan, Options(source, hashlib.sha256(data).hexdigest())
    )


def stubs_text(data: bytes, source: str, module: str) -> str:
    plan = polyengine.translate(data).plan
    return generate_stubs(plan, Options(source, hashlib.sha256(data).hexdigest()), module)


def load_module(path: Path, name: str) -> ModuleType:
    """Import the Python file ``path`` as module ``name`` (registered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tool(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        pytest.skip(f"{name} is not installed next to the interpreter")
    return str(path)
