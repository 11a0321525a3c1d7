"""The asyncio driver: host awaitables wake waiting threads, deadlock detection."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from polyengine.abi.memory import BytearrayMemory
from polyengine.abi.trap import Trap
from polyengine.concurrency import (
    Driver,
    EventCode,
    InstanceState,
    Store,
    Subtask,
    canon_lower,
    run_to_completion,
)
from polyengine.concurrency.builtins import (
    canon_subtask_cancel,
    canon_subtask_drop,
    canon_task_return,
    canon_waitable_join,
    canon_waitable_set_new,
    canon_waitable_set_wait,
)
from polyengine.concurrency.fakes import py_lifted, py_lowered, stackful
from polyengine.concurrency.sched import SchedulePolicy
from polyengine.concurrency.task import FuncInst, OnCancel, OnResolve, OnStart
from polyengine.concurrency.thread import CoreVal, Suspends, Thread
from polyengine.types import model as m

U32 = m.U32()
ASYNC_FT = m.FuncType((("x", U32),), U32, True)
SYNC_FT = m.FuncType((("x", U32),), U32, False)


class CountingStore(Store):
    ticks = 0

    def tick(self) -> bool:
        CountingStore.ticks += 1
        return super().tick()


def host_double(driver: Driver, delay: float, log: list[str]) -> FuncInst:
    """A host import that doubles its argument after ``delay`` seconds."""

    def fi(on_start: OnStart, on_resolve: OnResolve, _caller: object) -> OnCancel:
        [x] = on_start()

        async def work() -> int:
            await asyncio.sleep(delay)
            return int(x) * 2

        def done(t: asyncio.Future[int]) -> None:
            if t.cancelled():
                log.append("host cancelled")
                on_resolve(None)
            else:
                on_resolve([t.result()])

        task = driver.spawn_host(work(), done)

        def cancel(_caller: object) -> None:
            task.cancel()

        return cancel

    return fi


def do_return(thread: Thread, *vals: Any) -> None:
    t = thread.task
    canon_task_return(thread, t.ft.result, t.return_key, lambda _t, f: list(f), list(vals))


def test_async_host_import_wakes_the_waiting_guest() -> None:
    async def main() -> list[Any] | None:
        store = CountingStore(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store, name="guest")
        mem = BytearrayMemory(64)
        out: list[list[Any]] = []
        lower = py_lowered(host_double(driver, 0.05, []), ft=ASYNC_FT, async_=True, results=out)

        def g(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
            r = (yield from canon_lower(lower, thread, [args[0]]))[0]
            assert isinstance(r, int)
            assert r & 0xF == Subtask.State.STARTED
            ws = canon_waitable_set_new(thread)[0]
            assert isinstance(ws, int)
            canon_waitable_join(thread, r >> 4, ws)
            code = (yield from canon_waitable_set_wait(thread, False, mem, ws, 0))[0]
            assert code == EventCode.SUBTASK
            assert struct.unpack_from("<II", mem.buf, 0)[1] == Subtask.State.RETURNED
            canon_subtask_drop(thread, r >> 4)
            do_return(thread, out[0][0] + 1)
            return []

        CountingStore.ticks = 0
        res = await driver.run(
            py_lifted(inst, g, params=(U32,), result=U32, is_async=True, async_=True), [20]
        )
        # no busy polling while the host sleeps: a handful of ticks in all
        assert CountingStore.ticks < 10
        return res

    assert asyncio.run(main()) == [41]


def test_concurrent_calls_overlap_their_host_waits() -> None:
    async def main() -> tuple[list[Any], float]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        lower_for = {}
        calls = []
        for i in range(3):
            inst = InstanceState(store, name=f"g{i}")
            lower_for[i] = py_lowered(host_double(driver, 0.1, []), ft=ASYNC_FT)

            def g(thread: Thread, args: list[CoreVal], i: int = i) -> Suspends[list[CoreVal]]:
                r = yield from canon_lower(lower_for[i], thread, [args[0]])
                do_return(thread, r[0])
                return []

            lf = py_lifted(inst, g, params=(U32,), result=U32, is_async=True, async_=True)
            calls.append(driver.call(lf, [i]))
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        results = await asyncio.gather(*calls)
        return results, loop.time() - t0

    results, elapsed = asyncio.run(main())
    assert results == [[0], [2], [4]]
    assert elapsed < 0.25  # three 0.1 s host waits ran concurrently


def test_sync_export_parks_on_a_suspending_host_import() -> None:
    async def main() -> list[Any] | None:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        lower = py_lowered(host_double(driver, 0.01, []), ft=SYNC_FT)

        def f(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
            return (yield from canon_lower(lower, thread, [args[0]]))

        return await driver.run(py_lifted(inst, f, params=(U32,), result=U32), [5])

    assert asyncio.run(main()) == [10]


def test_run_to_completion_refuses_host_work() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        lower = py_lowered(host_double(driver, 0.01, []), ft=SYNC_FT)

        def f(thread: Thread, args: list[CoreVal]) -> Suspends[list[CoreVal]]:
            return (yield from canon_lower(lower, thread, [args[0]]))

        with pytest.raises(RuntimeError, match="Driver"):
            run_to_completion(py_lifted(inst, f, params=(U32,), result=U32), [5])
        await asyncio.sleep(0.02)

    asyncio.run(main())


def test_driver_reports_deadlock_and_poisons() -> None:
    async def main() -> InstanceState:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store, name="stuck")
        mem = BytearrayMemory(64)

        def body(thread: Thread) -> Suspends[None]:
            ws = canon_waitable_set_new(thread)[0]
            assert isinstance(ws, int)
            yield from canon_waitable_set_wait(thread, False, mem, ws, 0)

        with pytest.raises(Trap, match="deadlock detected"):
            await driver.run(stackful(inst, body), [])
        return inst

    inst = asyncio.run(main())
    assert inst.poisoned is not None


def test_cancelling_a_host_subtask_cancels_the_asyncio_task() -> None:
    async def main() -> list[object]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        host_log: list[str] = []
        lower = py_lowered(host_double(driver, 10.0, host_log), ft=ASYNC_FT, async_=True)
        mem = BytearrayMemory(64)
        seen: list[object] = []

        def body(thread: Thread) -> Suspends[None]:
            r = (yield from canon_lower(lower, thread, [1]))[0]
            assert isinstance(r, int)
            idx = r >> 4
            seen.append((yield from canon_subtask_cancel(thread, True, idx))[0])
            ws = canon_waitable_set_new(thread)[0]
            assert isinstance(ws, int)
            canon_waitable_join(thread, idx, ws)
            yield from canon_waitable_set_wait(thread, False, mem, ws, 0)
            seen.append(struct.unpack_from("<II", mem.buf, 0)[1])
            seen.extend(host_log)

        await asyncio.wait_for(driver.run(stackful(inst, body), []), 2.0)
        return seen

    seen = asyncio.run(main())
    assert seen == [0xFFFF_FFFF, Subtask.State.CANCELLED_BEFORE_RETURNED, "host cancelled"]


def test_calling_a_poisoned_instance_fails_the_future() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)

        def bad(_t: Thread) -> Suspends[None]:
            raise Trap("first call traps")
            yield from ()

        with pytest.raises(Trap, match="first call traps"):
            await driver.run(stackful(inst, bad), [])
        fut = driver.call(stackful(inst, bad), [])
        with pytest.raises(Trap, match="cannot enter component instance"):
            await fut

    asyncio.run(main())


def test_host_func_inst_plain_and_coroutine() -> None:
    async def main() -> list[Any]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        out = []

        async def double(x: int) -> int:
            await asyncio.sleep(0.001)
            return x * 2

        for fn in (lambda x: x + 1, double):
            inst = InstanceState(store)
            fi = driver.host_func_inst(fn, name="test:pkg/i#f", has_result=True)
            lower = py_lowered(fi, ft=ASYNC_FT)

            def body(thread: Thread, lower: Any = lower) -> Suspends[None]:
                r = yield from canon_lower(lower, thread, [3])
                do_return(thread, r[0])

            lf = py_lifted(
                inst, lambda t, a, b=body: _run_body(b, t), result=U32, is_async=True, async_=True
            )
            out.append(await driver.run(lf, []))
        return out

    assert asyncio.run(main()) == [[4], [6]]


def _run_body(body: Any, thread: Thread) -> Suspends[list[CoreVal]]:
    yield from body(thread)
    return []


def test_host_func_inst_failure_traps_naming_the_import() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)

        async def broken(_x: int) -> int:
            await asyncio.sleep(0)
            raise KeyError("nope")

        inst = InstanceState(store, name="caller")
        fi = driver.host_func_inst(broken, name="test:pkg/i#broken", has_result=True)
        lower = py_lowered(fi, ft=ASYNC_FT)

        def body(thread: Thread) -> Suspends[None]:
            yield from canon_lower(lower, thread, [3])

        with pytest.raises(Trap, match=r"host import test:pkg/i#broken raised KeyError") as info:
            await driver.run(stackful(inst, body), [])
        assert isinstance(info.value.__cause__, KeyError)
        assert inst.poisoned is not None

    asyncio.run(main())


def test_host_func_inst_cancellation_is_deferred_then_resolves_cancelled() -> None:
    async def main() -> list[object]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        seen: list[object] = []

        async def forever(_x: int) -> int:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                seen.append("host saw CancelledError")
                raise
            return 0

        fi = driver.host_func_inst(forever, name="test:pkg/i#forever", has_result=True)
        lower = py_lowered(fi, ft=ASYNC_FT, async_=True)
        mem = BytearrayMemory(64)

        def body(thread: Thread) -> Suspends[None]:
            st = (yield from canon_lower(lower, thread, [1]))[0]
            assert isinstance(st, int)
            await_started = yield from canon_subtask_cancel(thread, True, st >> 4)
            seen.append(("cancel returned", await_started[0]))
            ws = canon_waitable_set_new(thread)[0]
            assert isinstance(ws, int)
            canon_waitable_join(thread, st >> 4, ws)
            yield from canon_waitable_set_wait(thread, False, mem, ws, 0)
            seen.append(struct.unpack_from("<II", mem.buf, 0)[1])

        await asyncio.wait_for(driver.run(stackful(inst, body), []), 2.0)
        return seen

    assert asyncio.run(main()) == [
        ("cancel returned", 0xFFFF_FFFF),
        "host saw CancelledError",
        Subtask.State.CANCELLED_BEFORE_RETURNED,
    ]


def _cancel_then_wait(lower: Any, mem: BytearrayMemory, seen: list[object]) -> Any:
    """A stackful body: start the call, cancel it (async form), report, then wait for it."""

    def body(thread: Thread) -> Suspends[None]:
        st = (yield from canon_lower(lower, thread, [1]))[0]
        assert isinstance(st, int) and st & 0xF == Subtask.State.STARTED
        got = yield from canon_subtask_cancel(thread, True, st >> 4)
        seen.append(("cancel returned", got[0]))
        if got[0] == 0xFFFF_FFFF:
            ws = canon_waitable_set_new(thread)[0]
            assert isinstance(ws, int)
            canon_waitable_join(thread, st >> 4, ws)
            yield from canon_waitable_set_wait(thread, False, mem, ws, 0)
            seen.append(("event", struct.unpack_from("<II", mem.buf, 0)[1]))

    return body


@pytest.mark.parametrize("mode", ["discard", "abort"])
def test_host_func_inst_discard_resolves_at_once_and_stops_counting(mode: str) -> None:
    async def main() -> tuple[list[object], list[str]]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        seen: list[object] = []
        log: list[str] = []
        release = asyncio.Event()

        async def slow(_x: int) -> int:
            try:
                await release.wait()
            except asyncio.CancelledError:
                log.append("cancelled")
                raise
            log.append("finished")
            return 0

        fi = driver.host_func_inst(
            slow,
            name="test:pkg/i#slow",
            has_result=True,
            cancel=mode,  # type: ignore[arg-type]
        )
        lower = py_lowered(fi, ft=ASYNC_FT, async_=True)
        body = _cancel_then_wait(lower, BytearrayMemory(64), seen)

        def counted(thread: Thread) -> Suspends[None]:
            yield from body(thread)
            seen.append(("pending host work", store.host_pending))

        await asyncio.wait_for(driver.run(stackful(inst, counted), []), 2.0)
        release.set()
        for _ in range(5):
            await asyncio.sleep(0)
        return seen, log

    seen, log = asyncio.run(main())
    assert seen == [
        ("cancel returned", Subtask.State.CANCELLED_BEFORE_RETURNED),
        ("pending host work", 0),
    ]
    assert log == (["finished"] if mode == "discard" else ["cancelled"])


def test_host_func_inst_ignore_runs_to_completion() -> None:
    async def main() -> list[object]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        seen: list[object] = []

        async def slow(x: int) -> int:
            await asyncio.sleep(0.001)
            return x + 1

        fi = driver.host_func_inst(slow, name="test:pkg/i#slow", has_result=True, cancel="ignore")
        lower = py_lowered(fi, ft=ASYNC_FT, async_=True)
        await asyncio.wait_for(
            driver.run(stackful(inst, _cancel_then_wait(lower, BytearrayMemory(64), seen)), []),
            2.0,
        )
        return seen

    assert asyncio.run(main()) == [
        ("cancel returned", 0xFFFF_FFFF),
        ("event", Subtask.State.RETURNED),
    ]


def test_host_coroutine_that_does_not_suspend_settles_inside_the_call() -> None:
    async def main() -> list[object]:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store)
        seen: list[object] = []

        async def ready(x: int) -> int:
            seen.append(("current task is its own", asyncio.current_task() is not outer))
            return x * 10

        outer = asyncio.current_task()
        fi = driver.host_func_inst(ready, name="test:pkg/i#ready", has_result=True)
        lower = py_lowered(fi, ft=ASYNC_FT, async_=True)

        def body(thread: Thread) -> Suspends[None]:
            st = (yield from canon_lower(lower, thread, [4]))[0]
            seen.append(("state", st, "pending host work", store.host_pending))

        await driver.run(stackful(inst, body), [])
        return seen

    assert asyncio.run(main()) == [
        ("current task is its own", True),
        ("state", Subtask.State.RETURNED, "pending host work", 0),
    ]


def test_host_coroutine_raising_at_once_traps_naming_the_import() -> None:
    async def main() -> None:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        inst = InstanceState(store, name="caller")

        async def broken(_x: int) -> int:
            raise Trap("no disk", code="disk")

        fi = driver.host_func_inst(broken, name="test:pkg/i#broken", has_result=True)
        lower = py_lowered(fi, ft=ASYNC_FT)

        def body(thread: Thread) -> Suspends[None]:
            yield from canon_lower(lower, thread, [3])

        with pytest.raises(Trap, match=r"^host import test:pkg/i#broken trapped: no disk") as info:
            await driver.run(stackful(inst, body), [])
        assert info.value.code == "disk"
        assert isinstance(info.value.__cause__, Trap)
        assert inst.poisoned is not None

    asyncio.run(main())


def test_host_coroutine_without_an_event_loop_must_finish_at_once() -> None:
    store = Store(SchedulePolicy(None))
    driver = Driver(store)
    inst = InstanceState(store)

    async def ready(x: int) -> int:
        return x + 1

    fi = driver.host_func_inst(ready, name="test:pkg/i#ready", has_result=True)
    lower = py_lowered(fi, ft=SYNC_FT)

    def body(thread: Thread, args: list[Any]) -> Suspends[list[CoreVal]]:
        return (yield from canon_lower(lower, thread, [args[0]]))

    lf = py_lifted(inst, body, params=(U32,), result=U32)
    assert run_to_completion(lf, [6]) == [7]


def test_a_wake_reaches_the_runner_whenever_it_sleeps_or_is_gone() -> None:
    # wakes while the runner is scheduled or running need no call (store.on_wake is
    # None then), but one must always reach a sleeping runner, or start a new one
    async def main() -> list[Any] | None:
        store = Store(SchedulePolicy(None))
        driver = Driver(store)
        assert store.on_wake is not None  # no runner yet: a wake starts one
        inst = InstanceState(store, name="guest")
        go: list[bool] = []

        def g(thread: Thread, _args: list[CoreVal]) -> Suspends[list[CoreVal]]:
            yield from thread.wait_until(lambda: bool(go), cancellable=False, notified=False)
            do_return(thread, 7)
            return []

        store.begin_host_work()  # the host may still act: no deadlock meanwhile
        call = driver.call(
            py_lifted(inst, g, params=(U32,), result=U32, is_async=True, async_=True), [0]
        )
        for _ in range(3):
            await asyncio.sleep(0)
        assert not call.done()
        assert store.on_wake is not None  # the runner sleeps: a wake must reach it
        go.append(True)
        store.wake()
        assert store.on_wake is None  # scheduled: further wakes have nothing to do
        store.wake()
        res = await call
        store.end_host_work()
        for _ in range(3):
            await asyncio.sleep(0)
        assert store.on_wake is not None  # asleep or gone again
        return res

    assert asyncio.run(main()) == [7]
