"""The unchecked call without argument types (``RawEntry.untyped`` over ``call_args``).

The engine calls ``wasmtime_func_call_unchecked`` through a ctypes prototype
that declares no argument types, with the arguments prebuilt once per
function. Nothing checks them per call, so these tests pin what the
prebuilt arguments are, that a call through them is ``call_raw``'s call,
and that the preconditions which keep wasmtime from touching a dead store
or memory past the slot buffer still hold (the scenarios that could crash
run in a fresh interpreter).
"""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from polyengine.engine import CoreModule, CoreTrap, EngineError, EngineStore, instantiate
from polyengine.engine import _ffi as ffi
from polyengine.engine._core import RawEntry, _call_args

Wat = Callable[..., CoreModule]
Run = Callable[[str], subprocess.CompletedProcess[str]]

MODULE = """(module
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "three") (param i64 i64 i64) (result i64)
    local.get 0 local.get 1 i64.add local.get 2 i64.add)
  (func (export "pair") (result i32 f64) i32.const 7 f64.const 2.5)
  (func (export "boom") unreachable)
)"""


def _entry(wat: Wat, store: EngineStore, name: str) -> RawEntry:
    raw = instantiate(store, wat(MODULE), []).func(name).raw_entry()
    assert raw is not None
    return raw


def test_the_untyped_prototype_declares_no_argument_types() -> None:
    assert ffi.func_call_unchecked_untyped.argtypes is None
    assert ffi.func_call_unchecked_untyped.restype is ctypes.c_void_p
    # the typed prototype of the same entry point is a separate object, still typed
    assert ffi.func_call_unchecked is not ffi.func_call_unchecked_untyped
    assert ffi.func_call_unchecked.argtypes is not None


@pytest.mark.parametrize("name", ["add", "three", "pair", "boom"])
def test_call_args_are_the_typed_call_arguments_as_ctypes_objects(wat: Wat, name: str) -> None:
    with EngineStore() as store:
        raw = _entry(wat, store, name)
        ctx, addr, buf, nslots, trap = raw.call_args
        assert [type(a) for a in raw.call_args] == [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_void_p,
        ]
        assert ctx.value == raw.state.ctx
        assert addr.value == raw.addr
        assert buf.value == raw.buf_addr == ctypes.addressof(raw.buf)
        assert nslots.value == raw.nslots
        assert trap.value == raw.trap_addr == ctypes.addressof(raw.trap)
        # the buffer holds every slot wasmtime may read or write
        assert ctypes.sizeof(raw.buf) >= raw.nslots * ffi.VAL_RAW_SIZE
        assert raw.untyped is ffi.func_call_unchecked_untyped


def test_an_untyped_call_is_call_raw(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        for name, args in [("add", (2, 40)), ("three", (1, 2**63, 2**62)), ("pair", ())]:
            func = inst.func(name)
            raw = func.raw_entry()
            assert raw is not None
            raw.pack_into(raw.buf, 0, *args)
            assert not raw.untyped(*raw.call_args)
            assert not raw.trap.value
            assert list(raw.unpack_from(raw.buf)) == func.call_raw(args)


def test_a_trap_through_the_untyped_call_reaches_fail(wat: Wat) -> None:
    with EngineStore() as store:
        raw = _entry(wat, store, "boom")
        err = raw.untyped(*raw.call_args)
        assert err or raw.trap.value
        with pytest.raises(CoreTrap, match="unreachable"):
            raw.fail(err)
        assert not raw.trap.value  # the out-cell is reset for the next call


def test_call_args_refuse_a_closed_store_and_a_short_buffer() -> None:
    buf = (ctypes.c_ubyte * 32)()
    trap = ctypes.c_void_p(0)
    with pytest.raises(EngineError, match="open store"):
        _call_args(0, 1, buf, 2, trap)
    with pytest.raises(EngineError, match="cannot hold 3 slots"):
        _call_args(1, 1, buf, 3, trap)
    with pytest.raises(EngineError, match="cannot hold 0 slots"):
        _call_args(1, 1, buf, 0, trap)
    args: Any = _call_args(1, 2, buf, 2, trap)
    assert [a.value for a in args] == [1, 2, ctypes.addressof(buf), 2, ctypes.addressof(trap)]


def test_closed_store_calls_never_reach_wasmtime(run_isolated: Run) -> None:
    """call_raw and the compiled export call on a closed store raise; the process lives."""
    proc = run_isolated(
        '''
import asyncio, gc
import wasmtime
import polyengine
from polyengine.engine import *

MODULE = compile_module(wasmtime.wat2wasm("""(module
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))"""), "m")
store = EngineStore()
add = instantiate(store, MODULE, []).func("add")
raw = add.raw_entry()
assert add.call_raw([1, 2]) == [3]
store.close()
del store
gc.collect()
try:
    add.call_raw([1, 2])
except StoreClosedError:
    pass
else:
    raise AssertionError("call on a closed store")
assert raw.state.ctx == 0  # the protocol's test refuses the untyped call

COMPONENT = """(component
  (core module $m
    (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
  (core instance $i (instantiate $m))
  (func (export "add") (param "a" u32) (param "b" u32) (result u32)
    (canon lift (core func $i "add"))))"""

async def main():
    inst = await polyengine.instantiate(wasmtime.wat2wasm(COMPONENT), {})
    add = inst.exports.add
    assert await add(1, 2) == 3  # compiled
    inst.close()
    gc.collect()
    for _ in range(3):
        try:
            await add(1, 2)
        except Exception as exc:
            assert "closed" in str(exc), exc
        else:
            raise AssertionError("export call on a closed instance")
asyncio.run(main())
print("SCENARIO-OK")
'''
    )
    assert proc.returncode >= 0, f"process died by signal {-proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "SCENARIO-OK" in proc.stdout
