"""Shared pytest configuration for the runtime tests.

The session fixtures here compile the component text format with
``wasm-tools parse``; a test folder may still define its own fixtures.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _compiler(wasm_tools: str, *, check: bool) -> Callable[[str], bytes]:
    def compile_text(text: str) -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.wasm"
            proc = subprocess.run(
                [wasm_tools, "parse", "-", "-o", str(out)],
                input=text.encode(),
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0:
                raise AssertionError(f"wasm-tools parse failed:\n{proc.stderr.decode()}")
            if check:
                proc = subprocess.run(
                    [wasm_tools, "validate", "--features", "all", str(out)],
                    capture_output=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise AssertionError(f"wasm-tools validate failed:\n{proc.stderr.decode()}")
            return out.read_bytes()

    return compile_text


@pytest.fixture(scope="session")
def wat2wasm(wasm_tools: str) -> Callable[[str], bytes]:
    """Compile component text format to a binary that wasm-tools also finds valid."""
    return _compiler(wasm_tools, check=True)


@pytest.fixture(scope="session")
def wat2wasm_unchecked(wasm_tools: str) -> Callable[[str], bytes]:
    """Compile component text format to a binary without validating it."""
    return _compiler(wasm_tools, check=False)


@pytest.fixture(scope="session")
def wat(wasm_tools: str) -> Callable[[str], bytes]:
    """Compile component text to a binary with ``wasm-tools parse`` (cached per text)."""
    cache: dict[str, bytes] = {}

    def compile_text(text: str) -> bytes:
        found = cache.get(text)
        if found is None:
            proc = subprocess.run(
                [wasm_tools, "parse", "-", "-o", "/dev/stdout"],
                input=text.encode(),
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0:
                raise AssertionError(proc.stderr.decode())
            found = cache[text] = proc.stdout
        return found

    return compile_text


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The trampoline indices an instance binds one by one
    (``ComponentRuntime._host_binding``), in order."""
    from polyengine.instance._runtime import ComponentRuntime

    seen: list[int] = []
    original = ComponentRuntime._host_binding

    def recording(self: ComponentRuntime, index: int) -> Any:
        seen.append(index)
        return original(self, index)

    monkeypatch.setattr(ComponentRuntime, "_host_binding", recording)
    return seen
