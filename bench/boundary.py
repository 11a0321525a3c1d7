"""The host/guest boundary, side by side: polyengine against wasmtime-py.

Runs in one process and prints one table per section:

1. a sync export ``add(u32, u32) -> u32``: the core ``add`` of the same
   module called by wasmtime-py (``Func.__call__``, and the unchecked C entry
   point driven from ctypes, the *raw floor*), wasmtime-py's native component
   ``Func``, and polyengine (``ExportCall`` directly, ``await
   inst.exports.add(...)`` per call, and the blocking facade);
2. a guest -> host import call (the guest loops N times over a host
   ``f(u32) -> u32``), per call;
3. bulk transfers each way: a 1 MiB ``list<u8>`` and a 100 KB string
   (UTF-8 and UTF-16), in GB/s.

Every figure is the median (and the fastest) of several timed repeats after
a warm-up; each repeat runs enough calls to last ``--min-time`` seconds, and
the repeats of the paths of one section are interleaved. A transfer's
"compiled no slower than pure" is judged on the median of back-to-back pairs
of shorter repeats (``paired_ratio``), not on two separate medians. ``--quick`` shrinks
everything to a smoke test. ``--profile`` adds a per-step breakdown of the
polyengine paths, measured prototypes of the optimization proposals in
``bench/README.md``, and cProfile/line_profiler listings.

Run from the repository root: ``.venv/bin/python bench/boundary.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import importlib.metadata
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import wasmtime
import wasmtime.component as wc
from wasmtime import _ffi as wffi

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench import _cfloor
    from bench import _components as guest
    from bench._wat import compile_component
else:
    import _cfloor
    import _components as guest
    from _wat import compile_component

import polyengine
from polyengine import engine
from polyengine.engine import _callpath
from polyengine.engine import _ffi as effi
from polyengine.instance import ExportCall
from polyengine.sync import SyncInstance, instantiate_sync
from polyengine.translate import plan as pln

Loop = Callable[[int], object]

#: targets from the performance brief (architecture.md §5)
TARGET_VS_FLOOR = 1.3
TARGET_VS_NATIVE = 10.0
TARGET_LIST_GBPS = 5.0
TARGET_STRING_GBPS = 2.0
#: targets of the compiled call path against the C-extension floor (bench/README.md)
TARGET_AWAITED_VS_C = 3.0
TARGET_FACADE_VS_C = 2.5
TARGET_IMPORT_NS = 300.0
TARGET_RECORD_NS = 1000.0

#: the acceptance lines of the compiled call path, printed together at the end
ACCEPTANCE: list[str] = []


def accept(  # noqa: PLR0917 - one table row
    label: str, pure: float, compiled: float, floor: str, target: str, ok: bool | None
) -> None:
    """One line of the closing pure / compiled / floor table."""
    ACCEPTANCE.append(
        f"{label:<44}{_fmt_time(pure):>12}{_fmt_time(compiled):>12}{floor:>12}"
        f"  {target:<30}{verdict(ok)}"
    )


# -- measurement ---------------------------------------------------------------------------


@dataclass
class Settings:
    """How long and how often to measure."""

    min_time: float  # seconds one timed repeat should last
    repeats: int
    quick: bool

    def scaled(self, factor: float) -> Settings:
        return Settings(self.min_time * factor, self.repeats, self.quick)


def _run(loop: Loop, n: int) -> int:
    """Nanoseconds ``loop(n)`` takes, with the cyclic GC off (as ``timeit`` does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        loop(n)
        return time.perf_counter_ns() - t0
    finally:
        if enabled:
            gc.enable()


def calibrate(loop: Loop, min_time: float) -> int:
    """How many calls make ``loop`` last about ``min_time`` seconds."""
    loop(1)  # the first call may pay for one-off set-up
    n = 1
    while True:
        t = _run(loop, n)
        if t >= min_time * 1e8 or n >= 10_000_000:
            return max(1, round(n * min_time * 1e9 / max(t, 1)))
        n *= 10


def per_call_ns(loop: Loop, s: Settings, n: int | None = None) -> float:
    """Median nanoseconds per call over ``s.repeats`` timed repeats, after a warm-up."""
    if n is None:
        n = calibrate(loop, s.min_time)
    loop(max(1, n // 10))  # warm-up
    return statistics.median(_run(loop, n) / n for _ in range(s.repeats))


@dataclass
class Case:
    """One path of a section, measured interleaved with the others."""

    label: str
    loop: Loop
    n: int = 0  # calls per timed repeat
    median: float = 0.0  # ns per call
    best: float = 0.0  # ns per call, fastest repeat


def measure(cases: Sequence[Case], s: Settings) -> list[float]:
    """Median ns per call of each case; the repeats are interleaved round-robin.

    Interleaving spreads any change of machine load evenly over the cases,
    so their ratios stay meaningful on a busy machine.
    """
    for c in cases:
        c.n = calibrate(c.loop, s.min_time)
        c.loop(max(1, c.n // 10))  # warm-up
    samples: list[list[float]] = [[] for _ in cases]
    for _ in range(s.repeats):
        for c, out in zip(cases, samples, strict=True):
            out.append(_run(c.loop, c.n) / c.n)
    for c, out in zip(cases, samples, strict=True):
        c.median, c.best = statistics.median(out), min(out)
    return [c.median for c in cases]


@dataclass
class Paired:
    """The time of one path over another's, from back-to-back pairs of repeats."""

    median: float
    low: float  # lower quartile
    high: float  # upper quartile
    pairs: int

    def describe(self) -> str:
        return (
            f"{self.median:.2f}x the time (median of {self.pairs} back-to-back pairs, "
            f"quartiles {self.low:.2f}-{self.high:.2f})"
        )


def paired_ratio(a: Loop, b: Loop, s: Settings) -> Paired:
    """``a``'s time over ``b``'s: the median of per-pair ratios, each pair run back to back.

    Each repeat lasts an eighth of ``s.min_time`` and the order alternates
    (a-b, then b-a), so a change of machine load or a drift (allocator,
    caches, clock) during the run reaches both sides of a pair alike; a real
    difference between the paths shows in every pair and moves the median.
    """
    n_a, n_b = calibrate(a, s.min_time / 8), calibrate(b, s.min_time / 8)
    a(max(1, n_a // 10))
    b(max(1, n_b // 10))
    pairs = max(8, 8 * s.repeats)
    ratios = []
    for k in range(pairs):
        if k % 2:
            tb = _run(b, n_b) / n_b
            ta = _run(a, n_a) / n_a
        else:
            ta = _run(a, n_a) / n_a
            tb = _run(b, n_b) / n_b
        ratios.append(ta / tb)
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    return Paired(q2, q1, q3, pairs)


def run_async(
    loop: asyncio.AbstractEventLoop, body: Callable[[int], Coroutine[Any, Any, None]]
) -> Loop:
    """A loop function that drives ``body(n)`` on ``loop`` (one loop turn per repeat)."""

    def run(n: int) -> None:
        loop.run_until_complete(body(n))

    return run


# -- the table -----------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    ns: float  # per call, median
    best: float | None = None  # per call, fastest repeat
    ref: float | None = None  # ns of the row this one is compared with
    nbytes: int | None = None  # payload per call, for GB/s


@dataclass
class Section:
    title: str
    rows: list[Row] = field(default_factory=list)
    ref_name: str = ""
    summary: list[str] = field(default_factory=list)


def _fmt_time(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:9.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:9.3f} us"
    return f"{ns:9.1f} ns"


def _fmt_rate(rate: float) -> str:
    return f"{rate:.3f}" if rate >= 0.01 else f"{rate:.1e}"


def gbps(nbytes: int, ns: float) -> float:
    return nbytes / ns if ns > 0 else float("inf")  # bytes per ns == GB/s


def render(section: Section) -> str:
    out = [f"== {section.title} =="]
    width = max(len(r.label) for r in section.rows) + 2
    rates = any(r.nbytes for r in section.rows)
    head = f"{'path':<{width}}{'median':>12}{'best':>12}"
    head += f"{'GB/s':>9}" if rates else ""
    out.append(head + f"{'ratio':>10}")
    for r in section.rows:
        line = f"{r.label:<{width}}{_fmt_time(r.ns):>12}"
        line += f"{_fmt_time(r.best):>12}" if r.best is not None else f"{'':12}"
        if rates:
            line += f"{_fmt_rate(gbps(r.nbytes, r.ns)):>9}" if r.nbytes else f"{'':9}"
        line += f" {r.ns / r.ref:8.2f}x" if r.ref else ""
        out.append(line.rstrip())
    if section.ref_name:
        out.append(f"(ratio = median / median of {section.ref_name}; below 1 is faster)")
    out.extend(section.summary)
    return "\n".join(out)


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


def repeat(fn: Callable[..., Any], *args: Any) -> Loop:
    def body(n: int) -> None:
        for _ in range(n):
            fn(*args)

    return body


# -- section 1: export call ----------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    if ok is None:
        return "unclear (load)"
    return "meets target" if ok else "MISSES target"


#: "no slower": the compiled path's time within 5% of the pure path's
NO_SLOWER = 1.05


def no_slower(p: Paired) -> bool | None:
    """Met when the median pair is within 5%; missed when three pairs in four are slower
    by more than that; else the pairs disagree (the load changed faster than a pair)."""
    if p.median <= NO_SLOWER:
        return True
    return False if p.low > NO_SLOWER else None


def section_export(  # noqa: PLR0917
    floor: CoreFloor, eng: EngineFloor, native: Native, poly: Poly, pure: Poly, s: Settings
) -> Section:
    c_add = floor.c_floor()
    raw, pkg = floor.address_add(), floor.unchecked_add()
    gil, tup = floor.address_add(hold_gil=True), floor.address_add(as_tuple=True)
    assert raw() == 3 and pkg() == 3 and gil() == 3 and tup() == 3
    assert floor.add(floor.store, 1, 2) == 3
    add_native = native.func("add")
    assert add_native(1, 2) == 3
    assert poly.export_call("add")((1, 2)) == 3
    assert poly.sync.exports.add(1, 2) == 3
    assert poly.core_func("add").call_raw((1, 2)) == [3]
    cases = [
        Case("core    ctypes unchecked call, address-typed (RAW FLOOR)", repeat(raw)),
        Case("core    the same call holding the GIL (reference only)", repeat(gil)),
        Case("core    the same call, args as one prebuilt tuple (reference)", repeat(tup)),
        Case("core    wasmtime-py's own unchecked binding", repeat(pkg)),
        Case("core    wasmtime-py Func.__call__", repeat(floor.add, floor.store, 1, 2)),
        Case("core    polyengine engine CoreFunc.call_raw", repeat(eng.add.call_raw, (1, 2))),
        Case("comp    wasmtime-py native component Func", repeat(add_native, 1, 2)),
        Case("comp    polyengine ExportCall (no coroutine)", poly.direct("add", 1, 2)),
        Case("comp    polyengine await inst.exports.add", poly.awaited("add", 1, 2)),
        Case("comp    polyengine sync facade exports.add", poly.facade("add", 1, 2)),
        Case("comp    polyengine ExportCall (no coroutine) [pure]", pure.direct("add", 1, 2)),
        Case("comp    polyengine await inst.exports.add [pure]", pure.awaited("add", 1, 2)),
        Case("comp    polyengine sync facade exports.add [pure]", pure.facade("add", 1, 2)),
    ]
    if c_add is not None:
        assert c_add(1, 2) == 3
        cases.insert(0, Case("core    C extension, bench/c_floor.c (C FLOOR)", repeat(c_add, 1, 2)))
    times = measure(cases, s)
    c_ns = times.pop(0) if c_add is not None else None
    floor_ns, _gil, tuple_ns, _pkg, public_ns, _eng, native_ns, direct_ns, awaited_ns = times[:9]
    facade_ns, _pure_direct, pure_awaited, pure_facade = times[9:]
    sec = Section("1. sync export add(u32, u32) -> u32", ref_name="the raw floor")
    sec.rows = [Row(c.label, c.median, c.best, floor_ns) for c in cases]
    if c_ns is None:
        sec.summary.append("C floor: not built (no C compiler); its ratios are not printed")
        accept("await exports.add(1, 2)", pure_awaited, awaited_ns, "n/a", "<= 3x C floor", False)
        accept("sync facade exports.add(1, 2)", pure_facade, facade_ns, "n/a", "<= 2.5x C floor",
               False)  # fmt: skip
    else:
        a_ratio, f_ratio = awaited_ns / c_ns, facade_ns / c_ns
        sec.summary += [
            "C floor = bench/c_floor.c: add(a, b) from a C extension through the same",
            "  wasmtime_func_call_unchecked (GIL released for the call, as on every path).",
            f"compiled / pure / C floor: await add {_fmt_time(awaited_ns).strip()} / "
            f"{_fmt_time(pure_awaited).strip()} / {_fmt_time(c_ns).strip()}: {a_ratio:.2f}x the "
            f"C floor (target <= {TARGET_AWAITED_VS_C}x: "
            f"{verdict(a_ratio <= TARGET_AWAITED_VS_C)})",
            f"compiled / pure / C floor: facade add {_fmt_time(facade_ns).strip()} / "
            f"{_fmt_time(pure_facade).strip()} / {_fmt_time(c_ns).strip()}: {f_ratio:.2f}x the "
            f"C floor (target <= {TARGET_FACADE_VS_C}x: "
            f"{verdict(f_ratio <= TARGET_FACADE_VS_C)})",
        ]
        floor_text = _fmt_time(c_ns)
        a_ok, f_ok = a_ratio <= TARGET_AWAITED_VS_C, f_ratio <= TARGET_FACADE_VS_C
        a_target = f"<= {TARGET_AWAITED_VS_C}x C floor ({a_ratio:.2f}x)"
        f_target = f"<= {TARGET_FACADE_VS_C}x C floor ({f_ratio:.2f}x)"
        accept("await exports.add(1, 2)", pure_awaited, awaited_ns, floor_text, a_target, a_ok)
        accept("sync facade exports.add(1, 2)", pure_facade, facade_ns, floor_text, f_target, f_ok)
    vs_floor = awaited_ns / floor_ns
    speedup = native_ns / awaited_ns
    sec.summary += [
        "raw floor = wasmtime_func_call_unchecked of wasmtime-py's libwasmtime over a ctypes",
        "  prototype without argtypes, its five arguments prebuilt ctypes objects passed one by",
        "  one, the values written and read through a typed memoryview of a preallocated",
        "  wasmtime_val_raw_t buffer, no type checks; the GIL is released for the call as on",
        "  every other path. Reference rows: the same call holding the GIL (stalling other",
        "  threads), and with the arguments as one prebuilt tuple, fn(*args), as polyengine does.",
        f"polyengine (awaited) vs raw floor:        {vs_floor:6.2f}x  "
        f"(target <= {TARGET_VS_FLOOR}x: {verdict(vs_floor <= TARGET_VS_FLOOR)})",
        f"polyengine (awaited) vs tuple-args row:   {awaited_ns / tuple_ns:6.2f}x",
        f"polyengine (awaited) vs Func.__call__:    {awaited_ns / public_ns:6.2f}x",
        f"polyengine (ExportCall) vs raw floor:     {direct_ns / floor_ns:6.2f}x",
        f"native component / polyengine (awaited): {speedup:6.2f}x faster "
        f"(target >= {TARGET_VS_NATIVE}x: {verdict(speedup >= TARGET_VS_NATIVE)})",
    ]
    return sec


# -- section 2: host import ----------------------------------------------------------------


def section_import(  # noqa: PLR0917
    floor: CoreFloor, eng: EngineFloor, native: Native, poly: Poly, pure: Poly, s: Settings
) -> Section:
    expected = 10 * 11 // 2
    ch_native = native.func("call-host")
    ch_export = poly.export_call("call-host")
    ch_pure = pure.export_call("call-host")
    assert ch_pure((10,)) == expected
    assert floor.call_host(floor.store, 10) == expected
    assert eng.call_host.call_raw((10,)) == [expected]
    assert ch_native(10) == expected
    assert ch_export((10,)) == expected
    # One call of call-host(n) makes n host calls: the loop function is the export itself.
    cases = [
        Case("core    wasmtime-py Func host function", lambda n: floor.call_host(floor.store, n)),
        Case("core    polyengine engine define_host_func", lambda n: eng.call_host.call_raw((n,))),
        Case("comp    wasmtime-py native component linker func", ch_native),
        Case("comp    polyengine host import", lambda n: ch_export((n,))),
        Case("comp    polyengine host import [pure]", lambda n: ch_pure((n,))),
    ]
    measure(cases, s)
    # Take off the cost of the one export call around the n host calls.
    base = [
        repeat(floor.call_host, floor.store, 0),
        repeat(eng.call_host.call_raw, (0,)),
        repeat(ch_native, 0),
        repeat(ch_export, (0,)),
        repeat(ch_pure, (0,)),
    ]
    for case, loop in zip(cases, base, strict=True):
        outer = per_call_ns(loop, s.scaled(0.25)) / case.n
        case.median, case.best = case.median - outer, case.best - outer
    sec = Section(
        "2. guest -> host import f(u32) -> u32, per call (guest loops N times)",
        ref_name="wasmtime-py core Func host function",
    )
    sec.rows = [Row(c.label, c.median, c.best, cases[0].median) for c in cases]
    sec.summary.append(
        "per call = (T(call-host(N)) - T(call-host(0))) / N; the host function is the identity."
    )
    compiled_ns, pure_ns = cases[3].median, cases[4].median
    sec.summary.append(
        f"compiled / pure: {_fmt_time(compiled_ns).strip()} / {_fmt_time(pure_ns).strip()} "
        f"(target <= {TARGET_IMPORT_NS:.0f} ns: {verdict(compiled_ns <= TARGET_IMPORT_NS)})"
    )
    target = f"<= {TARGET_IMPORT_NS:.0f} ns"
    ok = compiled_ns <= TARGET_IMPORT_NS
    accept("guest -> host import f(u32) -> u32", pure_ns, compiled_ns, "", target, ok)
    return sec


# -- section 3: bulk transfers -------------------------------------------------------------


@dataclass
class Transfer:
    label: str
    export: str  # component export (snake_case)
    arg: Any  # the parameter: the payload (host -> guest) or its length (guest -> host)
    nbytes: int  # payload bytes as they sit in guest memory
    floor: Loop  # the same bytes moved without any call
    target: float
    expect: Any  # the export's result


def transfers(floor: CoreFloor) -> list[Transfer]:
    mv = floor.view()
    n_list, n_str = guest.LIST_BYTES, guest.STRING_CHARS
    data = bytes(range(256)) * (n_list // 256)
    text = ("abcdefghij" * (n_str // 10 + 1))[:n_str]
    heap, src8, src16 = guest.HEAP, guest.SRC8, guest.SRC16

    def copy_in(encode: Callable[[], bytes]) -> Loop:
        def body(n: int) -> None:
            for _ in range(n):
                b = encode()
                mv[heap : heap + len(b)] = b

        return body

    def bytes_in() -> bytes:
        return data

    def copy_out(decode: Callable[[memoryview], object], start: int, size: int) -> Loop:
        def body(n: int) -> None:
            for _ in range(n):
                decode(mv[start : start + size])

        return body

    def utf8(m: memoryview) -> str:
        return str(m, "utf-8")

    def utf16(m: memoryview) -> str:
        return str(m, "utf-16-le")

    lst, st = TARGET_LIST_GBPS, TARGET_STRING_GBPS
    a8, a16 = "a" * n_str, "a" * n_str
    return [
        Transfer("list<u8> 1 MiB  host->guest", "take_bytes", data, n_list, copy_in(bytes_in),
                 lst, n_list),
        Transfer("list<u8> 1 MiB  guest->host", "give_bytes", n_list, n_list,
                 copy_out(bytes, src8, n_list), lst, b"a" * n_list),
        Transfer("string utf8 100 KB  host->guest", "take_string", text, n_str,
                 copy_in(text.encode), st, n_str),
        Transfer("string utf8 100 KB  guest->host", "give_string", n_str, n_str,
                 copy_out(utf8, src8, n_str), st, a8),
        Transfer("string utf16 100 KB host->guest", "take_string16", text, 2 * n_str,
                 copy_in(lambda: text.encode("utf-16-le")), st, n_str),
        Transfer("string utf16 100 KB guest->host", "give_string16", n_str, 2 * n_str,
                 copy_out(utf16, src16, 2 * n_str), st, a16),
    ]  # fmt: skip


def section_record(poly: Poly, pure: Poly, s: Settings) -> Section:
    """``echo-record({x: s32, y: s32, label: option<string>})``: lowered, echoed, lifted."""
    value = {"x": 1, "y": -2, "label": "a label"}
    assert poly.export_call("echo-record")((value,)) == value
    assert pure.export_call("echo-record")((value,)) == value
    cases = [
        Case("comp    polyengine ExportCall (no coroutine)", poly.direct("echo-record", value)),
        Case("comp    polyengine await inst.exports", poly.awaited("echo_record", value)),
        Case("comp    polyengine ExportCall (no coroutine) [pure]",
             pure.direct("echo-record", value)),
        Case("comp    polyengine await inst.exports [pure]", pure.awaited("echo_record", value)),
    ]  # fmt: skip
    times = measure(cases, s)
    sec = Section(
        "4. echo-record({x: s32, y: s32, label: option<string>}) round trip",
        ref_name="await inst.exports [pure]",
    )
    sec.rows = [Row(c.label, c.median, c.best, times[3]) for c in cases]
    ok = times[1] <= TARGET_RECORD_NS
    sec.summary.append(
        f"compiled / pure: {_fmt_time(times[1]).strip()} / {_fmt_time(times[3]).strip()} "
        f"(target <= {TARGET_RECORD_NS / 1e3:.0f} us: {verdict(ok)})"
    )
    accept("echo-record round trip (awaited)", times[3], times[1], "",
           f"<= {TARGET_RECORD_NS / 1e3:.0f} us", ok)  # fmt: skip
    return sec


def section_bulk(floor: CoreFloor, native: Native, poly: Poly, pure: Poly, s: Settings
                 ) -> list[Section]:  # fmt: skip
    out = []
    for t in transfers(floor):
        wit = t.export.replace("_", "-")
        direct = poly.export_call(wit)
        assert direct((t.arg,)) == t.expect, t.label
        assert getattr(poly.sync.exports, t.export)(t.arg) == t.expect, t.label
        cases = [
            Case("copy floor: encode/decode + memmove, no call", t.floor),
            Case("comp    polyengine ExportCall (no coroutine)", repeat(direct, (t.arg,))),
            Case("comp    polyengine await inst.exports", poly.awaited(t.export, t.arg)),
            Case("comp    polyengine await inst.exports [pure]", pure.awaited(t.export, t.arg)),
        ]
        floor_ns, _direct, poly_ns, pure_ns = measure(cases, s)
        sec = Section(f"3. {t.label} ({t.nbytes} bytes in guest memory)", ref_name="the copy floor")
        sec.rows = [Row(c.label, c.median, c.best, floor_ns, t.nbytes) for c in cases]
        # The native API converts list<u8> element by element (about a second per MiB):
        # it is measured on a smaller payload, one call per repeat.
        native_fn = native.func(wit)
        arg, nbytes, label = t.arg, t.nbytes, "comp    wasmtime-py native component Func"
        n = None
        if t.export.endswith("bytes"):
            small = 16 << 10 if s.quick else 256 << 10
            arg = arg[:small] if isinstance(arg, bytes) else small
            nbytes, label, n = small, f"{label} ({small >> 10} KiB)", 1
        nat = Case(label, repeat(native_fn, arg))
        nat.median = per_call_ns(nat.loop, s.scaled(0.2), n=n)
        sec.rows.insert(1, Row(label, nat.median, None, floor_ns * nbytes / t.nbytes, nbytes))
        rate = gbps(t.nbytes, poly_ns)
        sec.summary.append(
            f"polyengine (awaited): {rate:.2f} GB/s "
            f"(target >= {t.target} GB/s: {verdict(rate >= t.target)})"
        )
        # "no slower": judged on paired repeats (no_slower); a ratio of two
        # separate medians swings by more than 5% on a shared machine
        paired = paired_ratio(cases[2].loop, cases[3].loop, s)
        ok = no_slower(paired)
        sec.summary.append(
            f"compiled / pure: {paired.describe()} (target: no slower: {verdict(ok)})"
        )
        sec.summary.append(f"  (the two medians above: {poly_ns / pure_ns:.2f}x)")
        spread = f"{paired.low:.2f}-{paired.high:.2f}"
        accept(t.label, pure_ns, poly_ns, _fmt_time(floor_ns),
               f"no slower ({paired.median:.2f}x, {spread})", ok)  # fmt: skip
        out.append(sec)
    return out


# -- profile -------------------------------------------------------------------------------


def _step_costs(
    steps: Sequence[tuple[str, Callable[[], object]]], totals: Sequence[Loop], s: Settings
) -> tuple[list[tuple[str, float]], list[float]]:
    """Nanoseconds of each zero-argument step (less an empty lambda call) and of each total.

    Steps, totals and the empty lambda are measured in one interleaved run, so
    the parts and the whole see the same machine load; each figure is the
    fastest repeat (sub-microsecond steps drown in a busy machine's noise).
    """
    cases = [Case("", repeat(lambda: None))]
    cases += [Case(label, repeat(fn)) for label, fn in steps]
    cases += [Case("", loop) for loop in totals]
    measure(cases, s)
    ns = [c.best for c in cases]
    base, parts = ns[0], ns[1 : 1 + len(steps)]
    costs = [(label, max(t - base, 0.0)) for (label, _), t in zip(steps, parts, strict=True)]
    return costs, ns[1 + len(steps) :]


def _print_steps(title: str, total: float, costs: list[tuple[str, float]]) -> None:
    print(f"-- {title}: {_fmt_time(total).strip()} per call (fastest repeat) --")
    for label, ns in costs:
        print(f"  {label:<58}{_fmt_time(ns):>12}  {100 * ns / total:5.1f}%")
    rest = total - sum(ns for _, ns in costs)
    label = "(rest: frames, try/finally, attribute loads)"
    print(f"  {label:<58}{_fmt_time(rest):>12}  {100 * rest / total:5.1f}%")


def breakdown_export(poly: Poly, s: Settings) -> None:
    """Each step of ``ExportCall.__call__`` for ``add(1, 2)``, timed on its own."""
    from polyengine.abi.options import LiftLowerContext
    from polyengine.abi.resources import CallBorrows

    call = poly.export_call("add")
    assert call((1, 2)) == 3
    ro, lifted, callee = call._options, call._lifted, call._callee
    assert ro is not None and lifted is not None and callee is not None
    rt, rec, ci = poly.runtime, ro.record, ro.record.ci
    args = (1, 2)
    borrows = CallBorrows()
    cx = LiftLowerContext(ro.opts, ci, borrows)
    flat = lifted.lower_params(cx, args)
    results = callee.call_raw(flat)
    c: Any = callee
    ffi_call, call_args = effi.func_call_unchecked_untyped, c._call_args
    ps, rs, buf = c._params_struct, c._results_struct, c._buf

    def toggle() -> None:
        ci.may_enter = False
        ci.may_enter = True

    steps: list[tuple[str, Callable[[], object]]] = [
        ("rt.check_enter(rec, name)", lambda: rt.check_enter(rec, "add")),
        ("ci.may_enter = False ... = True", toggle),
        ("CallBorrows()", CallBorrows),
        (
            "LiftLowerContext(ro.opts, ci, borrows)  [memory.view()]",
            lambda: LiftLowerContext(ro.opts, ci, borrows),
        ),
        ("lifted.lower_params(cx, args)", lambda: lifted.lower_params(cx, args)),
        ("callee.call_raw(flat)  (all of it)", lambda: callee.call_raw(flat)),
        ("borrows.exit()", borrows.exit),
        ("cx.refresh()  [memory.view()]", cx.refresh),
        ("lifted.lift_results(cx, results)", lambda: lifted.lift_results(cx, results)),
    ]
    inner_steps: list[tuple[str, Callable[[], object]]] = [
        ("struct pack_into(buf, 0, *args)", lambda: ps.pack_into(buf, 0, *flat)),
        (
            "untyped func_call_unchecked(*call_args) (ctypes + wasm)",
            lambda: ffi_call(*call_args),
        ),
        ("list(results_struct.unpack_from(buf))", lambda: list(rs.unpack_from(buf))),
    ]
    totals = [poly.direct("add", 1, 2), poly.awaited("add", 1, 2), poly.facade("add", 1, 2)]
    all_costs, (total, awaited, facade) = _step_costs(steps + inner_steps, totals, s)
    costs, inner = all_costs[: len(steps)], all_costs[len(steps) :]
    _print_steps("ExportCall.__call__ for add(1, 2)", total, costs)
    call_raw = dict(costs)["callee.call_raw(flat)  (all of it)"]
    _print_steps("  inside CoreFunc.call_raw", call_raw, inner)
    coro, sync_layer = _fmt_time(awaited - total), _fmt_time(facade - awaited)
    print(f"  {'coroutine layer (await exports.add - ExportCall)':<58}{coro:>12}")
    print(f"  {'sync facade layer (facade - await exports.add)':<58}{sync_layer:>12}")


def breakdown_import(poly: Poly, eng: EngineFloor, s: Settings) -> None:
    """Each step of the host-import trampoline body for ``f(u32) -> u32``, timed on its own."""
    from polyengine.abi.functions import LoweredFunc
    from polyengine.abi.options import LiftLowerContext
    from polyengine.abi.resources import CallLenders

    rt = poly.runtime
    tr = next(t for t in rt.plan.trampolines if isinstance(t, pln.LowerImport))
    ro = rt.resolve_options(tr.options, host_side=True)
    lowered = LoweredFunc.compile(ro.compiler, tr.type)
    ci = ro.record.ci
    table = poly.instance._runtime.host_resources
    flat = (7,)
    lenders = CallLenders()
    cx = LiftLowerContext(ro.opts, ci, lenders)
    args = lowered.lift_params(cx, list(flat))
    import inspect

    ch = poly.export_call("call-host")

    def begin_end() -> None:
        table.end_call(table.begin_call())

    def deliver() -> None:
        CallLenders().deliver_resolve()

    steps: list[tuple[str, Callable[[], object]]] = [
        ("engine trampoline + ctypes callback (define_host_func floor)", lambda: None),
        ("CallLenders() + deliver_resolve()", deliver),
        (
            "LiftLowerContext(ro.opts, ci, lenders)  [memory.view()]",
            lambda: LiftLowerContext(ro.opts, ci, lenders),
        ),
        ("list(flat) (twice per call)", lambda: list(flat)),
        ("host_resources.begin_call() + end_call()", begin_end),
        ("lowered.lift_params(cx, list(flat))", lambda: lowered.lift_params(cx, list(flat))),
        ("fn(*args) + inspect.isawaitable(value)", lambda: inspect.isawaitable(identity(*args))),
        ("cx.refresh()  [memory.view()]", cx.refresh),
        (
            "lowered.lower_results(cx, value, list(flat))",
            lambda: lowered.lower_results(cx, 7, list(flat)),
        ),
    ]
    totals: list[Loop] = [lambda n: ch((n,)), lambda n: eng.call_host.call_raw((n,))]
    costs, (total, floor) = _step_costs(steps, totals, s)
    costs[0] = (costs[0][0], floor)
    _print_steps("host import f(u32) -> u32, per guest call", total, costs)


def cprofile_paths(poly: Poly, s: Settings, top: int = 14) -> None:
    """cProfile listings (by own time) of the polyengine paths."""
    import cProfile
    import pstats

    n_small = 200 if s.quick else 20_000
    n_bulk = 5 if s.quick else 300
    ch = poly.export_call("call-host")
    cases: list[tuple[str, Loop, int]] = [
        ("await exports.add(1, 2)", poly.awaited("add", 1, 2), n_small),
        ("sync facade exports.add(1, 2)", poly.facade("add", 1, 2), n_small // 4),
        ("host import f via call-host(n)", lambda n: ch((n,)), n_small),
        (
            "await exports.take_bytes(1 MiB)",
            poly.awaited("take_bytes", bytes(guest.LIST_BYTES)),
            n_bulk,
        ),
        ("await exports.give_bytes(1 MiB)", poly.awaited("give_bytes", guest.LIST_BYTES), n_bulk),
        (
            "await exports.take_string(100 KB)",
            poly.awaited("take_string", "a" * guest.STRING_CHARS),
            n_bulk,
        ),
        (
            "await exports.give_string16(100 KB)",
            poly.awaited("give_string16", guest.STRING_CHARS),
            n_bulk,
        ),
    ]
    for label, loop, n in cases:
        loop(max(1, n // 10))
        prof = cProfile.Profile()
        prof.enable()
        loop(n)
        prof.disable()
        raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
        raw = pstats.Stats(prof).stats  # type: ignore[attr-defined]
        rows = sorted(raw.items(), key=lambda kv: -kv[1][2])[:top]
        print(f"-- cProfile: {label}, {n} calls; per path call, by own time (top {top}) --")
        print(f"  {'own':>10} {'cumulative':>11} {'calls':>6}  function")
        for (file, line, func), (_cc, nc, tt, ct, _callers) in rows:
            where = file.replace(str(Path(polyengine.__file__).parent), "polyengine")
            where = where.replace(str(Path(asyncio.__file__).parent), "asyncio")
            name = func if file == "~" else f"{where}:{line}({func})"
            own, cum = _fmt_time(tt / n * 1e9), _fmt_time(ct / n * 1e9)
            print(f"  {own:>10} {cum:>11} {nc / n:6.2f}  {name}")


def line_profile_paths(poly: Poly, s: Settings) -> None:
    """line_profiler listings: ExportCall.__call__, CoreFunc.call_raw, the host trampoline body."""
    try:
        from line_profiler import LineProfiler
    except ImportError:
        print("-- line_profiler is not installed (pip install line_profiler); skipped --")
        return
    import io
    import types

    bodies = [
        o
        for o in gc.get_objects()
        if isinstance(o, types.FunctionType)
        and o.__code__.co_name == "body"
        and o.__code__.co_filename.endswith("_host.py")
    ]
    lp = LineProfiler()
    lp.add_function(ExportCall.__call__)
    lp.add_function(engine.CoreFunc.call_raw)
    for b in bodies[:1]:
        lp.add_function(b)
    n = 200 if s.quick else 20_000
    direct = poly.direct("add", 1, 2)
    ch = poly.export_call("call-host")
    lp.enable_by_count()
    direct(n)
    ch((n,))
    lp.disable_by_count()
    out = io.StringIO()
    lp.print_stats(stream=out, stripzeros=True)
    print(f"-- line_profiler: ExportCall add x{n}, call-host({n}) --")
    for ln in out.getvalue().splitlines():
        if ln.strip():
            print("  " + ln.replace(str(Path(polyengine.__file__).parent), "polyengine"))


def prototypes(poly: Poly, floor: CoreFloor, native_add: Callable[..., Any], s: Settings) -> None:
    """Hand-written versions of what the optimization proposals would compile, measured.

    Each prototype keeps the checks the real path makes (instance entry, value
    ranges, traps); none of them is used by polyengine itself.
    """
    from polyengine.abi.resources import CallBorrows
    from polyengine.abi.trap import TrapCode, trap_if

    rows: list[tuple[str, Loop, Loop]] = []
    call = poly.export_call("add")
    assert call((1, 2)) == 3
    ro, callee = call._options, call._callee
    assert ro is not None and callee is not None
    ci = ro.record.ci

    # P4: CallBorrows.exit with the message built only when it traps.
    borrows = CallBorrows()

    def exit_lazy() -> None:
        if borrows.num_borrows > 0:
            trap_if(True, TrapCode.BORROWS_OUTSTANDING, f"{borrows.num_borrows} outstanding")

    rows.append(
        (
            "P4 CallBorrows.exit: f-string only on the trap path",
            repeat(borrows.exit),
            repeat(exit_lazy),
        )
    )

    # P6: LiftLowerContext.refresh without contextlib.suppress, skipped without a memory.
    from polyengine.abi.options import LiftLowerContext

    cx = LiftLowerContext(ro.opts, ci, None)
    opts = ro.opts

    def refresh_guarded() -> None:
        if opts.memory is not None:
            try:  # noqa: SIM105 - suppress() costs ~0.8 us on this hot path
                del cx.mv
            except AttributeError:
                pass

    rows.append(
        (
            "P6 LiftLowerContext.refresh: no suppress(), no memory",
            repeat(cx.refresh),
            repeat(refresh_guarded),
        )
    )

    # P7: the host result's awaitable test, with a cheap type test first.
    from polyengine.instance._hostlower import _settle

    plain = frozenset({int, float, bool, str, bytes, type(None), list, tuple, dict})

    def settle_precheck(value: Any) -> Any:
        if type(value) in plain:
            return value
        return _settle(value, "f", False)

    rows.append(
        (
            "P7 _settle: plain-type test before inspect.isawaitable",
            repeat(lambda: _settle(identity(7), "f", False)),
            repeat(lambda: settle_precheck(identity(7))),
        )
    )

    # P8: the generated value codecs called directly, without the two frames above them.
    lifted = call._lifted
    assert lifted is not None
    lower_direct = getattr(lifted.params, "_lower_direct", None)
    lift_direct = getattr(lifted.results, "_lift_direct", None)
    if lower_direct is not None and lift_direct is not None:
        cx8 = LiftLowerContext(ro.opts, ci, None)
        flat8 = lifted.lower_params(cx8, (1, 2))
        res8 = callee.call_raw(flat8)

        def both_now() -> None:
            lifted.lower_params(cx8, (1, 2))
            lifted.lift_results(cx8, res8)

        def both_direct() -> None:
            lower_direct(cx8, (1, 2))
            lift_direct(cx8, res8, 0)[0]

        rows.append(
            (
                "P8 lower_params + lift_results: bind the generated codecs",
                repeat(both_now),
                repeat(both_direct),
            )
        )

    # P5: a scalar-only host import compiled to one closure, on the engine's trampoline.
    store = engine.EngineStore(suspend=False)
    try:
        module = engine.compile_module(wasmtime.wat2wasm(guest.CORE_MODULE), "bench proto")
        host_fn = identity

        def fast_host(flat: Sequence[int | float]) -> list[int | float]:
            if not ci.may_leave:
                raise RuntimeError("may not leave")
            value = host_fn(int(flat[0]) & 0xFFFFFFFF)
            if type(value) is not int or not 0 <= value <= 0xFFFFFFFF:
                raise TypeError("f must return a u32")
            return [value]

        f = engine.define_host_func(store, ["i32"], ["i32"], fast_host)
        proto_call = engine.instantiate(store, module, [f]).func("call-host")
        ch = poly.export_call("call-host")
        rows.append(
            (
                "P5 host import -> compiled scalar trampoline body",
                lambda n: ch((n,)),
                lambda n: proto_call.call_raw((n,)),
            )
        )
        raw = repeat(floor.address_add())
        results: list[tuple[str, float, float, float]] = []
        for label, a, b in rows:
            trio = [Case("", a), Case("", b), Case("", raw)]
            measure(trio, s)
            results.append((label, trio[0].best, trio[1].best, trio[2].best))
        # The native component path against the awaited export.
        native_case = Case("", repeat(native_add, 1, 2))
        awaited_case = Case("", poly.awaited("add", 1, 2))
        measure([native_case, awaited_case], s)
    finally:
        store.close()

    print("-- prototypes of the proposals (current -> prototype; interleaved, fastest repeat) --")
    for label, now, new, raw_floor in results:
        gain = now - new
        print(
            f"  {label:<58}{_fmt_time(now):>12} ->{_fmt_time(new):>12}"
            f"  saves {_fmt_time(gain).strip()} ({100 * gain / now:4.1f}%);"
            f" raw floor {_fmt_time(raw_floor).strip()}: {now / raw_floor:.2f}x -> "
            f"{new / raw_floor:.2f}x"
        )
    speedup = native_case.best / awaited_case.best
    print(
        f"  native component Func {_fmt_time(native_case.best).strip()} / await exports.add "
        f"{_fmt_time(awaited_case.best).strip()}: {speedup:.1f}x faster"
    )


def profile_all(
    poly: Poly, eng: EngineFloor, floor: CoreFloor, native: Native, s: Settings
) -> None:
    """The profile; a part that reaches into internals that have changed says so and is skipped."""
    print()
    print("== profile of the polyengine paths ==")
    parts: list[tuple[str, Callable[[], None]]] = [
        ("breakdown of the export call", lambda: breakdown_export(poly, s)),
        ("breakdown of the host import", lambda: breakdown_import(poly, eng, s)),
        ("prototypes", lambda: prototypes(poly, floor, native.func("add"), s)),
        ("cProfile", lambda: cprofile_paths(poly, s)),
        ("line_profiler", lambda: line_profile_paths(poly, s)),
    ]
    for name, part in parts:
        try:
            part()
        except (AttributeError, TypeError, KeyError, ValueError, StopIteration) as exc:
            print(f"-- {name}: skipped, polyengine internals changed ({type(exc).__name__}: {exc})")
        print()


# -- main ----------------------------------------------------------------------------------

#: the sections ``--only`` selects
SECTIONS = ("export", "import", "bulk", "record")


def render_acceptance() -> str:
    """The compiled call path's acceptance rows, pure / compiled / floor side by side."""
    head = f"{'':<44}{'pure':>12}{'compiled':>12}{'floor':>12}  target"
    return "\n".join(
        [
            "== compiled call path: pure / compiled / floor (medians, one process) ==",
            head,
            *ACCEPTANCE,
        ]
    )


def header(s: Settings) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    wasmtime_version = importlib.metadata.version("wasmtime")
    mode = "quick" if s.quick else "full"
    return (
        f"polyengine boundary benchmark, {now}\n"
        f"python {platform.python_version()}, wasmtime-py {wasmtime_version}, "
        f"{cpu}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}\n"
        f"{mode} run: median of {s.repeats} repeats of about {s.min_time * 1e3:.0f} ms each\n"
        f"call path: {engine.call_path()} (rows marked [pure] use the pure path)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny iteration counts (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per figure")
    parser.add_argument("--min-time", type=float, default=None, help="seconds per timed repeat")
    parser.add_argument("--profile", action="store_true", help="profile the polyengine paths too")
    parser.add_argument(
        "--only",
        action="append",
        choices=SECTIONS,
        help="run only this section (repeatable; default: all of them)",
    )
    parser.add_argument(
        "--profile-only", action="store_true", help="only the profile (implies --profile)"
    )
    args = parser.parse_args(argv)
    s = Settings(
        args.min_time if args.min_time is not None else (0.002 if args.quick else 0.1),
        args.repeats if args.repeats is not None else (3 if args.quick else 11),
        args.quick,
    )
    component = compile_component(guest.COMPONENT)
    floor, eng, native, poly = CoreFloor(), EngineFloor(), Native(component), Poly(component)
    pure = Poly(component, pure=True)
    try:
        print(header(s))
        only = set(args.only or SECTIONS)
        if not args.profile_only:
            if "export" in only:
                print()
                print(render(section_export(floor, eng, native, poly, pure, s)))
            if "import" in only:
                print()
                print(render(section_import(floor, eng, native, poly, pure, s)))
            for sec in section_bulk(floor, native, poly, pure, s) if "bulk" in only else []:
                print()
                print(render(sec))
            if "record" in only:
                print()
                print(render(section_record(poly, pure, s)))
            print()
            print(render_acceptance())
        if args.profile or args.profile_only:
            profile_all(poly, eng, floor, native, s)
    finally:
        poly.close()
        pure.close()
        eng.store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
