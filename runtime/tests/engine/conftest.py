"""Fixtures for the engine tests: core modules written in WAT."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator

import pytest
import wasmtime

from polyengine.engine import CoreModule, compile_module
from polyengine.engine._callpath import pure_stores


@pytest.fixture(autouse=True, scope="session")
def _private_module_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep the on-disk module cache of the test run out of the user's cache."""
    old = os.environ.get("POLYENGINE_CACHE_DIR")
    os.environ["POLYENGINE_CACHE_DIR"] = str(tmp_path_factory.mktemp("module-cache"))
    yield
    if old is None:
        del os.environ["POLYENGINE_CACHE_DIR"]
    else:
        os.environ["POLYENGINE_CACHE_DIR"] = old


@pytest.fixture
def wat() -> Callable[..., CoreModule]:
    """Compile a core module from WAT text."""

    def build(text: str, name: str = "test") -> CoreModule:
        return compile_module(wasmtime.wat2wasm(text), name)

    return build


@pytest.fixture
def run_isolated() -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Run a Python script in a fresh interpreter (for scenarios that could abort)."""

    def run(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


@pytest.fixture(params=["compiled", "pure"])
def call_path(request: pytest.FixtureRequest) -> Iterator[None]:
    """The test runs twice: on the compiled call path and on the pure one."""
    if request.param == "pure":
        with pure_stores():
            yield
    else:
        yield
