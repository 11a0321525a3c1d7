"""``bench/boundary.py --profile``: per-step breakdowns of the polyengine paths, prototypes,
and cProfile / line_profiler listings."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import wasmtime

sys.path.insert(0, str(Path(__file__).resolve().parent))

if TYPE_CHECKING:
    from bench import _components as guest
else:
    import _components as guest

import polyengine
from polyengine import engine
from polyengine.engine import _ffi as effi
from polyengine.instance import ExportCall
from polyengine.translate import plan as pln

if TYPE_CHECKING:
    from bench._fixtures import CoreFloor, EngineFloor, Native, Poly, identity
    from bench._measure import Case, Loop, Settings, fmt_time, measure, repeat
else:
    from _fixtures import CoreFloor, EngineFloor, Native, Poly, identity
    from _measure import Case, Loop, Settings, fmt_time, measure, repeat



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
    print(f"-- {title}: {fmt_time(total).strip()} per call (fastest repeat) --")
    for label, ns in costs:
        print(f"  {label:<58}{fmt_time(ns):>12}  {100 * ns / total:5.1f}%")
    rest = total - sum(ns for _, ns in costs)
    label = "(rest: frames, try/finally, attribute loads)"
    print(f"  {label:<58}{fmt_time(rest):>12}  {100 * rest / total:5.1f}%")


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
    coro, sync_layer = fmt_time(awaited - total), fmt_time(facade - awaited)
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
            own, cum = fmt_time(tt / n * 1e9), fmt_time(ct / n * 1e9)
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
            f"  {label:<58}{fmt_time(now):>12} ->{fmt_time(new):>12}"
            f"  saves {fmt_time(gain).strip()} ({100 * gain / now:4.1f}%);"
            f" raw floor {fmt_time(raw_floor).strip()}: {now / raw_floor:.2f}x -> "
            f"{new / raw_floor:.2f}x"
        )
    speedup = native_case.best / awaited_case.best
    print(
        f"  native component Func {fmt_time(native_case.best).strip()} / await exports.add "
        f"{fmt_time(awaited_case.best).strip()}: {speedup:.1f}x faster"
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
