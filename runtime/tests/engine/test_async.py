"""The suspension seam: parkable calls and async host functions (architecture.md §4)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence

import pytest

from polyengine.engine import (
    CallCancelled,
    CoreFunc,
    CoreInstance,
    CoreModule,
    CoreTrap,
    CoreValue,
    EngineError,
    EngineStore,
    ParkableCall,
    define_async_host_func,
    define_host_func,
    instantiate,
    start,
    wait,
)

Wat = Callable[..., CoreModule]

GUEST = """(module
  (import "h" "wait" (func $wait (param i32) (result i32)))
  (import "h" "sync" (func $sync (param i32) (result i32)))
  (memory (export "mem") 1)
  (func (export "run") (param i32) (result i32) local.get 0 call $wait i32.const 1 i32.add)
  (func (export "twice") (param i32) (result i32)
    local.get 0 call $wait local.get 0 i32.const 1000 i32.add call $wait i32.add)
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "viasync") (param i32) (result i32) local.get 0 call $sync)
  (func (export "boom") (param i32) (result i32) local.get 0 call $wait drop unreachable)
  (func $deep (export "deep") (param i32) (result i32)
    local.get 0 i32.eqz
    if (result i32)
      i32.const 0 call $wait
    else
      local.get 0 i32.const 1 i32.sub call $deep
    end)
  (func $r (export "rec") (param i32) (result i32)
    local.get 0 call $wait drop local.get 0 call $r)
  (func (export "store") (param i32 i32) (result i32)
    local.get 0 local.get 1 i32.store local.get 0 call $wait)
)"""


class Host:
    """An async host `wait(key)` that parks until the test settles `key`."""

    def __init__(self) -> None:
        self.pending: dict[int, asyncio.Future[list[CoreValue]]] = {}
        self.sync: Callable[[Sequence[CoreValue]], Sequence[CoreValue]] = lambda a: [a[0]]

    def wait(self, args: Sequence[CoreValue]) -> asyncio.Future[list[CoreValue]]:
        key = args[0]
        assert isinstance(key, int)
        fut: asyncio.Future[list[CoreValue]] = asyncio.get_running_loop().create_future()
        self.pending[key] = fut
        return fut

    def settle(self, key: int, value: int) -> None:
        self.pending.pop(key).set_result([value])


def setup(store: EngineStore, wat: Wat, host: Host) -> CoreInstance:
    w = define_async_host_func(store, ["i32"], ["i32"], host.wait)

    def sync(args: Sequence[CoreValue]) -> Sequence[CoreValue]:
        return host.sync(args)

    s = define_host_func(store, ["i32"], ["i32"], sync)
    return instantiate(store, wat(GUEST), [w, s])


def test_a_call_parks_and_resumes(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            call = start(inst.func("twice"), [5])
            assert not call.done() and store.live_calls == 1
            with pytest.raises(EngineError, match="parked"):
                call.result()
            host.settle(5, 10)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert not call.done() and 1005 in host.pending
            host.settle(1005, 20)
            assert await wait(call) == [30]
            assert store.live_calls == 0
            assert call.poll() is True  # polling a finished call is a no-op

    asyncio.run(main())


def test_parked_calls_resume_in_any_order_and_others_run_meanwhile(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            calls = {k: start(inst.func("run"), [k]) for k in (1, 2, 3)}
            # Calls into the same instance while the others are parked.
            assert inst.func("add").call_raw([2, 3]) == [5]
            assert inst.func("viasync").call_raw([77]) == [77]
            quick = start(inst.func("add"), [40, 2])
            assert quick.done() and quick.result() == [42]
            for k in (3, 1, 2):
                host.settle(k, k * 100)
                assert await wait(calls[k]) == [k * 100 + 1]
                assert all(not calls[j].done() for j in calls if j > k and j != 3)

    asyncio.run(main())


def test_a_thousand_parked_calls_resumed_in_random_order(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            run = inst.func("run")
            calls = [start(run, [k]) for k in range(1000)]
            assert store.live_calls == 1000
            keys = list(host.pending)
            random.Random(1234).shuffle(keys)
            for k in keys:
                host.settle(k, 3 * k)
            results = await asyncio.gather(*(wait(c) for c in calls))
            assert results == [[3 * k + 1] for k in range(1000)]
            assert store.live_calls == 0

    asyncio.run(main())


def test_traps_and_stack_overflow_in_parked_calls_stay_traps(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            boom = start(inst.func("boom"), [1])
            rec = start(inst.func("rec"), [2])
            deep = start(inst.func("deep"), [2000])  # parks 2000 guest frames deep
            host.settle(1, 0)
            with pytest.raises(CoreTrap) as info:
                await wait(boom)
            assert info.value.code == "unreachable"
            while not rec.done():
                host.settle(2, 0)
                await asyncio.sleep(0)
            with pytest.raises(CoreTrap) as info:
                rec.result()
            assert info.value.code == "stack_overflow"
            host.settle(0, 5)
            assert await wait(deep) == [5]
            assert inst.func("add").call_raw([1, 2]) == [3]

    asyncio.run(main())


def test_host_exceptions_in_async_functions(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            call = start(inst.func("run"), [1])
            error = OSError("disk on fire")
            host.pending.pop(1).set_exception(error)
            with pytest.raises(CoreTrap) as info:
                await wait(call)
            assert info.value.host_exception is error

            call = start(inst.func("run"), [3])
            host.pending.pop(3).cancel()
            with pytest.raises(CoreTrap) as info:
                await wait(call)
            assert isinstance(info.value.host_exception, asyncio.CancelledError)

            call = start(inst.func("run"), [2])
            host.pending.pop(2).set_exception(KeyboardInterrupt())
            await asyncio.sleep(0)  # the done-callback polls: the interrupt comes out there
            assert call.done()
            with pytest.raises(KeyboardInterrupt):
                call.result()

    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(main())
    finally:
        loop.close()


def test_immediate_results_coroutines_and_sync_calls(wat: Wat) -> None:
    async def main() -> None:
        with EngineStore() as store:

            async def later(args: Sequence[CoreValue]) -> list[CoreValue]:
                await asyncio.sleep(0)
                return [int(args[0]) * 2]

            answers: dict[int, object] = {}

            def mixed(args: Sequence[CoreValue]) -> object:
                key = int(args[0])
                return answers[key] if key in answers else later(args)

            w = define_async_host_func(store, ["i32"], ["i32"], mixed)  # type: ignore[arg-type]
            s = define_host_func(store, ["i32"], ["i32"], lambda a: a)
            inst = instantiate(store, wat(GUEST), [w, s])
            assert store.async_required
            answers[4] = [8]
            assert inst.func("run").call_raw([4]) == [9]  # ready at once: no park
            call = start(inst.func("run"), [21])
            assert await wait(call) == [43]
            # A synchronous call that would park traps instead.
            with pytest.raises(CoreTrap) as info:
                inst.func("run").call_raw([5])
            assert info.value.code == "cannot_block_sync_task"
            assert store.live_calls == 0
            answers[6] = "not a list"
            with pytest.raises(CoreTrap) as info:
                inst.func("run").call_raw([6])
            assert isinstance(info.value.host_exception, TypeError)

    asyncio.run(main())


def test_cancel_unwinds_and_cancels_the_host_awaitable(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            call = start(inst.func("run"), [1])
            fut = host.pending[1]
            assert call.cancel() is True
            assert fut.cancelled() and call.done() and store.live_calls == 0
            assert call.cancel() is False
            with pytest.raises(CallCancelled):
                call.result()
            await asyncio.sleep(0)  # the cancelled future's callback is harmless
            # Cancelling the awaiting task cancels the call.
            call = start(inst.func("run"), [2])
            task = asyncio.ensure_future(wait(call))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert call.done() and host.pending[2].cancelled()

    asyncio.run(main())


def test_waker_hands_resumption_to_a_scheduler(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            ready: list[ParkableCall] = []
            call = start(inst.func("run"), [1])
            call.set_waker(ready.append)
            finished: list[ParkableCall] = []
            call.add_done_callback(finished.append)
            host.settle(1, 1)
            await asyncio.sleep(0)
            assert ready == [call] and not call.done()
            assert call.poll() is True and finished == [call]
            assert call.result() == [2]
            late: list[ParkableCall] = []
            call.add_done_callback(late.append)
            assert late == [call]

    asyncio.run(main())


def test_memory_written_before_a_park_is_seen_after(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            call = start(inst.func("store"), [64, 0xABCD])
            assert inst.memory("mem").read(64, 4) == (0xABCD).to_bytes(4, "little")
            host.settle(64, 9)
            assert await wait(call) == [9]

    asyncio.run(main())


def test_reentrant_poll_start_and_cancel_are_refused(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            parked = start(inst.func("run"), [1])
            errors: list[BaseException] = []

            def meddle(args: Sequence[CoreValue]) -> list[CoreValue]:
                for op in (parked.poll, parked.cancel, lambda: start(inst.func("add"), [1, 2])):
                    try:
                        op()
                    except EngineError as exc:
                        errors.append(exc)
                return [0]

            host.sync = meddle
            assert start(inst.func("viasync"), [0]).result() == [0]
            assert len(errors) == 3 and not parked.done()
            host.settle(1, 1)
            assert await wait(parked) == [2]

    asyncio.run(main())


def test_store_without_async_features_keeps_the_sync_path(wat: Wat) -> None:
    with EngineStore() as store:
        s = define_host_func(store, ["i32"], ["i32"], lambda a: [a[0]])
        inst = instantiate(store, wat(GUEST.replace('"wait"', '"wait2"')), [s, s])
        assert not store.async_required
        assert inst.func("viasync").call_raw([3]) == [3]
        # A parkable call still works, and finishes at once.
        call = start(inst.func("viasync"), [4])
        assert call.done() and call.result() == [4]
    with EngineStore(suspend=False) as store:
        with pytest.raises(EngineError, match="suspend=False"):
            define_async_host_func(store, [], [], lambda a: [])
        add = instantiate(store, wat('(module (func (export "f")))'), []).func("f")
        with pytest.raises(EngineError, match="suspend=False"):
            start(add, [])


def test_instantiation_in_an_async_store(wat: Wat) -> None:
    text = """(module
      (import "h" "w" (func $w (param i32) (result i32)))
      (global $g (export "g") (mut i32) (i32.const 0))
      (func $s i32.const 5 call $w global.set $g)
      (start $s))"""

    async def main() -> None:
        with EngineStore() as store:
            pending: list[asyncio.Future[list[CoreValue]]] = []
            calls: list[Sequence[CoreValue]] = []

            def w(args: Sequence[CoreValue]) -> object:
                calls.append(args)
                if len(calls) == 1:
                    return [int(args[0]) * 10]
                fut: asyncio.Future[list[CoreValue]] = asyncio.get_running_loop().create_future()
                pending.append(fut)
                return fut

            host = define_async_host_func(store, ["i32"], ["i32"], w)  # type: ignore[arg-type]
            inst = instantiate(store, wat(text), [host])
            assert inst.global_("g").get() == 50
            with pytest.raises(CoreTrap, match="start function"):
                instantiate(store, wat(text), [host])
            assert pending[0].cancelled()

    asyncio.run(main())


def test_a_module_without_a_start_function_skips_the_linker_in_an_async_store(
    wat: Wat, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a store with async host functions, only a module with a start function is
    instantiated on a call future (through a linker of its own): one without runs
    no guest code while being instantiated, so the synchronous instantiation
    serves, with its segments (a table entry of the async import, data, a GC
    global) initialized as before, and its calls still park."""
    from polyengine.engine import _instance, _pre

    blocking: list[str] = []
    for mod in (_instance, _pre):
        real = mod.instantiate_blocking

        def counted(store: EngineStore, module: CoreModule, exts: object, _real=real) -> object:
            blocking.append(module.sha256)
            return _real(store, module, exts)

        monkeypatch.setattr(mod, "instantiate_blocking", counted)
    plain = wat(
        """(module
      (type $s (struct (field i32)))
      (import "h" "w" (func $w (param i32) (result i32)))
      (table $t 1 funcref) (elem (i32.const 0) func $w)
      (memory (export "mem") 1) (data (i32.const 8) "*")
      (global $g (ref null $s) (struct.new $s (i32.const 7)))
      (type $sig (func (param i32) (result i32)))
      (func (export "run") (param i32) (result i32)
        local.get 0 i32.const 0 call_indirect $t (type $sig)
        global.get $g struct.get $s 0 i32.add))""",
        "plain",
    )
    started = wat(
        """(module
      (import "h" "w" (func $w (param i32) (result i32)))
      (global $g (export "g") (mut i32) (i32.const 0))
      (func $s i32.const 5 call $w global.set $g)
      (start $s))""",
        "started",
    )
    assert not plain.runs_start and started.runs_start

    async def main() -> None:
        with EngineStore() as store:
            pending: list[asyncio.Future[list[CoreValue]]] = []

            def w(args: Sequence[CoreValue]) -> object:
                if int(args[0]) == 5:
                    return [50]
                fut: asyncio.Future[list[CoreValue]] = asyncio.get_running_loop().create_future()
                pending.append(fut)
                return fut

            host = define_async_host_func(store, ["i32"], ["i32"], w)  # type: ignore[arg-type]
            assert store.async_required
            inst = instantiate(store, plain, [host])
            assert blocking == []
            assert inst.memory("mem").read(7, 3) == b"\0*\0"
            call = start(inst.func("run"), [1])
            assert not call.done() and len(pending) == 1  # parked in the async import
            pending[0].set_result([100])
            assert await wait(call) == [107]
            assert instantiate(store, started, [host]).global_("g").get() == 50
            assert blocking == [started.sha256]

    asyncio.run(main())


