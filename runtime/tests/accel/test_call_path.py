"""Which call path is active, and how to choose it (architecture.md §5)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from polyengine import engine
from polyengine.engine import _callpath

PROBE = (
    "from polyengine import engine; from polyengine.engine import _callpath; "
    "print(engine.call_path()); print(_callpath._ACCEL is not None)"
)


def _probe(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "POLYENGINE_PURE"}
    environ.update(env)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=environ, check=True
    )
    return out.stdout.splitlines()


def _built() -> bool:
    return importlib.util.find_spec("polyengine.engine._accel") is not None


def test_polyengine_pure_forces_the_pure_path() -> None:
    assert _probe(POLYENGINE_PURE="1") == ["pure Python (POLYENGINE_PURE=1)", "False"]


@pytest.mark.parametrize("value", ["", "0"])
def test_without_the_switch_the_built_extension_is_used(value: str) -> None:
    described, active = _probe(POLYENGINE_PURE=value)
    if _built():
        assert (described, active) == ("compiled (polyengine.engine._accel)", "True")
    else:
        assert (described, active) == ("pure Python (the compiled call path is not built)", "False")


def test_version_names_the_active_path() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "polyengine", "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.splitlines()[0].startswith("polyengine ")
    assert out.splitlines()[1] == f"call path: {engine.call_path()}"


def test_stores_made_under_pure_stores_stay_pure() -> None:
    with _callpath.pure_stores():
        pure = engine.EngineStore(suspend=False)
    compiled = engine.EngineStore(suspend=False)
    try:
        assert not _callpath.compiled_store(pure._state)
        assert _callpath.compiled_store(compiled._state) == (_callpath._ACCEL is not None)
    finally:
        pure.close()
        compiled.close()
