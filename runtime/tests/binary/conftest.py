"""Fixtures for the binary reader tests: compile component text with ``wasm-tools parse``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def _wasm_tools() -> str:
    local = Path(sys.executable).parent / "wasm-tools"
    if local.exists():
        return str(local)
    found = shutil.which("wasm-tools")
    if found is None:
        pytest.skip("wasm-tools is not installed")
    return found


def compile_wat(text: str) -> bytes:
    """Compile component (or core) text to binary with ``wasm-tools parse``."""
    proc = subprocess.run(
        [_wasm_tools(), "parse", "-", "-o", "/dev/stdout"],
        input=text.encode(),
        capture_output=True,
        check=False,
        timeout=60,
    )
    if proc.returncode != 0:
        raise AssertionError(f"wasm-tools parse failed:\n{proc.stderr.decode()}\n{text}")
    return proc.stdout


@pytest.fixture(scope="session")
def wat2wasm() -> Callable[[str], bytes]:
    """``wat2wasm(text) -> bytes``."""
    return compile_wat
