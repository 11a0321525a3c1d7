"""The task model on real wasmtime fibers: built-ins park and resume core calls."""

from __future__ import annotations

from typing import Any

import pytest
import wasmtime

from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    CanonLift,
    InstanceState,
    Store,
    canon_lower,
    run_to_completion,
)
from polyengine.concurrency.builtins import (
    canon_subtask_drop,
    canon_task_return,
    canon_thread_yield,
    canon_waitable_join,
    canon_waitable_set_new,
    canon_waitable_set_wait,
)
from polyengine.concurrency.engine_seam import builtin_host_func, engine_core
from polyengine.concurrency.fakes import py_lowered
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.task import Task
from polyengine.concurrency.thread import CoreVal
from polyengine.engine import EngineStore, compile_module, instantiate
from polyengine.types import model as m

U32 = m.U32()

B_WAT = """(module
  (import "" "thread.yield" (func $yield (result i32)))
  (import "" "task.return" (func $ret (param i32)))
  (func (export "slow")
    (drop (call $yield))
    (drop (call $yield))
    (call $ret (i32.const 7))))"""

A_WAT = """(module
  (import "" "mem" (memory 1))
  (import "" "slow" (func $slow (result i32)))
  (import "" "waitable-set.new" (func $new (result i32)))
  (import "" "waitable.join" (func $join (param i32 i32)))
  (import "" "waitable-set.wait" (func $wait (param i32 i32) (result i32)))
  (import "" "subtask.drop" (func $drop (param i32)))
  (import "" "task.return" (func $ret (param i32)))
  (func (export "main")
    (local $st i32) (local $ws i32) (local $code i32)
    (local.set $st (call $slow))
    (local.set $ws (call $new))
    (call $join (i32.shr_u (local.get $st) (i32.const 4)) (local.get $ws))
    (local.set $code (call $wait (local.get $ws) (i32.const 0)))
    (call $drop (i32.shr_u (local.get $st) (i32.const 4)))
    (call $ret (i32.add
      (i32.add (i32.mul (local.get $code) (i32.const 100))
               (i32.mul (i32.and (local.get $st) (i32.const 15)) (i32.const 10)))
      (i32.load (i32.const 4))))))"""

MEM_WAT = '(module (memory (export "mem") 1))'


def ident(_t: Task, flat: list[CoreVal]) -> list[Any]:
    return list(flat)


def no_args(_t: Task, _v: list[Any]) -> list[CoreVal]:
    return []


def build(estore: EngineStore, store: Store) -> CanonLift:
    a = InstanceState(store, name="a")
    b = InstanceState(store, name="b")
    ft = m.FuncType((), U32, True)

    def ret(th: Any, args: list[CoreVal]) -> list[CoreVal]:
        return canon_task_return(th, U32, th.task.return_key, ident, args)

    b_imports = [
        builtin_host_func(estore, store, [], ["i32"], lambda th, _a: canon_thread_yield(th, False)),
        builtin_host_func(estore, store, ["i32"], [], ret),
    ]
    b_core = instantiate(estore, compile_module(wasmtime.wat2wasm(B_WAT), "b"), b_imports)
    lift_b = CanonLift(
        ft=ft,
        inst=b,
        callee=engine_core(b_core.func("slow")),
        lower_args=no_args,
        async_=True,
        return_key="b",
    )
    lower_b = py_lowered(lift_b, async_=True)
    mem_inst = instantiate(estore, compile_module(wasmtime.wat2wasm(MEM_WAT), "mem"), [])
    mem = mem_inst.memory("mem")
    a_imports = [
        mem,
        builtin_host_func(
            estore, store, [], ["i32"], lambda th, args: canon_lower(lower_b, th, args), defer=True
        ),
        builtin_host_func(estore, store, [], ["i32"], lambda th, _a: canon_waitable_set_new(th)),
        builtin_host_func(
            estore, store, ["i32", "i32"], [], lambda th, a_: canon_waitable_join(th, *a_)
        ),
        builtin_host_func(
            estore,
            store,
            ["i32", "i32"],
            ["i32"],
            lambda th, a_: canon_waitable_set_wait(th, False, mem, *a_),
        ),
        builtin_host_func(estore, store, ["i32"], [], lambda th, a_: canon_subtask_drop(th, *a_)),
        builtin_host_func(estore, store, ["i32"], [], ret),
    ]
    a_core = instantiate(estore, compile_module(wasmtime.wat2wasm(A_WAT), "a"), a_imports)
    return CanonLift(
        ft=ft,
        inst=a,
        callee=engine_core(a_core.func("main")),
        lower_args=no_args,
        async_=True,
        return_key="a",
    )


