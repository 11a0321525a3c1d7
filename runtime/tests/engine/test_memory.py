"""Memories, tables and globals."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polyengine.engine import (
    CoreModule,
    CoreTrap,
    EngineError,
    EngineStore,
    StoreClosedError,
    instantiate,
)
from polyengine.errors import LinkError

Wat = Callable[..., CoreModule]

MODULE = """(module
  (memory (export "mem") 1 4)
  (memory (export "mem2") 0)
  (table (export "tab") 2 funcref)
  (global (export "g32") (mut i32) (i32.const 7))
  (global (export "g64") (mut i64) (i64.const -1))
  (global (export "gf") (mut f64) (f64.const 1.5))
  (global (export "const") i32 (i32.const 3))
  (type $bin (func (param i32 i32) (result i32)))
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "sub") (param i32 i32) (result i32) local.get 0 local.get 1 i32.sub)
  (func (export "indirect") (param i32 i32 i32) (result i32)
    local.get 1 local.get 2 local.get 0 call_indirect (type $bin))
  (func (export "load") (param i32) (result i32) local.get 0 i32.load)
  (func (export "grow") (param i32) (result i32) local.get 0 memory.grow)
)"""


def test_view_read_write_share_guest_bytes(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        mem = inst.memory("mem")
        assert mem.size() == 65536 and mem.page_size() == 65536
        view = mem.view()
        assert view.format == "B" and not view.readonly and len(view) == 65536
        view[16:20] = (0x01020304).to_bytes(4, "little")
        assert inst.func("load").call_raw([16]) == [0x01020304]
        mem.write(100, b"hello")
        assert mem.read(99, 7) == b"\0hello\0"
        assert bytes(view[100:105]) == b"hello"
        mem.write(200, memoryview(b"abc"))
        assert mem.read(200, 3) == b"abc"
        assert mem.view() is view  # unchanged size: the same view


def test_out_of_bounds_access_traps(wat: Wat) -> None:
    with EngineStore() as store:
        mem = instantiate(store, wat(MODULE), []).memory("mem")
        for ptr, n in [(65535, 2), (-1, 1), (0, 65537), (2**40, 1)]:
            with pytest.raises(CoreTrap) as info:
                mem.read(ptr, n)
            assert info.value.code == "memory_out_of_bounds"
        with pytest.raises(CoreTrap):
            mem.write(65534, b"abc")
        with pytest.raises(CoreTrap):
            mem.check(65000, 1000)
        mem.check(65000, 536)
        assert mem.read(65536, 0) == b""


def test_view_is_rederived_after_growth(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        mem = inst.memory("mem")
        old = mem.view()
        old[0] = 42
        assert inst.func("grow").call_raw([1]) == [1]
        new = mem.view()
        assert len(new) == 2 * 65536 and new[0] == 42
        new[70000] = 7
        assert mem.read(70000, 1) == b"\x07"
        assert len(old) == 65536 and old[0] == 42  # still valid: memories never move
        assert mem.grow(1) == 2 and mem.size() == 3 * 65536
        assert mem.grow(5) == -1  # beyond the maximum
        with pytest.raises(ValueError, match="negative"):
            mem.grow(-1)
        empty = inst.memory("mem2")
        assert len(empty.view()) == 0 and empty.size() == 0


def test_table_funcrefs_for_indirect_calls(wat: Wat) -> None:
    with EngineStore() as store, EngineStore() as other:
        inst = instantiate(store, wat(MODULE), [])
        tab = inst.table("tab")
        assert tab.size() == 2 and tab.get(0) is None
        tab.set(0, inst.func("add"))
        tab.set(1, inst.func("sub"))
        indirect = inst.func("indirect")
        assert indirect.call_raw([0, 5, 3]) == [8]
        assert indirect.call_raw([1, 5, 3]) == [2]
        got = tab.get(1)
        assert got is not None and got.call_raw([9, 4]) == [5]
        tab.set(1, None)
        with pytest.raises(CoreTrap) as info:
            indirect.call_raw([1, 5, 3])
        assert info.value.code == "indirect_call_to_null"
        assert tab.grow(2, inst.func("add")) == 2 and tab.size() == 4
        assert indirect.call_raw([3, 1, 1]) == [2]
        with pytest.raises(CoreTrap, match="out of bounds"):
            tab.get(4)
        with pytest.raises(CoreTrap, match="out of bounds"):
            tab.set(10, None)
        foreign = instantiate(other, wat(MODULE), []).func("add")
        with pytest.raises(ValueError, match="another store"):
            tab.set(0, foreign)
        with pytest.raises(TypeError, match="CoreFunc or None"):
            tab.set(0, "add")  # type: ignore[arg-type]


def test_globals(wat: Wat) -> None:
    with EngineStore() as store:
        inst = instantiate(store, wat(MODULE), [])
        g32, g64, gf = inst.global_("g32"), inst.global_("g64"), inst.global_("gf")
        assert (g32.get(), g64.get(), gf.get()) == (7, 2**64 - 1, 1.5)
        assert (g32.valtype, g64.valtype, gf.valtype) == ("i32", "i64", "f64")
        g32.set(-1)
        assert g32.get() == 0xFFFF_FFFF
        g32.set(0x8000_0000)
        assert g32.get() == 0x8000_0000
        g64.set(2**63)
        assert g64.get() == 2**63
        gf.set(2)
        assert gf.get() == 2.0
        with pytest.raises(EngineError, match="cannot set global"):
            inst.global_("const").set(1)
        with pytest.raises(ValueError, match="does not fit"):
            g32.set(2**32)


def test_memory_use_after_close_is_refused(wat: Wat) -> None:
    store = EngineStore()
    inst = instantiate(store, wat(MODULE), [])
    mem, tab, glob = inst.memory("mem"), inst.table("tab"), inst.global_("g32")
    store.close()
    for op in (mem.view, mem.size, tab.size, glob.get, lambda: mem.read(0, 1)):
        with pytest.raises(StoreClosedError):
            op()


def test_host_created_memory_table_and_global(wat: Wat) -> None:
    from polyengine.engine import new_global, new_memory, new_table

    consumer = """(module
      (import "p" "m" (memory 1 2)) (import "p" "t" (table 2 funcref))
      (import "p" "g" (global $g (mut i64)))
      (type $t (func (param i32 i32) (result i32)))
      (func (export "go") (param i32) (result i32)
        (global.set $g (i64.add (global.get $g) (i64.const 1)))
        (call_indirect (type $t) (i32.load (i32.const 0)) (local.get 0) (i32.const 1))))"""
    with EngineStore() as store:
        provider = instantiate(store, wat(MODULE), [])
        mem = new_memory(store, 1, 2)
        tab = new_table(store, 2, None, provider.func("sub"))
        glob = new_global(store, "i64", -5)
        assert tab.get(0) is not None and glob.get() == 2**64 - 5
        tab.set(1, provider.func("add"))
        mem.write(0, (40).to_bytes(4, "little"))
        inst = instantiate(store, wat(consumer), [mem, tab, glob])
        assert inst.func("go").call_raw([2]) == [42]
        assert glob.get() == 2**64 - 4
        assert new_global(store, "f32", 1.5, mutable=False).get() == 1.5
        with pytest.raises(ValueError, match="bad memory limits"):
            new_memory(store, 3, 2)
        with pytest.raises(ValueError, match="unsupported global type"):
            new_global(store, "v128", 0)
        with pytest.raises(LinkError):
            instantiate(store, wat(consumer), [new_memory(store, 1), tab, glob])


def test_the_compiled_memory_size_agrees_with_wasmtime(wat: Wat) -> None:
    # The view's size check uses the compiled path's memory_size when it is built
    # (the ctypes call otherwise); both read wasmtime_memory_data_size.
    from polyengine.engine import _ffi as ffi
    from polyengine.engine import _memory
    from polyengine.engine._accelerator import ACCEL

    with EngineStore() as store:
        mem = instantiate(store, wat(MODULE), []).memory("mem")
        ctx = store._ctx()
        assert _memory._data_size(ctx, mem._addr) == ffi.memory_data_size(ctx, mem._addr)
        assert _memory._data_size(ctx, mem._addr) == mem.size() == 65536
        assert mem.grow(1) == 1
        assert _memory._data_size(ctx, mem._addr) == 2 * 65536 == len(mem.view())
        size = getattr(ACCEL, "memory_size", None)
        if size is None:
            assert _memory._data_size is ffi.memory_data_size
            return
        assert _memory._data_size is size
        with pytest.raises(ValueError, match="no store context"):
            size(0, mem._addr)
        with pytest.raises(TypeError):
            size(ctx)
