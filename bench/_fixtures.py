"""The hosts ``bench/boundary.py`` compares: the core module under wasmtime-py (and its
C-extension floor), wasmtime's component API, and polyengine (compiled and pure)."""

from __future__ import annotations

import asyncio
import ctypes
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import wasmtime
import wasmtime.component as wc
from wasmtime import _ffi as wffi

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench import _cfloor
    from bench import _components as guest
else:
    import _cfloor
    import _components as guest

import polyengine
from polyengine import engine
from polyengine.engine import _callpath
from polyengine.instance import ExportCall
from polyengine.sync import SyncInstance, instantiate_sync
from polyengine.translate import plan as pln

if TYPE_CHECKING:
    from bench._measure import Loop, run_async
else:
    from _measure import Loop, run_async



# -- fixtures ------------------------------------------------------------------------------


def identity(x: int) -> int:
    return x


class CoreFloor:
    """The core module on its own, driven by wasmtime-py."""

    def __init__(self) -> None:
        self.engine = wasmtime.Engine()
        self.store = wasmtime.Store(self.engine)
        module = wasmtime.Module(self.engine, guest.CORE_MODULE)
        ty = wasmtime.FuncType([wasmtime.ValType.i32()], [wasmtime.ValType.i32()])
        f = wasmtime.Func(self.store, ty, identity)
        self.instance = wasmtime.Instance(self.store, module, [f])
        exports = self.instance.exports(self.store)
        add, call_host, mem = exports["add"], exports["call-host"], exports["mem"]
        assert isinstance(add, wasmtime.Func) and isinstance(call_host, wasmtime.Func)
        assert isinstance(mem, wasmtime.Memory)
        self.add, self.call_host, self.mem = add, call_host, mem

    def view(self) -> memoryview:
        size = self.mem.data_len(self.store)
        base = ctypes.addressof(self.mem.data_ptr(self.store).contents)
        return memoryview((ctypes.c_ubyte * size).from_address(base)).cast("B")

    def unchecked_add(self) -> Callable[[], int]:
        """``add(1, 2)`` through ``wasmtime_func_call_unchecked`` with preallocated buffers."""
        vals = (wffi.wasmtime_val_raw_t * 2)()
        trap = ctypes.POINTER(wffi.wasm_trap_t)()
        ctx = self.store._context()
        fref = ctypes.byref(self.add._func)
        tref = ctypes.byref(trap)
        call = wffi.wasmtime_func_call_unchecked

        def raw() -> int:
            vals[0].i32 = 1
            vals[1].i32 = 2
            if call(ctx, fref, vals, 2, tref) or trap:
                raise RuntimeError("trap")
            return int(vals[0].i32)

        return raw

    def c_floor(self) -> Callable[[int, int], int] | None:
        """``add(a, b)`` from the C extension ``bench/c_floor.c`` (``None``: no compiler)."""
        module = _cfloor.load()
        if module is None:
            return None
        call = ctypes.cast(wffi.dll.wasmtime_func_call_unchecked, ctypes.c_void_p).value
        ctx = ctypes.addressof(self.store._context().contents)
        module.setup(call, ctx, ctypes.addressof(self.add._func))
        add: Callable[[int, int], int] = module.add
        return add

    def address_add(self, *, hold_gil: bool = False, as_tuple: bool = False) -> Callable[[], int]:
        """``add(1, 2)`` through the cheapest call ctypes can make of the same C function.

        A prototype of ``wasmtime_func_call_unchecked`` with no ``argtypes``,
        its arguments prebuilt as ctypes objects (ctypes passes them as they
        are: no conversion, no type check per call); the two ``i32`` slots of
        a preallocated ``wasmtime_val_raw_t`` buffer written, and the result
        read, through a typed ``memoryview`` of it. Like every other path
        measured here, the call releases the GIL while the guest runs;
        ``hold_gil`` keeps it instead (a ``PyDLL`` prototype), the reference
        row of what a store that stalls other threads for each call would save.
        ``as_tuple`` passes the five arguments as one prebuilt tuple
        (``fn(*args)``, as polyengine's engine does) instead of one by one: a
        reference row, a little cheaper than the floor (no tuple is built per call).
        """
        p = ctypes.c_void_p
        lib = ctypes.PyDLL(wffi.dll._name, handle=wffi.dll._handle) if hold_gil else wffi.dll
        fn = lib._FuncPtr(("wasmtime_func_call_unchecked", lib))
        fn.restype = p
        buf = (ctypes.c_ubyte * 32)()
        trap = p(0)
        ctx = p(ctypes.addressof(self.store._context().contents))
        faddr = p(ctypes.addressof(self.add._func))
        baddr = p(ctypes.addressof(buf))
        taddr = p(ctypes.addressof(trap))
        nargs = ctypes.c_size_t(2)
        slots = memoryview(buf).cast("B").cast("I")  # one val_raw slot is 4 items
        assert ctypes.sizeof(wffi.wasmtime_val_raw_t) == 16

        def raw() -> int:
            slots[0] = 1
            slots[4] = 2
            if fn(ctx, faddr, baddr, nargs, taddr) or trap.value:
                raise RuntimeError("trap")
            result: int = slots[0]
            return result

        args = (ctx, faddr, baddr, nargs, taddr)

        def raw_tuple() -> int:
            slots[0] = 1
            slots[4] = 2
            if fn(*args) or trap.value:
                raise RuntimeError("trap")
            result: int = slots[0]
            return result

        return raw_tuple if as_tuple else raw