@pytest.mark.parametrize("seed", [None, 3])
def test_component_to_component_async_call_on_fibers(seed: int | None) -> None:
    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(seed))
        main = build(estore, store)
        # event SUBTASK (1), started status (1), payload RETURNED (2)
        assert run_to_completion(main, []) == [1 * 100 + 1 * 10 + 2]
        assert not any(t.is_parked for t in store.waiting)
    finally:
        estore.close()


def test_trap_in_a_parked_built_in_poisons_and_unwinds_the_fiber() -> None:
    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(None))
        inst = InstanceState(store, name="t")
        wat = """(module
          (import "" "thread.yield" (func $yield (result i32)))
          (import "" "bad" (func $bad))
          (func (export "f") (drop (call $yield)) (call $bad) unreachable))"""

        def bad(_th: Any, _a: list[CoreVal]) -> list[CoreVal]:
            raise Trap("bad built-in", code="test")

        imports = [
            builtin_host_func(
                estore, store, [], ["i32"], lambda th, _a: canon_thread_yield(th, False)
            ),
            builtin_host_func(estore, store, [], [], bad),
        ]
        core = instantiate(estore, compile_module(wasmtime.wat2wasm(wat), "t"), imports)
        lf = CanonLift(
            ft=m.FuncType((), None, True),
            inst=inst,
            callee=engine_core(core.func("f")),
            lower_args=no_args,
            async_=True,
        )
        with pytest.raises(Trap, match="bad built-in"):
            run_to_completion(lf, [])
        assert inst.poisoned is not None
    finally:
        estore.close()


def test_wasm_trap_becomes_a_task_model_trap() -> None:
    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(None))
        inst = InstanceState(store, name="u")
        wat = """(module
          (import "" "thread.yield" (func $yield (result i32)))
          (func (export "f") (drop (call $yield)) unreachable))"""
        imports = [
            builtin_host_func(
                estore, store, [], ["i32"], lambda th, _a: canon_thread_yield(th, False)
            ),
        ]
        core = instantiate(estore, compile_module(wasmtime.wat2wasm(wat), "u"), imports)
        lf = CanonLift(
            ft=m.FuncType((), None, True),
            inst=inst,
            callee=engine_core(core.func("f")),
            lower_args=no_args,
            async_=True,
        )
        with pytest.raises(Trap, match="unreachable"):
            run_to_completion(lf, [])
        assert inst.poisoned is not None
    finally:
        estore.close()


START_WAT = """(module
  (import "" "mem" (memory 1))
  (import "" "waitable-set.new" (func $new (result i32)))
  (import "" "waitable-set.wait" (func $wait (param i32 i32) (result i32)))
  (global $ws (mut i32) (i32.const 0))
  (func $start
    (global.set $ws (call $new))
    (if (i32.ne (global.get $ws) (i32.const 1)) (then unreachable))
    (drop (call $wait (global.get $ws) (i32.const 0))))
  (start $start))"""


def test_start_function_that_blocks_traps() -> None:
    from polyengine.concurrency.driver import sync_scope
    from polyengine.engine import CoreTrap

    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(None))
        inst = InstanceState(store, name="s")
        mem = instantiate(estore, compile_module(wasmtime.wat2wasm(MEM_WAT), "mem"), []).memory(
            "mem"
        )
        imports = [
            mem,
            builtin_host_func(
                estore, store, [], ["i32"], lambda th, _a: canon_waitable_set_new(th)
            ),
            builtin_host_func(
                estore,
                store,
                ["i32", "i32"],
                ["i32"],
                lambda th, a_: canon_waitable_set_wait(th, False, mem, *a_),
            ),
        ]
        module = compile_module(wasmtime.wat2wasm(START_WAT), "s")
        with sync_scope(inst), pytest.raises((Trap, CoreTrap)) as info:
            instantiate(estore, module, imports)
        assert "cannot block a synchronous task before returning" in str(info.value)
        assert store.current is None
        assert len(inst.threads) == 0
    finally:
        estore.close()


CB_WAT = """(module
  (import "" "slow" (func $slow (result i32)))
  (import "" "waitable-set.new" (func $new (result i32)))
  (import "" "waitable.join" (func $join (param i32 i32)))
  (import "" "task.return" (func $ret (param i32)))
  (func (export "run") (result i32)
    (local $st i32) (local $ws i32)
    (local.set $st (call $slow))
    (local.set $ws (call $new))
    (call $join (i32.shr_u (local.get $st) (i32.const 4)) (local.get $ws))
    (i32.or (i32.const 2) (i32.shl (local.get $ws) (i32.const 4))))
  (func (export "cb") (param $code i32) (param $p1 i32) (param $p2 i32) (result i32)
    (call $ret (i32.add (i32.mul (local.get $code) (i32.const 100)) (local.get $p2)))
    (i32.const 0)))"""


