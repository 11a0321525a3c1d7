"""The compiled call path refuses what would let wasmtime touch memory it must not.

Its constructors check what they are given before keeping any address, and
its trampoline turns an ``env`` it cannot serve into a trap, never a crash;
each scenario that reaches wasmtime runs in a fresh interpreter, whose
return code shows that the process finished normally.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from polyengine.engine import _callpath

pytestmark = pytest.mark.skipif(
    _callpath._ACCEL is None, reason="the compiled call path is not active"
)


def _noop(*_args: object) -> None:
    return None


@pytest.mark.parametrize(
    "args",
    [
        (0, 1, 1, "I", "I", 0, 0, _noop, _noop, None),  # no store cell
        (1, 0, 1, "I", "I", 0, 0, _noop, _noop, None),  # no function
        (1, 1, 0, "", "", 0, 0, _noop, _noop, None),  # no slot
        (1, 1, 1, "II", "I", 0, 0, _noop, _noop, None),  # more arguments than slots
        (1, 1, 1, "I", "II", 0, 0, _noop, _noop, None),  # more results than slots
        (1, 1, 65, "I", "I", 0, 0, _noop, _noop, None),  # past the slot limit
        (1, 1, 1, "x", "I", 0, 0, _noop, _noop, None),  # an unknown format
        (1, 1, 1, "I", "I", 3, 0, _noop, _noop, None),  # an unknown mode
    ],
)
def test_callers_refuse_what_would_reach_bad_memory(args: tuple[object, ...]) -> None:
    with pytest.raises(ValueError):
        _callpath._ACCEL.Caller(*args)


def test_signatures_refuse_unknown_formats() -> None:
    with pytest.raises(ValueError):
        _callpath._ACCEL.register_signature("Ii", "I")  # signed readings are not slot types here
    with pytest.raises(ValueError):
        _callpath._ACCEL.register_signature("I" * 64, "")


SCENARIO = """
import ctypes, wasmtime
from polyengine import engine
from polyengine.engine import _callpath, _ffi as ffi
from polyengine.engine._core import CoreFunc
from polyengine.engine._store import HOST_ENTRIES, new_host_env
from polyengine.engine._values import functype

store = engine.EngineStore(suspend=False)
state = store._state
engine.define_host_func(store, ["i32"], ["i32"], lambda a: a)  # makes the compiled callback
cb, tag = _callpath.host_callback(("i32",), ("i32",), state)
assert tag

def host(env):
    func = ffi.FuncStruct()
    ty = functype(state.engine._ptr, ("i32",), ("i32",))
    ffi.func_new_unchecked(store._ctx(), ffi.address(ty.ptr()), cb, env, None,
                           ctypes.addressof(func))
    return CoreFunc._wrap(store, func)

GUEST = '''(module (import "h" "f" (func $f (param i32) (result i32)))
  (func (export "g") (param i32) (result i32) local.get 0 call $f))'''
module = engine.compile_module(wasmtime.wat2wasm(GUEST), "g")

def trap_of(env):
    g = engine.instantiate(store, module, [host(env)]).func("g")
    try:
        g.call_raw([1])
    except engine.CoreTrap as exc:
        return str(exc)
    raise AssertionError("no trap")

# an env without a signature tag, one with a tag never registered, one whose body is gone
print(trap_of(new_host_env(state, lambda a: a, 0)))
print(trap_of(new_host_env(state, lambda a: a, 4000)))
gone = new_host_env(state, lambda a: a, tag)
del HOST_ENTRIES[gone]
print(trap_of(gone))
# a body that returns what no slot takes, and one that raises
print(trap_of(new_host_env(state, lambda a: object(), tag)))
print(trap_of(new_host_env(state, lambda a: 1 / 0, tag)))
store.close()
print("SCENARIO-OK")
"""


def test_the_trampoline_traps_for_an_env_it_cannot_serve() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCENARIO)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[-1] == "SCENARIO-OK"
    assert "without a signature" in lines[0]
    assert "without a signature" in lines[1]
    assert "closed store" in lines[2]
    assert "TypeError" in lines[3]
    assert "ZeroDivisionError" in lines[4]
    assert "Exception ignored" not in proc.stderr