class EngineFloor:
    """The core module on its own, driven by polyengine's engine layer."""

    def __init__(self) -> None:
        self.store = engine.EngineStore(suspend=False)
        module = engine.compile_module(wasmtime.wat2wasm(guest.CORE_MODULE), "bench core")
        f = engine.define_host_func(self.store, ["i32"], ["i32"], lambda a: a)
        inst = engine.instantiate(self.store, module, [f])
        self.add = inst.func("add")
        self.call_host = inst.func("call-host")


class Native:
    """The component on wasmtime-py's native component API."""

    def __init__(self, component: bytes) -> None:
        self.engine = wasmtime.Engine()
        self.store = wasmtime.Store(self.engine)
        linker = wc.Linker(self.engine)
        with linker.root() as root:
            root.add_func("f", lambda _store, x: x)
        self.instance = linker.instantiate(self.store, wc.Component(self.engine, component))

    def func(self, name: str) -> Callable[..., Any]:
        fn = self.instance.get_func(self.store, name)
        assert fn is not None, name
        store = self.store

        def call(*args: Any) -> Any:
            return fn(store, *args)

        return call


class Poly:
    """The component on polyengine: async instance, sync facade, and raw ExportCalls."""

    def __init__(self, component: bytes, *, pure: bool = False) -> None:
        """``pure``: every store of this instance takes the pure-Python call path."""
        self.loop = asyncio.new_event_loop()
        imports = {"f": identity}
        if pure:
            with _callpath.pure_stores():
                self.instance = self.loop.run_until_complete(
                    polyengine.instantiate(component, imports)
                )
                self.sync: SyncInstance = instantiate_sync(component, imports)
        else:
            self.instance = self.loop.run_until_complete(polyengine.instantiate(component, imports))
            self.sync = instantiate_sync(component, imports)
        self.exports: Any = self.instance.exports
        self.runtime: Any = self.instance._runtime
        self.component = component
        self._calls: dict[str, ExportCall] = {}

    def export_call(self, name: str) -> ExportCall:
        """The ``ExportCall`` behind export ``name`` (a fresh one over the same runtime)."""
        found = self._calls.get(name)
        if found is None:
            lift = next(
                e.item
                for e in self.runtime.plan.exports
                if e.name == name and isinstance(e.item, pln.Lift)
            )
            found = self._calls[name] = ExportCall(self.runtime, lift, name)
        return found

    def core_func(self, name: str) -> engine.CoreFunc:
        for inst in self.runtime.core_instances:
            found = inst.get(name)
            if isinstance(found, engine.CoreFunc):
                return found
        raise KeyError(name)

    def awaited(self, name: str, *args: Any) -> Loop:
        """``await exports.<name>(*args)`` n times inside one running loop."""
        fn = getattr(self.exports, name)

        async def body(n: int) -> None:
            for _ in range(n):
                await fn(*args)

        return run_async(self.loop, body)

    def facade(self, name: str, *args: Any) -> Loop:
        """``sync_instance.exports.<name>(*args)`` n times (the callable hoisted)."""
        fn = getattr(self.sync.exports, name)

        def body(n: int) -> None:
            for _ in range(n):
                fn(*args)

        return body

    def direct(self, name: str, *args: Any) -> Loop:
        """``ExportCall(args)`` n times: the export path without the coroutine."""
        call = self.export_call(name)

        def body(n: int) -> None:
            for _ in range(n):
                call(args)

        return body

    def close(self) -> None:
        self.instance.close()
        self.sync.instance.close()
        self.sync.close()
        self.loop.close()
