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


GUEST = """(module
  (import "h" "f" (func $f (param i32) (result i32)))
  (func (export "g") (param i32) (result i32) local.get 0 call $f))"""


@pytest.mark.parametrize("pure", [False, True])
def test_each_store_uses_the_implementations_of_its_path(pure: bool) -> None:
    import wasmtime

    if pure:
        with _callpath.pure_stores():
            store = engine.EngineStore(suspend=False)
    else:
        store = engine.EngineStore(suspend=False)
    try:
        h = engine.define_host_func(store, ["i32"], ["i32"], lambda a: [a[0] + 1])
        module = engine.compile_module(wasmtime.wat2wasm(GUEST), "g")
        g = engine.instantiate(store, module, [h]).func("g")
        compiled = _callpath._ACCEL is not None and not pure
        callers = [g.specialize("I", "I"), g.flat_call(), g._fast_raw]
        assert [type(c).__name__ == "Caller" for c in callers] == [compiled] * 3
        _, tag = _callpath.host_callback(("i32",), ("i32",), store._state)
        assert (tag != 0) == compiled
        assert callers[0](1) == 2 and tuple(callers[1]([1])) == (2,) and g.call_raw([1]) == [2]
    finally:
        store.close()