def test_start_sections_are_found_from_the_section_headers() -> None:
    from polyengine.engine import has_start_section

    header = b"\0asm\x01\0\0\0"
    assert not has_start_section(header)
    assert not has_start_section(header + b"\x00\x03\x01a\x00")  # a custom section
    start_section = b"\x08\x01\x00"
    assert has_start_section(header + start_section)
    assert has_start_section(memoryview(header + b"\x00\x03\x01a\x00" + start_section))
    assert has_start_section(bytearray(header + start_section))
    # Anything malformed answers "may run code": bad magic, too short, a size past
    # the end, a size LEB128 that never ends or is too long.
    assert has_start_section(b"\0asX\x01\0\0\0")
    assert has_start_section(b"\0asm")
    assert has_start_section(header + b"\x01\x05\x00")
    assert has_start_section(header + b"\x01\x80")
    assert has_start_section(header + b"\x01\x80\x80\x80\x80\x80\x01")
    # A large section's size spans several LEB128 bytes.
    assert not has_start_section(header + b"\x00\x81\x01\x00" + bytes(128))


def test_closing_the_store_cancels_parked_calls(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        store = EngineStore()
        inst = setup(store, wat, host)
        calls = [start(inst.func("run"), [k]) for k in range(5)]
        futures = list(host.pending.values())
        store.close()
        assert all(f.cancelled() for f in futures)
        for call in calls:
            assert call.poll() is True
            with pytest.raises(CallCancelled):
                call.result()
        await asyncio.sleep(0)

    asyncio.run(main())


def test_start_checks_arguments(wat: Wat) -> None:
    with EngineStore() as store:
        func: CoreFunc = instantiate(
            store,
            wat(GUEST.replace('"wait"', '"w"')),
            [
                define_host_func(store, ["i32"], ["i32"], lambda a: a),
                define_host_func(store, ["i32"], ["i32"], lambda a: a),
            ],
        ).func("add")
        with pytest.raises(TypeError, match="expected 2 values"):
            start(func, [1])
        assert store.live_calls == 0


def test_all_value_types_cross_the_async_seam(wat: Wat) -> None:
    text = """(module
      (import "h" "mix" (func $mix (param i32 i64 f32 f64) (result f64 i64 i32 f32)))
      (func (export "go") (param i32 i64 f32 f64) (result f64 i64 i32 f32)
        local.get 0 local.get 1 local.get 2 local.get 3 call $mix))"""

    async def main() -> None:
        seen: list[Sequence[CoreValue]] = []

        def mix(args: Sequence[CoreValue]) -> asyncio.Future[list[CoreValue]]:
            seen.append(args)
            a, _b, c, d = args
            fut: asyncio.Future[list[CoreValue]] = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(fut.set_result, [d, -1, a, c])
            return fut

        with EngineStore() as store:
            host = define_async_host_func(
                store, ["i32", "i64", "f32", "f64"], ["f64", "i64", "i32", "f32"], mix
            )
            go = instantiate(store, wat(text), [host]).func("go")
            assert go.params == ("i32", "i64", "f32", "f64")
            result = await wait(start(go, [-1, 2**63, 0.5, -2.25]))
            assert result == [-2.25, 2**64 - 1, 2**32 - 1, 0.5]
            assert list(seen[0]) == [2**32 - 1, 2**63, 0.5, -2.25]

    asyncio.run(main())


def test_imports_of_every_kind_in_an_async_store(wat: Wat) -> None:
    provider = """(module
      (memory (export "m") 1) (table (export "t") 1 funcref)
      (global (export "g") (mut i32) (i32.const 4))
      (func (export "f") (param i32) (result i32) local.get 0 i32.const 1 i32.add))"""
    consumer = """(module
      (import "p" "m" (memory 1)) (import "p" "t" (table 1 funcref))
      (import "p" "g" (global $g (mut i32)))
      (import "p" "f" (func $f (param i32) (result i32)))
      (import "h" "w" (func $w (param i32) (result i32)))
      (type $t (func (param i32) (result i32)))
      (func (export "go") (param i32) (result i32)
        (i32.store (i32.const 8) (call $w (local.get 0)))
        (call_indirect (type $t)
          (i32.add (global.get $g) (i32.load (i32.const 8))) (i32.const 0))))"""

    async def main() -> None:
        with EngineStore() as store:
            w = define_async_host_func(store, ["i32"], ["i32"], lambda a: [a[0]])
            p = instantiate(store, wat(provider), [])
            p.table("t").set(0, p.func("f"))
            c = instantiate(
                store, wat(consumer), [p.memory("m"), p.table("t"), p.global_("g"), p.func("f"), w]
            )
            assert c.func("go").call_raw([10]) == [15]
            assert p.memory("m").read(8, 4) == (10).to_bytes(4, "little")
            assert await wait(start(c.func("go"), [1])) == [6]

    asyncio.run(main())


def test_dropping_a_parked_call_cancels_it(wat: Wat) -> None:
    import gc

    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            call = start(inst.func("run"), [1])
            fut = host.pending[1]
            assert store.live_calls == 1
            del call
            gc.collect()
            assert store.live_calls == 0 and fut.cancelled()
            await asyncio.sleep(0)

    asyncio.run(main())


def test_done_callbacks_all_run_even_if_one_raises(wat: Wat) -> None:
    async def main() -> None:
        host = Host()
        with EngineStore() as store:
            inst = setup(store, wat, host)
            call = start(inst.func("run"), [1])
            ran: list[int] = []

            def bad(_c: ParkableCall) -> None:
                ran.append(1)
                raise LookupError("callback failed")

            call.add_done_callback(bad)
            call.add_done_callback(lambda c: ran.append(2))
            call.set_waker(lambda c: None)
            host.settle(1, 1)
            await asyncio.sleep(0)
            with pytest.raises(LookupError):
                call.poll()
            assert ran == [1, 2] and call.done() and call.result() == [2]

    asyncio.run(main())


def test_a_call_without_a_pooled_stack_traps_naming_the_limit() -> None:
    """A pooled engine's fiber stacks are its pool's: a parkable call beyond them
    fails with a trap that names the limit; the parked ones go on."""
    import wasmtime

    from polyengine.engine import EngineConfig, PoolingConfig, compile_module, get_engine

    eng = get_engine(EngineConfig(pooling=PoolingConfig(total_core_instances=4, total_stacks=2)))

    async def main() -> None:
        host = Host()
        with EngineStore(eng) as store:
            inst = setup(
                store, lambda text: compile_module(wasmtime.wat2wasm(text), engine=eng), host
            )
            parked = [start(inst.func("run"), [k]) for k in (1, 2)]
            over = start(inst.func("run"), [3])
            assert over.done() and not any(c.done() for c in parked)
            with pytest.raises(CoreTrap, match=r"PoolingConfig\.total_stacks"):
                over.result()
            for k, call in enumerate(parked, 1):
                host.settle(k, 10 * k)
                assert await wait(call) == [10 * k + 1]

    asyncio.run(main())
