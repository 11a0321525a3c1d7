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
import importlib.metadata
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench import _components as guest
    from bench._wat import compile_component
else:
    import _components as guest
    from _wat import compile_component

from polyengine import engine

if TYPE_CHECKING:
    from bench._fixtures import CoreFloor, EngineFloor, Native, Poly
    from bench._measure import (
        Case,
        Loop,
        Row,
        Section,
        Settings,
        fmt_time,
        gbps,
        measure,
        no_slower,
        paired_ratio,
        per_call_ns,
        render,
        repeat,
        verdict,
    )
    from bench._profiling import profile_all
else:
    from _fixtures import CoreFloor, EngineFloor, Native, Poly
    from _measure import (
        Case,
        Loop,
        Row,
        Section,
        Settings,
        fmt_time,
        gbps,
        measure,
        no_slower,
        paired_ratio,
        per_call_ns,
        render,
        repeat,
        verdict,
    )
    from _profiling import profile_all


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
        f"{label:<44}{fmt_time(pure):>12}{fmt_time(compiled):>12}{floor:>12}"
        f"  {target:<30}{verdict(ok)}"
    )


# -- section 1: export call ----------------------------------------------------------------


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
            f"compiled / pure / C floor: await add {fmt_time(awaited_ns).strip()} / "
            f"{fmt_time(pure_awaited).strip()} / {fmt_time(c_ns).strip()}: {a_ratio:.2f}x the "
            f"C floor (target <= {TARGET_AWAITED_VS_C}x: "
            f"{verdict(a_ratio <= TARGET_AWAITED_VS_C)})",
            f"compiled / pure / C floor: facade add {fmt_time(facade_ns).strip()} / "
            f"{fmt_time(pure_facade).strip()} / {fmt_time(c_ns).strip()}: {f_ratio:.2f}x the "
            f"C floor (target <= {TARGET_FACADE_VS_C}x: "
            f"{verdict(f_ratio <= TARGET_FACADE_VS_C)})",
        ]
        floor_text = fmt_time(c_ns)
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
        f"compiled / pure: {fmt_time(compiled_ns).strip()} / {fmt_time(pure_ns).strip()} "
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
        f"compiled / pure: {fmt_time(times[1]).strip()} / {fmt_time(times[3]).strip()} "
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
        accept(t.label, pure_ns, poly_ns, fmt_time(floor_ns),
               f"no slower ({paired.median:.2f}x, {spread})", ok)  # fmt: skip
        out.append(sec)
    return out


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
