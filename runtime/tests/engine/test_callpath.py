"""The call-path interface: ``CoreFunc.specialize``, ``CoreFunc.flat_call``, host trampolines.

The engine calls ``wasmtime_func_call_unchecked`` through a ctypes prototype
that declares no argument types, with the arguments prebuilt once per
function. Nothing checks them per call, so these tests pin what the
prebuilt arguments are, that a call through the interface is ``call_raw``'s
call, how slot formats range-check, and that the preconditions which keep
wasmtime from touching a dead store or memory past the slot buffer still
hold (the scenarios that could crash run in a fresh interpreter).
"""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from polyengine.engine import (
    CoreFunc,
    CoreModule,
    CoreTrap,
    CoreValue,
    EngineError,
    EngineStore,
    StoreClosedError,
    define_host_func,
    instantiate,
)
from polyengine.engine import _ffi as ffi
from polyengine.engine._core import _call_args
from polyengine.engine._store import HOST_ENTRIES

Wat = Callable[..., CoreModule]
Run = Callable[[str], subprocess.CompletedProcess[str]]

MODULE = """(module
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "neg") (param i32) (result i32) i32.const 0 local.get 0 i32.sub)
  (func (export "three") (param i64 i64 i64) (result i64)
    local.get 0 local.get 1 i64.add local.get 2 i64.add)
  (func (export "pair") (result i32 f64) i32.const 7 f64.const 2.5)
  (func (export "swap") (param i64 f64) (result f64 i64) local.get 1 local.get 0)
  (func (export "half") (param f32) (result f32) local.get 0 f32.const 0.5 f32.mul)
  (func (export "nothing") (param i32))
  (func (export "boom") unreachable)
)"""

HOSTED = """(module
  (import "h" "f" (func $f (param i32 i64) (result i64)))
  (func (export "call") (param i32 i64) (result i64) local.get 0 local.get 1 call $f)
)"""


def _func(wat: Wat, store: EngineStore, name: str) -> CoreFunc:
    return instantiate(store, wat(MODULE), []).func(name)


def test_the_untyped_prototype_declares_no_argument_types() -> None:
    assert ffi.func_call_unchecked_untyped.argtypes is None
    assert ffi.func_call_unchecked_untyped.restype is ctypes.c_void_p
    # the typed prototype of the same entry point is a separate object, still typed
    assert ffi.func_call_unchecked is not ffi.func_call_unchecked_untyped
    assert ffi.func_call_unchecked.argtypes is not None


@pytest.mark.parametrize("name", ["add", "three", "pair", "boom"])
def test_call_args_are_the_typed_call_arguments_as_ctypes_objects(wat: Wat, name: str) -> None:
    with EngineStore() as store:
        func = _func(wat, store, name)
        ctx, addr, buf, nslots, trap = func._call_args
        assert [type(a) for a in func._call_args] == [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_void_p,
        ]
        assert ctx.value == store._state.ctx
        assert addr.value == func._addr
        assert buf.value == ctypes.addressof(func._buf)
        assert nslots.value == func._nslots
        assert trap.value == ctypes.addressof(func._trap)
        # the buffer holds every slot wasmtime may read or write
        assert ctypes.sizeof(func._buf) >= func._nslots * ffi.VAL_RAW_SIZE


CASES: list[tuple[str, tuple[str, str], tuple[CoreValue, ...], Any]] = [
    ("add", ("II", "I"), (2, 40), 42),
    ("add", ("ii", "i"), (-5, 2), -3),
    ("add", ("Ii", "I"), (0xFFFF_FFFF, 1), 0),
    ("neg", ("i", "i"), (7,), -7),
    ("neg", ("I", "I"), (7,), 0xFFFF_FFF9),
    ("three", ("QQq", "Q"), (1, 2**63, 2**62), 2**63 + 2**62 + 1),
    ("three", ("qqq", "q"), (-1, -2, 3), 0),
    ("pair", ("", "Id"), (), (7, 2.5)),
    ("swap", ("qd", "dq"), (-(2**40), 1.5), (1.5, -(2**40))),
    ("half", ("f", "f"), (3.0,), 1.5),
    ("nothing", ("I", ""), (9,), None),
]