def test_callback_lifted_export_on_fibers() -> None:
    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(None))
        a = InstanceState(store, name="cb")
        b = InstanceState(store, name="slow")
        ft = m.FuncType((), U32, True)

        def ret(th: Any, args: list[CoreVal]) -> list[CoreVal]:
            return canon_task_return(th, U32, th.task.return_key, ident, args)

        b_imports = [
            builtin_host_func(
                estore, store, [], ["i32"], lambda th, _a: canon_thread_yield(th, False)
            ),
            builtin_host_func(estore, store, ["i32"], [], ret),
        ]
        b_core = instantiate(estore, compile_module(wasmtime.wat2wasm(B_WAT), "b"), b_imports)
        lower_b = py_lowered(
            CanonLift(
                ft=ft,
                inst=b,
                callee=engine_core(b_core.func("slow")),
                lower_args=no_args,
                async_=True,
                return_key="b",
            ),
            async_=True,
        )
        a_imports = [
            builtin_host_func(
                estore,
                store,
                [],
                ["i32"],
                lambda th, args: canon_lower(lower_b, th, args),
                defer=True,
            ),
            builtin_host_func(
                estore, store, [], ["i32"], lambda th, _a: canon_waitable_set_new(th)
            ),
            builtin_host_func(
                estore, store, ["i32", "i32"], [], lambda th, a_: canon_waitable_join(th, *a_)
            ),
            builtin_host_func(estore, store, ["i32"], [], ret),
        ]
        a_core = instantiate(estore, compile_module(wasmtime.wat2wasm(CB_WAT), "cb"), a_imports)
        lift_a = CanonLift(
            ft=ft,
            inst=a,
            callee=engine_core(a_core.func("run")),
            lower_args=no_args,
            async_=True,
            callback=engine_core(a_core.func("cb")),
            return_key="a",
        )
        assert run_to_completion(lift_a, []) == [1 * 100 + 2]
        assert a.exclusive_thread is None
    finally:
        estore.close()


def test_stream_between_two_wasm_instances_with_blocking_copies() -> None:
    from polyengine.abi.compile import Compiler
    from polyengine.abi.options import CanonicalOptions
    from polyengine.concurrency import ReadableStreamEnd, SharedStreamImpl, WritableStreamEnd
    from polyengine.concurrency import start_host_call as start
    from polyengine.concurrency.copy_builtins import (
        CopyOptions,
        canon_stream_read,
        canon_stream_write,
    )

    u8s = m.Stream(m.U8())
    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(None))
        r, w = InstanceState(store, name="r"), InstanceState(store, name="w")
        shared = SharedStreamImpl(m.U8())
        ri = r.handles.add(ReadableStreamEnd(shared))
        wi = w.handles.add(WritableStreamEnd(shared))
        results: dict[str, list[CoreVal]] = {}

        def side(name: str, inst: InstanceState, op: Any, i: int) -> CanonLift:
            mem = instantiate(
                estore, compile_module(wasmtime.wat2wasm(MEM_WAT), f"m{name}"), []
            ).memory("mem")
            if name == "w":
                mem.write(64, b"fiber")
            opts = CopyOptions(CanonicalOptions(memory=mem), Compiler().codec(m.U8()))

            def record(th: Any, args: list[CoreVal]) -> list[CoreVal]:
                results[name] = list(args)
                th.task.return_([])
                return []

            wat = f"""(module
              (import "" "mem" (memory 1))
              (import "" "copy" (func $copy (param i32 i32 i32) (result i32)))
              (import "" "done" (func $done (param i32)))
              (func (export "go")
                (call $done (call $copy (i32.const {i}) (i32.const 64) (i32.const 5)))))"""
            imports = [
                mem,
                builtin_host_func(
                    estore, store, ["i32"] * 3, ["i32"], lambda th, a_: op(th, u8s, opts, *a_)
                ),
                builtin_host_func(estore, store, ["i32"], [], record),
            ]
            core = instantiate(estore, compile_module(wasmtime.wat2wasm(wat), name), imports)
            side_mems[name] = mem
            return CanonLift(
                ft=m.FuncType((), None, True),
                inst=inst,
                callee=engine_core(core.func("go")),
                lower_args=no_args,
                async_=True,
            )

        side_mems: dict[str, Any] = {}
        reader = start(side("r", r, canon_stream_read, ri), [])
        assert not reader.settled  # parked on its fiber inside stream.read
        assert run_to_completion(side("w", w, canon_stream_write, wi), []) == []
        while store.tick():
            pass
        assert reader.resolved
        assert results["r"] == [5 << 4] and results["w"] == [5 << 4]
        assert side_mems["r"].read(64, 5) == b"fiber"
    finally:
        estore.close()


