"""Fixtures for the translation tests: component text compiled with ``wasm-tools parse``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def _wasm_tools() -> str:
    local = Path(sys.executable).with_name("wasm-tools")
    if local.exists():
        return str(local)
    found = shutil.which("wasm-tools")
    if found is None:
        pytest.skip("wasm-tools is not installed")
    return found


@pytest.fixture(scope="session")
def wasm_tools() -> str:
    return _wasm_tools()


@pytest.fixture(scope="session")
def wat2wasm(wasm_tools: str) -> Callable[[str], bytes]:
    """Compile component (or core) text format to a binary."""

    def compile_text(text: str) -> bytes:
        proc = subprocess.run(
            [wasm_tools, "parse", "-", "-o", "-"],
            input=text.encode(),
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise AssertionError(f"wasm-tools parse failed:\n{proc.stderr.decode()}")
        return proc.stdout

    return compile_text