@pytest.mark.parametrize(("name", "formats", "args", "expected"), CASES)
def test_specialize_calls_in_the_chosen_formats(
    wat: Wat, name: str, formats: tuple[str, str], args: tuple[CoreValue, ...], expected: Any
) -> None:
    with EngineStore() as store:
        func = _func(wat, store, name)
        call = func.specialize(*formats)
        assert call(*args) == expected
        assert call(*args) == expected  # the slots are reused


@pytest.mark.parametrize(
    ("formats", "bad"),
    [("IQ", (-1, 0)), ("iQ", (2**31, 0)), ("IQ", (0, 2**64)), ("Iq", (0, 2**63)), ("iq", (1.5, 0))],
)
def test_a_value_out_of_its_format_raises_before_the_call(
    wat: Wat, formats: str, bad: tuple[Any, ...]
) -> None:
    with EngineStore() as store:
        calls: list[Sequence[CoreValue]] = []

        def spy(args: Sequence[CoreValue]) -> list[CoreValue]:
            calls.append(args)
            return [0]

        host = define_host_func(store, ["i32", "i64"], ["i64"], spy)
        inst = instantiate(store, wat(HOSTED), [host])
        call = inst.func("call").specialize(formats, "Q")
        with pytest.raises((ValueError, TypeError)):
            call(*bad)
        assert calls == []  # nothing ran
        assert call(1, 2) == 0 and len(calls) == 1


def test_three_arguments_range_check_too(wat: Wat) -> None:
    with EngineStore() as store:
        call = _func(wat, store, "three").specialize("QQQ", "Q")
        with pytest.raises(ValueError):
            call(1, 2, -3)
        assert call(1, 2, 3) == 6


def test_formats_must_fit_the_core_type(wat: Wat) -> None:
    with EngineStore() as store:
        func = _func(wat, store, "add")
        for formats, rformats in [("I", "I"), ("Qi", "I"), ("II", "f"), ("II", "")]:
            with pytest.raises(ValueError, match="formats"):
                func.specialize(formats, rformats)


def test_flat_call_is_call_raw(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        for name, args in [("add", (2, 40)), ("three", (1, 2**63, 2**62)), ("pair", ())]:
            func = inst.func(name)
            assert list(func.flat_call()(args)) == func.call_raw(args)
        # values call_raw converts (a negative int) reach it through the flat call
        assert tuple(inst.func("add").flat_call()([-1, 3])) == (2,)


def test_a_trap_raises_and_the_out_cell_is_reset(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        boom = inst.func("boom")
        for call in (boom.specialize("", ""), lambda: boom.flat_call()(())):
            with pytest.raises(CoreTrap, match="unreachable"):
                call()
            assert not boom._trap.value  # reset for the next call
        assert inst.func("add").specialize("II", "I")(1, 2) == 3  # the store is usable


def test_a_closed_store_refuses_every_call(wat: Wat) -> None:
    store = EngineStore()
    func = _func(wat, store, "add")
    fast, flat = func.specialize("II", "I"), func.flat_call()
    store.close()
    assert not store._state.direct
    for call in (lambda: fast(1, 2), lambda: flat((1, 2))):
        with pytest.raises(StoreClosedError):
            call()


def test_host_functions_share_one_callback_per_signature_and_go_with_their_store(
    wat: Wat,
) -> None:
    store = EngineStore()
    before = len(HOST_ENTRIES)
    f = define_host_func(store, ["i32", "i64"], ["i64"], lambda a: [a[0] + a[1]])
    g = define_host_func(store, ["i32", "i64"], ["i64"], lambda a: [a[0] * a[1]])
    assert len(HOST_ENTRIES) == before + 2
    keep = len(store._state.keepalive)
    assert keep == 0  # no callback object per function
    assert instantiate(store, wat(HOSTED), [f]).func("call").call_raw([3, 4]) == [7]
    assert instantiate(store, wat(HOSTED), [g]).func("call").call_raw([3, 4]) == [12]
    store.close()
    assert len(HOST_ENTRIES) == before
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
fast = add.specialize("II", "I")
assert add.call_raw([1, 2]) == [3] and fast(1, 2) == 3
store.close()
del store
gc.collect()
try:
    add.call_raw([1, 2])
except StoreClosedError:
    pass
else:
    raise AssertionError("call on a closed store")
try:
    fast(1, 2)
except StoreClosedError:
    pass
else:
    raise AssertionError("specialised call on a closed store")

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