def test_never_parks_names_the_built_ins_that_complete_at_once() -> None:
    from polyengine.concurrency.engine_seam import NONBLOCKING_KINDS, never_parks

    for kind in NONBLOCKING_KINDS | {"waitable-set.poll"}:
        assert never_parks(kind, False) and never_parks(kind, True)
    for op in ("read", "write", "cancel-read", "cancel-write"):
        for kind in (f"stream.{op}", f"future.{op}"):
            assert never_parks(kind, True)
            assert not never_parks(kind, False)  # a synchronous copy or cancel waits
    for kind in ("waitable-set.wait", "thread.yield", "subtask.cancel", "canon_lower"):
        assert not never_parks(kind, True)


def _async_copies(plain: bool, *, bad_handle: bool = False) -> dict[str, Any]:
    """An async ``future.write`` before any reader (``BLOCKED``), then an async
    ``future.read`` that completes it; the copy built-ins are plain host
    functions (``plain``) or parking ones. ``bad_handle``: the writer names the
    readable end instead (a trap). Returns what each side saw."""
    from polyengine.abi.compile import Compiler
    from polyengine.abi.options import CanonicalOptions
    from polyengine.concurrency import ReadableFutureEnd, SharedFutureImpl, WritableFutureEnd
    from polyengine.concurrency import start_host_call as start
    from polyengine.concurrency.copy_builtins import (
        CopyOptions,
        canon_future_read,
        canon_future_write,
    )

    u32f = m.Future(U32)
    estore = EngineStore()
    try:
        store = Store(SchedulePolicy(None))
        r, w = InstanceState(store, name="r"), InstanceState(store, name="w")
        shared = SharedFutureImpl(U32)
        ri = r.handles.add(ReadableFutureEnd(shared))
        wi = w.handles.add(WritableFutureEnd(shared))
        if bad_handle:
            wi = w.handles.add(ReadableFutureEnd(SharedFutureImpl(U32)))
        seen: dict[str, Any] = {}
        mems: dict[str, Any] = {}

        def side(name: str, inst: InstanceState, op: Any, i: int, what: str) -> CanonLift:
            mem = instantiate(
                estore, compile_module(wasmtime.wat2wasm(MEM_WAT), f"m{name}"), []
            ).memory("mem")
            if name == "w":
                mem.write(64, (0xC0FFEE).to_bytes(4, "little"))
            opts = CopyOptions(CanonicalOptions(memory=mem, is_async=True), Compiler().codec(U32))

            def record(th: Any, args: list[CoreVal]) -> list[CoreVal]:
                seen[name] = list(args)
                th.task.return_([])
                return []

            wat = f"""(module
              (import "" "mem" (memory 1))
              (import "" "copy" (func $copy (param i32 i32) (result i32)))
              (import "" "done" (func $done (param i32)))
              (func (export "go")
                (call $done (call $copy (i32.const {i}) (i32.const 64)))))"""
            how: dict[str, Any] = {"kind": what, "is_async": True} if plain else {}
            imports = [
                mem,
                builtin_host_func(
                    estore, store, ["i32"] * 2, ["i32"], lambda th, a_: op(th, u32f, opts, *a_),
                    **how,
                ),
                builtin_host_func(estore, store, ["i32"], [], record),
            ]
            core = instantiate(estore, compile_module(wasmtime.wat2wasm(wat), name), imports)
            mems[name] = mem
            return CanonLift(
                ft=m.FuncType((), None, True),
                inst=inst,
                callee=engine_core(core.func("go")),
                lower_args=no_args,
                async_=True,
            )

        writer = start(side("w", w, canon_future_write, wi, "future.write"), [])
        seen["writer settled"] = writer.settled
        if writer.trap is not None:
            seen["trap"] = (type(writer.trap).__name__, str(writer.trap))
            return seen
        assert run_to_completion(side("r", r, canon_future_read, ri, "future.read"), []) == []
        while store.tick():
            pass
        seen["value"] = mems["r"].read(64, 4)
        seen["writer end"] = w.handles.get(wi).pending_event is not None
        return seen
    finally:
        estore.close()


def test_async_copies_as_plain_host_functions_behave_as_parking_ones() -> None:
    plain, parking = _async_copies(True), _async_copies(False)
    assert plain == parking
    assert plain["w"] == [0xFFFF_FFFF]  # BLOCKED: no reader yet, and the writer went on
    assert plain["writer settled"]
    assert plain["r"] == [0]  # COMPLETED at once: the writer's value was waiting
    assert plain["value"] == (0xC0FFEE).to_bytes(4, "little")
    assert plain["writer end"]  # the writer's FUTURE_WRITE event is pending for it


def test_a_trap_in_an_async_copy_is_the_same_on_a_plain_host_function() -> None:
    plain, parking = _async_copies(True, bad_handle=True), _async_copies(False, bad_handle=True)
    assert plain == parking
    assert "is not a writable future end" in plain["trap"][1]
