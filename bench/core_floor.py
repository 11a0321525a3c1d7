"""The floor of the guest<->host call path (architecture.md §5).

Prints the per-call cost of an ``add(i32, i32) -> i32`` export through
(a) wasmtime-py's ``Func.__call__``, (b) the raw unchecked C entry point
driven directly from ctypes (wasmtime-py's binding, and (b') an argtypes-free
prototype with prebuilt arguments, the cheapest), (c) ``CoreFunc.call_raw`` (the
same argtypes-free call over its own prebuilt arguments, plus ``struct`` packing
and the store checks); the cost of a
guest -> host -> guest round trip; and for the suspension seam the cost of
one park/resume cycle.  Run: ``.venv/bin/python bench/core_floor.py``.

Times are process CPU time (``time.process_time``), best of three runs, so
that other processes on a busy machine do not inflate them.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import wasmtime
from wasmtime import _ffi as wffi

from polyengine.engine import (
    CoreValue,
    EngineStore,
    compile_module,
    define_async_host_func,
    define_host_func,
    instantiate,
    start,
)

GUEST = """(module
  (import "h" "id" (func $id (param i32) (result i32)))
  (import "h" "wait" (func $wait (param i32) (result i32)))
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "host") (param i32) (result i32) local.get 0 call $id)
  (func (export "parks") (param i32) (result i32) (local i32)
    (loop $l
      (local.set 1 (i32.add (local.get 1) (call $wait (local.get 0))))
      (local.set 0 (i32.sub (local.get 0) (i32.const 1)))
      (br_if $l (local.get 0)))
    local.get 1)
)"""

N = int(os.environ.get("CORE_FLOOR_N", "200000"))


clock = time.process_time


def per_call(fn: Callable[[], object], n: int = N) -> float:
    """Best of three runs, in microseconds per call."""
    best = float("inf")
    for _ in range(3):
        t0 = clock()
        for _ in range(n):
            fn()
        best = min(best, (clock() - t0) / n)
    return best * 1e6


def wasmtime_py_paths() -> tuple[float, float, float, float]:
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    module = wasmtime.Module(engine, GUEST)
    ty = wasmtime.FuncType([wasmtime.ValType.i32()], [wasmtime.ValType.i32()])
    ident = wasmtime.Func(store, ty, lambda x: x)
    wait = wasmtime.Func(store, ty, lambda x: x)
    inst = wasmtime.Instance(store, module, [ident, wait])
    add = inst.exports(store)["add"]
    host = inst.exports(store)["host"]
    assert isinstance(add, wasmtime.Func) and isinstance(host, wasmtime.Func)
    normal = per_call(lambda: add(store, 1, 2), N // 4)
    host_rt = per_call(lambda: host(store, 1), N // 4)

    # The raw unchecked entry point on the package's own ctypes bindings.
    vals = (wffi.wasmtime_val_raw_t * 2)()
    trap = ctypes.POINTER(wffi.wasm_trap_t)()
    ctx = store._context()
    fref = ctypes.byref(add._func)
    tref = ctypes.byref(trap)
    call = wffi.wasmtime_func_call_unchecked

    def raw() -> int:
        vals[0].i32 = 1
        vals[1].i32 = 2
        err = call(ctx, fref, vals, 2, tref)
        if err or trap:
            raise RuntimeError("trap")
        return int(vals[0].i32)

    assert raw() == 3

    # The cheapest call ctypes makes of the same function (bench/boundary.py's raw
    # floor passes the same arguments one by one): no argtypes, arguments prebuilt
    # as ctypes objects in one tuple, the values written and read through a typed
    # view of the slots.
    p = ctypes.c_void_p
    fn = wffi.dll._FuncPtr(("wasmtime_func_call_unchecked", wffi.dll))
    fn.restype = p
    buf = (ctypes.c_ubyte * 32)()
    trap_cell = p(0)
    args = (
        p(ctypes.addressof(ctx.contents)),
        p(ctypes.addressof(add._func)),
        p(ctypes.addressof(buf)),
        ctypes.c_size_t(2),
        p(ctypes.addressof(trap_cell)),
    )
    slots = memoryview(buf).cast("B").cast("I")

    def untyped() -> int:
        slots[0] = 1
        slots[4] = 2
        if fn(*args) or trap_cell.value:
            raise RuntimeError("trap")
        result: int = slots[0]
        return result

    assert untyped() == 3
    return normal, per_call(raw), per_call(untyped), host_rt


class Ready:
    """A minimal pending result (the HostPending protocol) settled by hand."""

    __slots__ = ("callbacks", "value")

    def __init__(self) -> None:
        self.value: list[CoreValue] | None = None
        self.callbacks: list[Callable[[Any], object]] = []

    def done(self) -> bool:
        return self.value is not None

    def result(self) -> list[CoreValue]:
        assert self.value is not None
        return self.value

    def cancel(self) -> bool:
        return False

    def add_done_callback(self, fn: Callable[[Any], object]) -> None:
        self.callbacks.append(fn)

    def settle(self, value: list[CoreValue]) -> None:
        self.value = value
        for cb in self.callbacks:
            cb(self)


def main() -> None:
    normal, raw, untyped, py_host = wasmtime_py_paths()

    store = EngineStore()
    module = compile_module(wasmtime.wat2wasm(GUEST), "bench")
    ident = define_host_func(store, ["i32"], ["i32"], lambda a: a)
    inst = instantiate(store, module, [ident, ident])
    add, host = inst.func("add"), inst.func("host")
    assert add.call_raw([1, 2]) == [3]
    ours = per_call(lambda: add.call_raw((1, 2)))
    ours_host = per_call(lambda: host.call_raw((1,)))

    # The suspension seam: one call parking CYCLES times, settled by hand.
    astore = EngineStore()
    cur: list[Ready] = []

    def wait(args: Sequence[CoreValue]) -> Ready:
        r = Ready()
        cur.append(r)
        return r

    w = define_async_host_func(astore, ["i32"], ["i32"], wait)
    i2 = define_host_func(astore, ["i32"], ["i32"], lambda a: a)
    ainst = instantiate(astore, module, [i2, w])
    cycles = N // 4
    park = float("inf")
    for _ in range(3):
        call = start(ainst.func("parks"), [cycles])
        t0 = clock()
        while cur:
            cur.pop().settle([1])  # the done-callback polls the call
        park = min(park, (clock() - t0) / cycles * 1e6)
        assert call.result() == [cycles]
    # An async host function that returns at once (no park) inside a call.
    ready_call = per_call(lambda: ainst.func("host").call_raw((1,)), N // 4)
    # call_raw at the top of an async store (a fiber of its own per call) ...
    aadd = ainst.func("add")
    top_call = per_call(lambda: aadd.call_raw((1, 2)), N // 4)
    # ... and from a host function running on a fiber (in place).
    nested_times: list[float] = []
    k = N // 4

    def nested_host(args: Sequence[CoreValue]) -> list[CoreValue]:
        t = clock()
        for _ in range(k):
            aadd.call_raw((1, 2))
        nested_times.append((clock() - t) / k * 1e6)
        return [0]

    nstore_host = define_host_func(astore, ["i32"], ["i32"], nested_host)
    ninst = instantiate(astore, module, [nstore_host, w])
    for _ in range(3):
        start(ninst.func("host"), [0]).result()
    nested_call = min(nested_times)

    # The same cycle driven by asyncio futures and the event loop.
    async def with_asyncio() -> float:
        loop = asyncio.get_running_loop()
        pending: list[asyncio.Future[list[CoreValue]]] = []
        bstore = EngineStore()
        w2 = define_async_host_func(
            bstore, ["i32"], ["i32"], lambda a: pending.append(loop.create_future()) or pending[-1]
        )
        i3 = define_host_func(bstore, ["i32"], ["i32"], lambda a: a)
        binst = instantiate(bstore, module, [i3, w2])
        n = N // 10
        c = start(binst.func("parks"), [n])
        t = clock()
        while pending:
            pending.pop().set_result([1])
            await asyncio.sleep(0)
        assert c.result() == [n]
        bstore.close()
        return (clock() - t) / n * 1e6

    park_asyncio = asyncio.run(with_asyncio())

    from importlib.metadata import version

    print(f"python {sys.version.split()[0]}, wasmtime-py {version('wasmtime')}, N={N}, CPU time")
    print("export call add(i32, i32) -> i32:")
    print(f"  (a) wasmtime-py Func.__call__     {normal:8.3f} us")
    print(f"  (b) raw unchecked via ctypes      {raw:8.3f} us")
    print(f"  (b') argtypes-free, ctypes args   {untyped:8.3f} us  (as one prebuilt tuple)")
    print(f"  (c) CoreFunc.call_raw             {ours:8.3f} us")
    print(
        f"      ratios: a/c = {normal / ours:.2f}x, c/b = {ours / raw:.2f}x, "
        f"c/b' = {ours / untyped:.2f}x"
    )
    print("guest -> host -> guest round trip (identity host function):")
    print(f"      wasmtime-py Func host         {py_host:8.3f} us")
    print(f"      polyengine call_raw + host    {ours_host:8.3f} us")
    print(f"      ratio wasmtime-py / ours = {py_host / ours_host:.2f}x")
    print("suspension seam (async store):")
    print(f"      park + resume cycle           {park:8.3f} us  (settled by hand)")
    print(f"      park + resume via asyncio     {park_asyncio:8.3f} us  (future + loop turn)")
    print(f"      async host fn, ready at once  {ready_call:8.3f} us  (call_raw, no park)")
    print(f"      call_raw add, top level       {top_call:8.3f} us  (a call future each)")
    print(f"      call_raw add, nested on fiber {nested_call:8.3f} us  (in place)")
    print(f"      ratio park cycle / call_raw   {park / ours:.2f}x")
    store.close()
    astore.close()


if __name__ == "__main__":
    main()
